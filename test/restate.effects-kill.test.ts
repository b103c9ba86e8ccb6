// Session effects on Restate survive SIGKILLs of the endpoint (issue 24 item 5): the
// endpoint process is killed 10 times at random moments of a flow whose effects run in an
// effect service; the flow completes and each effect's model call (inside ctx.run) was
// made once. The model calls are counted in a file the endpoint appends to.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRestateRolebox,
  freePort,
  type LocalRestateServer,
  startLocalRestateServer,
} from '../src/restate/index.js';
import { plainEffectIds } from './support/effect-ids.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS, track } from './support/processes.js';
import { restateUnavailable } from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate effect kill test: ${unavailable}`);
const root = join(import.meta.dirname, '..');
const child = join(import.meta.dirname, 'support', 'restate-effect-endpoint.ts');
const KILLS = 10;

/** A small seeded generator (mulberry32): the kill moments are the same every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe.skipIf(unavailable !== undefined)('session effects on Restate: SIGKILLed endpoint', () => {
  let server: LocalRestateServer;
  let dir: string;
  let port: number;
  let calls: string;
  let endpoint: ChildProcess | undefined;

  /** Starts the endpoint process on the port; resolves once it listens. */
  const startEndpoint = async () => {
    const started = track(
      spawn(
        process.execPath,
        ['--import', 'tsx', '--conditions=rolebox-source', child, String(port), calls],
        {
          cwd: root,
          stdio: ['ignore', 'pipe', 'ignore'],
        },
      ),
    );
    endpoint = started;
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: started.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (line.includes('"listening"')) resolve();
      });
      started.on('exit', (code, signal) => reject(new Error(`endpoint ended (${code ?? signal})`)));
    });
  };
  const killEndpoint = async () => {
    const killed = endpoint;
    if (!killed || killed.exitCode !== null || killed.signalCode !== null) return;
    const exited = new Promise((resolve) => killed.on('exit', resolve));
    killed.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rolebox-effects-kill-'));
    calls = join(dir, 'calls.txt');
    server = await startLocalRestateServer({
      // Retries come quickly, and never run out: on a loaded machine an endpoint killed
      // again and again (each restart takes seconds) would spend the server's default 70
      // attempts on one invocation, which Restate then pauses, and the flow would hang.
      env: {
        RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL: '500ms',
        RESTATE_DEFAULT_RETRY_POLICY__MAX_ATTEMPTS: '1000000',
      },
    });
    port = await freePort();
    await startEndpoint();
    await server.register(`http://127.0.0.1:${port}`);
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await killTracked();
    await server?.stop();
    if (server) rmSync(server.baseDir, { recursive: true, force: true });
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    `completes the flow with each effect's model call made once, the endpoint killed ${KILLS} times`,
    async () => {
      const random = seeded(24);
      const client = createRestateRolebox({ ingressUrl: server.ingressUrl });
      let kills = 0;
      let flowDone = false;
      // The killer: SIGKILL at a random moment, start again at once, KILLS times.
      const killer = (async () => {
        while (kills < KILLS) {
          await new Promise((resolve) => setTimeout(resolve, 50 + random() * 400));
          await killEndpoint();
          kills += 1;
          await startEndpoint();
        }
      })();
      const flow = (async () => {
        for (let pass = 0; pass < 3; pass++) {
          const id = `K${pass}`;
          const session = await client.openSession({ id });
          await session.send({
            type: 'session_started',
            availableSkills: [{ name: 'write' }],
            initialSkill: 'write',
          });
          await session.send({ type: 'user_submitted_input', text: 'a poem' });
          await expect
            .poll(async () => (await session.view()).waitingReason?.kind, {
              timeout: 60_000,
              interval: 100,
            })
            .toBe('approve_step');
          await session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
          await expect
            .poll(async () => (await session.view()).waitingReason?.kind, {
              timeout: 60_000,
              interval: 100,
            })
            .toBe('worker_questions');
          expect((await session.view()).pendingEffects).toEqual([]);
        }
        flowDone = true;
      })();
      await Promise.all([killer, flow]);
      expect(flowDone).toBe(true);
      expect(kills).toBe(KILLS);
      const made = plainEffectIds(readFileSync(calls, 'utf8').trim().split('\n')).sort();
      // Each effect (the main agent's e1, the worker's e2, per session) called its model once.
      expect(made).toEqual(['K0:e1', 'K0:e2', 'K1:e1', 'K1:e2', 'K2:e1', 'K2:e2']);
    },
    5 * PROCESS_TEST_TIMEOUT_MS,
  );
});
