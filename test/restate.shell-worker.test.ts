// The built-in shell worker on Restate (DESIGN §8), through a real restate-server: a round
// that is cancelled (a loop stopped now, an operator's cancel, a round timeout) kills its
// process group and descendants as the embedded command dispatcher does, and so does
// stopping `rolebox restate serve`. Every check is on real processes: the task's pid file,
// the processes marked with its ROLEBOX_TASK_ID, and a unique marker in the command line.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { taskProcesses } from '../src/adapters/command-dispatcher.js';
import {
  createRestateRolebox,
  freePort,
  type LocalRestateServer,
  type RestateRolebox,
  SHELL_WORKER_NAME,
  serveRoleboxOnRestate,
  shellCommandWorker,
  startLocalRestateServer,
} from '../src/restate/index.js';
import { startCli } from './support/cli.js';
import { killTaskGroups, killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { queryServer, restateUnavailable, untilServer } from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate shell worker tests: ${unavailable}`);

/**
 * The round timeout of the cancel tests: far beyond how long a cancel may take to kill a
 * round, so that the command dispatcher's own timeout (the same) cannot pass for it.
 */
const ROUND_TIMEOUT_MS = 60_000;
/** How long a cancelled round may take to be gone: the kill's grace, on a loaded machine. */
const KILLED_WITHIN_MS = 20_000;
/** The round timeout of the timeout test. */
const SHORT_ROUND_TIMEOUT_MS = 3_000;
/** Retries come quickly: a test that restarts its endpoint does not wait out a long backoff. */
const SERVER_ENV = { RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL: '1s' };

/** A command that hangs: a shell and its child, the shell's command line holding `marker`. */
const hangingCommand = (marker: string) => `cat > /dev/null; sleep 120; echo ${marker}`;

/**
 * The live processes whose command line holds `marker`: this process, and the `except`
 * ones (a `rolebox restate serve` given the command), excluded.
 */
function markedProcesses(marker: string, except: readonly (number | undefined)[] = []): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    if (except.includes(Number(entry))) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker))
        found.push(Number(entry));
    } catch {
      // Ended while we looked.
    }
  }
  return found;
}

/** Every live process of the tasks under `tasksDir`: its group (pid file) and its marked ones. */
function liveTaskProcesses(tasksDir: string): number[] {
  if (!existsSync(tasksDir)) return [];
  const found: number[] = [];
  for (const task of readdirSync(tasksDir)) {
    if (!/^t_/.test(task)) continue;
    const pidFile = join(tasksDir, task, 'pid');
    const pgid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : undefined;
    found.push(...(taskProcesses(task, pgid) ?? []));
  }
  return found;
}

/** Waits until the round's command runs: a task claimed, its `sleep` alive. */
async function untilRunning(tasksDir: string, marker: string): Promise<void> {
  await untilServer(
    async () => markedProcesses(marker).length > 0 && liveTaskProcesses(tasksDir).length >= 2,
    `the command marked ${marker} running`,
  );
}

/**
 * Waits until nothing of the tasks under `tasksDir` nor anything marked `marker` is alive;
 * fails after {@link KILLED_WITHIN_MS}.
 */
async function untilNoneLeft(tasksDir: string, marker: string): Promise<void> {
  await untilServer(
    async () => markedProcesses(marker).length === 0 && liveTaskProcesses(tasksDir).length === 0,
    `no process of the rounds marked ${marker} left`,
    KILLED_WITHIN_MS / 50,
  );
}

/** A restate-server with an in-process endpoint serving the shell worker with `command`. */
async function startShellRig(command: string, roundTimeoutMs: number) {
  const tasksDir = join(scratch('rolebox-restate-shell-'), 'tasks');
  const server = await startLocalRestateServer({ env: SERVER_ENV });
  const endpoint = await serveRoleboxOnRestate({
    limits: { interRoundDelayMs: 0, roundTimeoutMs },
    workers: { service: SHELL_WORKER_NAME },
    services: [shellCommandWorker({ command, tasksDir })],
  }).listen(0);
  await server.register(endpoint.url);
  return {
    tasksDir,
    server,
    client: createRestateRolebox({ ingressUrl: server.ingressUrl }),
    stop: async () => {
      await endpoint.close();
      await server.stop();
      killTaskGroups(tasksDir);
    },
  };
}

const scratchDirs: string[] = [];
const scratch = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratchDirs.push(dir);
  return dir;
};

afterEach(async () => {
  await killTracked();
});

afterAll(() => {
  for (const dir of scratchDirs.splice(0)) {
    killTaskGroups(join(dir, 'tasks'));
    rmSync(dir, { recursive: true, force: true });
  }
});

describe.skipIf(unavailable !== undefined)('rolebox on Restate: the shell worker', () => {
  let rig: Awaited<ReturnType<typeof startShellRig>>;
  let server: LocalRestateServer;
  let client: RestateRolebox;
  let tasksDir: string;
  const marker = `rolebox-hang-${randomUUID()}`;

  beforeAll(async () => {
    rig = await startShellRig(hangingCommand(marker), ROUND_TIMEOUT_MS);
    ({ server, client, tasksDir } = rig);
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    'a loop stopped now kills its round: the shell and its child are gone',
    async () => {
      const session = await client.openSession({ id: 'stop-now' });
      expect((await session.startLoop('|loop:2| hang')).ok).toBe(true);
      await untilRunning(tasksDir, marker);
      await session.stopLoop({ now: true });
      expect((await session.view()).loop?.phase).toBe('cancelled');
      await untilNoneLeft(tasksDir, marker);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "an operator's cancel of the worker run kills its round, and the loop ends interrupted",
    async () => {
      const session = await client.openSession({ id: 'operator-cancel' });
      expect((await session.startLoop('|loop:2| hang')).ok).toBe(true);
      await untilRunning(tasksDir, marker);
      const [run] = await queryServer(
        server,
        `SELECT id FROM sys_invocation WHERE target_service_name = '${SHELL_WORKER_NAME}' AND status != 'completed'`,
      );
      expect(run?.id).toBeTypeOf('string');
      const cancelled = await fetch(`${server.adminUrl}/invocations/${run?.id}/cancel`, {
        method: 'PATCH',
      });
      expect(cancelled.status).toBeLessThan(300);
      await untilServer(
        async () => (await session.view()).loop?.phase === 'interrupted',
        'the loop of operator-cancel interrupted',
      );
      await untilNoneLeft(tasksDir, marker);
      expect((await session.view()).loop?.rounds.map((round) => round.status)).toEqual([
        'cancelled',
      ]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    '`{}` to the shell worker is a 400 with the rolebox code, not retried',
    async () => {
      const response = await fetch(`${server.ingressUrl}/${SHELL_WORKER_NAME}/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
        signal: AbortSignal.timeout(20_000),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        metadata: { 'rolebox-code': 'invalid_argument' },
      });
      const retrying = await queryServer(
        server,
        `SELECT id, status FROM sys_invocation WHERE target_service_name = '${SHELL_WORKER_NAME}' AND status != 'completed'`,
      );
      expect(retrying).toEqual([]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe.skipIf(unavailable !== undefined)(
  'rolebox on Restate: a shell round that times out',
  () => {
    it(
      'a round that times out is killed, and the loop ends with the reason',
      async () => {
        const marker = `rolebox-timeout-${randomUUID()}`;
        const rig = await startShellRig(hangingCommand(marker), SHORT_ROUND_TIMEOUT_MS);
        try {
          const { client, tasksDir } = rig;
          const session = await client.openSession({ id: 'time-out' });
          expect((await session.startLoop('|loop:2| hang')).ok).toBe(true);
          await untilRunning(tasksDir, marker);
          // The round timeout is a delayed call fired by Restate's timer: wait for it.
          await untilServer(
            async () => {
              const phase = (await session.view()).loop?.phase;
              return phase !== undefined && phase !== 'awaiting_worker' && phase !== 'dispatching';
            },
            'the round of time-out timed out',
            (SHORT_ROUND_TIMEOUT_MS + KILLED_WITHIN_MS) / 50,
          );
          const { loop } = await session.view();
          expect(loop?.rounds.map((round) => round.status)).toEqual(['cancelled']);
          expect(loop?.errorReason).toMatch(/timeout/);
          await untilNoneLeft(tasksDir, marker);
        } finally {
          await rig.stop();
        }
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  },
);

describe.skipIf(unavailable !== undefined)('rolebox restate serve with a shell worker', () => {
  it(
    'SIGTERM kills the rounds it runs; started again, their loop ends interrupted (no round runs twice)',
    async () => {
      const dir = scratch('rolebox-restate-serve-stop-');
      const tasksDir = join(dir, 'tasks');
      const marker = `rolebox-serve-hang-${randomUUID()}`;
      const server = await startLocalRestateServer({ env: SERVER_ENV });
      try {
        const port = await freePort();
        const args = [
          'restate',
          'serve',
          '--port',
          String(port),
          '--worker',
          hangingCommand(marker),
          '--tasks',
          tasksDir,
          '--delay',
          '0',
          '--register',
          server.adminUrl,
        ];
        const first = startCli(args, { cwd: dir });
        await first.line(/registered/);
        const client = createRestateRolebox({ ingressUrl: server.ingressUrl });
        const session = await client.openSession({ id: 'serve-stop' });
        expect((await session.startLoop('|loop:2| hang')).ok).toBe(true);
        await untilRunning(tasksDir, marker);
        const tasks = readdirSync(tasksDir).filter((task) => /^t_/.test(task));
        expect(tasks).toHaveLength(1);
        first.process.kill('SIGTERM');
        expect(await first.exited).toBe(0);
        // Nothing of the round is left once serve has exited.
        expect(markedProcesses(marker)).toEqual([]);
        expect(liveTaskProcesses(tasksDir)).toEqual([]);

        const second = startCli(args, { cwd: dir });
        await second.line(/registered/);
        await untilServer(
          async () => (await session.view()).loop?.phase === 'interrupted',
          'the loop of serve-stop interrupted',
        );
        // The retried worker found its task killed: the command did not run again.
        expect(readdirSync(tasksDir).filter((task) => /^t_/.test(task))).toEqual(tasks);
        expect(markedProcesses(marker, [second.process.pid])).toEqual([]);
        expect(liveTaskProcesses(tasksDir)).toEqual([]);
        second.process.kill('SIGTERM');
        expect(await second.exited).toBe(0);
      } finally {
        await killTracked();
        killTaskGroups(tasksDir);
        await server.stop();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
  it(
    'dev: SIGTERM kills the rounds it runs, and the server with it',
    async () => {
      const dir = scratch('rolebox-restate-dev-stop-');
      const tasksDir = join(dir, 'tasks');
      const marker = `rolebox-dev-hang-${randomUUID()}`;
      const dev = startCli(
        [
          'restate',
          'dev',
          '--base-dir',
          join(dir, 'restate'),
          '--tasks',
          tasksDir,
          '--worker',
          hangingCommand(marker),
          '--delay',
          '0',
        ],
        { cwd: dir },
      );
      try {
        const ingressUrl = (await dev.line(/^ingress: /)).replace(/^ingress: /, '').trim();
        const client = createRestateRolebox({ ingressUrl });
        const session = await client.openSession({ id: 'dev-stop' });
        expect((await session.startLoop('|loop:2| hang')).ok).toBe(true);
        await untilRunning(tasksDir, marker);
        dev.process.kill('SIGTERM');
        expect(await dev.exited).toBe(0);
        expect(markedProcesses(marker)).toEqual([]);
        expect(liveTaskProcesses(tasksDir)).toEqual([]);
        await expect(
          fetch(`${ingressUrl}/rolebox-session/dev-stop/view`, { method: 'POST' }),
        ).rejects.toThrow();
      } finally {
        await killTracked();
        const pidFile = join(dir, 'restate', 'restate-server.pid');
        if (existsSync(pidFile))
          try {
            process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGKILL');
          } catch {
            // Stopped with its dev, as it should be.
          }
        killTaskGroups(tasksDir);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
