// startLocalRestateServer leaves nothing behind: a base dir it made itself goes with stop(),
// while kill() (a crash) keeps it, so a server restarted on it finds its state.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defineFunction } from '../src/index.js';
import {
  createRestateRolebox,
  serveRoleboxOnRestate,
  startLocalRestateServer,
} from '../src/restate/index.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { restateUnavailable } from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable !== undefined)
  console.log(`skipping the local restate-server tests: ${unavailable}`);

describe.skipIf(unavailable !== undefined)('a local restate-server', () => {
  it(
    'stop() removes the base dir it made; kill() keeps it for a restart; a given one is kept',
    async () => {
      const first = await startLocalRestateServer();
      expect(existsSync(first.baseDir)).toBe(true);
      await first.stop();
      expect(existsSync(first.baseDir)).toBe(false);

      const crashed = await startLocalRestateServer();
      await crashed.kill();
      expect(existsSync(crashed.baseDir)).toBe(true);
      const again = await startLocalRestateServer({ baseDir: crashed.baseDir });
      await again.stop();
      expect(existsSync(crashed.baseDir)).toBe(true); // given, so the caller's to remove
      await rm(crashed.baseDir, { recursive: true, force: true });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  const systemTmp = process.env.TMPDIR;
  afterEach(() => {
    if (systemTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = systemTmp;
  });

  it(
    "leaves no invoker-* folder in the system's temporary folder: they go in <baseDir>/.tmp, removed by stop() (issue 27 item 21)",
    async () => {
      // A temporary folder of this test's own, so other processes' servers cannot change the count.
      const privateTmp = await mkdtemp(join(tmpdir(), 'rolebox-tmpdir-test-'));
      process.env.TMPDIR = privateTmp;
      const invokers = (dir: string) =>
        existsSync(dir) ? readdirSync(dir).filter((name) => name.startsWith('invoker-')) : [];
      // The server makes them a moment after it is healthy (real time: it is a real process).
      const madeIn = async (dir: string) => {
        const deadline = Date.now() + 30_000;
        while (invokers(dir).length === 0 && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 100));
        return invokers(dir).length;
      };
      try {
        expect(tmpdir()).toBe(privateTmp);
        const before = invokers(tmpdir()).length;
        const server = await startLocalRestateServer();
        expect(server.tmpDir).toBe(join(server.baseDir, '.tmp'));
        expect(await madeIn(server.tmpDir)).toBeGreaterThan(0);
        await server.stop();
        expect(invokers(tmpdir()).length).toBe(before);

        // A given base dir is kept, its tmp folder is not.
        const given = await mkdtemp(join(privateTmp, 'given-'));
        const again = await startLocalRestateServer({ baseDir: given });
        expect(await madeIn(again.tmpDir)).toBeGreaterThan(0);
        await again.stop();
        expect(existsSync(given)).toBe(true);
        expect(existsSync(again.tmpDir)).toBe(false);
        expect(invokers(tmpdir()).length).toBe(before);
      } finally {
        await rm(privateTmp, { recursive: true, force: true });
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "with a request identity key, as the README says, the endpoint checks each request and the SDK's warning is gone (issue 27 item 20)",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'rolebox-identity-test-'));
      const keyFile = join(dir, 'restate-key.pem');
      const { privateKey } = generateKeyPairSync('ed25519');
      await writeFile(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
      const serverLog: string[] = [];
      const server = await startLocalRestateServer({
        env: { RESTATE_REQUEST_IDENTITY_PRIVATE_KEY_PEM_FILE: keyFile },
        onLog: (line) => serverLog.push(line),
      });
      const endpointLog: string[] = [];
      const answered = 'signal_observed(answer)';
      const served = serveRoleboxOnRestate({
        functions: [defineFunction({ name: 'approval', gate: answered, continue_until: answered })],
        logger: (_params, message, ...rest) => endpointLog.push([message, ...rest].join(' ')),
      });
      const kid = async () => {
        const deadline = Date.now() + 30_000;
        for (;;) {
          const found = serverLog
            .join('\n')
            .match(/Loaded request identity key kid="(publickeyv1_\w+)"/);
          if (found) return found[1] as string;
          if (Date.now() > deadline) throw new Error('the server logged no request identity key');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      served.endpoint.withIdentityV1(await kid());
      const endpoint = await served.listen(0);
      try {
        await server.register(endpoint.url);
        const session = await createRestateRolebox({ ingressUrl: server.ingressUrl }).openSession({
          id: 'signed-1',
        });
        await session.activate('approval');
        expect((await session.tool('|signal| type=need_approval')).text).toBe(
          'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request approval:r1',
        );
        expect(endpointLog.join('\n')).not.toContain('without validating request signatures');
        // A request that does not come from the server (no signature) is refused.
        const status = await new Promise<number>((resolve, reject) => {
          const client = connect(endpoint.url);
          client.on('error', reject);
          const request = client.request({ ':method': 'GET', ':path': '/discover' });
          request.on('response', (headers) => {
            resolve(Number(headers[':status']));
            client.close();
          });
          request.end();
        });
        expect(status).toBe(401);
      } finally {
        await endpoint.close();
        await server.stop();
        await rm(dir, { recursive: true, force: true });
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
