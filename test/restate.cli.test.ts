// `rolebox restate dev` and `serve` as a user runs them: a real restate-server from
// node_modules, the built-in shell worker, SIGTERM, and a second start on the same state.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRestateRolebox } from '../src/restate/index.js';
import { runCli, startCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { restateUnavailable, untilServer } from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate command tests: ${unavailable}`);

afterEach(killTracked);

describe.skipIf(unavailable !== undefined)('rolebox restate (the command)', () => {
  it(
    'dev starts a server, serves a shell worker, stops on SIGTERM, and starts again where it was',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rolebox-restate-dev-'));
      const args = [
        'restate',
        'dev',
        '--base-dir',
        join(dir, 'restate'),
        '--tasks',
        join(dir, 'tasks'),
        '--worker',
        'cat > /dev/null; echo "round $ROLEBOX_ROUND done"',
        '--delay',
        '0',
      ];
      const first = startCli(args, { cwd: dir });
      const ingressUrl = (await first.line(/^ingress: /)).replace(/^ingress: /, '').trim();
      const endpointLine = await first.line(/^rolebox: endpoint /);
      expect(first.stdout()).toMatch(
        /createRestateRolebox\(\{ ingressUrl: 'http:\/\/127\.0\.0\.1:\d+' \}\)/,
      );
      const rb = createRestateRolebox({ ingressUrl });
      const session = await rb.openSession({ id: 'cli-1' });
      expect((await session.startLoop('|loop:2| say hello')).ok).toBe(true);
      await untilServer(
        async () => (await session.view()).loop?.phase === 'complete',
        'the loop of cli-1 complete',
      );
      const { loop } = await session.view();
      expect(loop?.lastSummary).toBe('round 2 done');
      first.process.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      // The server went with it.
      await expect(
        fetch(`${ingressUrl}/rolebox-session/cli-1/view`, { method: 'POST' }),
      ).rejects.toThrow();

      const second = startCli(args, { cwd: dir });
      // The same ports: the deployment the server knows is the endpoint that serves it.
      expect((await second.line(/^ingress: /)).trim()).toBe(`ingress: ${ingressUrl}`);
      expect(await second.line(/^rolebox: endpoint /)).toBe(endpointLine);
      expect((await rb.session('cli-1').view()).loop?.rounds).toHaveLength(2);
      second.process.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'serve refuses a shell worker and a worker service at once, and bad numbers',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rolebox-restate-serve-'));
      const both = await runCli(
        ['restate', 'serve', '--port', '0', '--worker', 'echo', '--workers-service', 'w'],
        { cwd: dir },
      );
      expect(both.code).toBe(2);
      expect(both.stderr).toContain(
        'give --worker (a shell command run here) or --workers-service',
      );
      const port = await runCli(['restate', 'serve', '--processes', 'two'], { cwd: dir });
      expect(port.code).toBe(2);
      expect(port.stderr).toContain('expected a whole number');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
