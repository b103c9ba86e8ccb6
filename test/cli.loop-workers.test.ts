// Each loop's rounds run the worker that loop was started with, whichever process runs
// them: `rolebox loop` drives only the loop it started (other stored loops are left to
// `rolebox resume`), and `rolebox resume` runs each loop with its own worker. End to end
// through real processes; every worker appends a line to one file, so a round that ran
// twice, or with another loop's worker, shows.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CommandDispatcher } from '../src/adapters/command-dispatcher.js';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { runMcpCommand } from '../src/cli/commands/mcp.js';
import {
  LOOP_RUN_SLOT,
  loopRunIn,
  SESSION_LIMITS_SLOT,
  SESSION_WORKER_SLOT,
} from '../src/cli/loop-runs.js';
import { LoopWorkerDispatcher } from '../src/cli/loop-worker-dispatcher.js';
import { ownSessionsStore } from '../src/cli/own-sessions-store.js';
import { isRoleboxError } from '../src/errors.js';
import { createRolebox, MemorySnapshotStore } from '../src/index.js';
import { ROLEBOX_BIN, runCli, startCli } from './support/cli.js';
import {
  killTaskGroups,
  killTracked,
  PROCESS_TEST_TIMEOUT_MS,
  track,
} from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

let dir: string;
let runs: string;
const cli = (...args: string[]) => runCli(args, { cwd: dir, env: { RUNS: runs } });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-cli-workers-'));
  runs = join(dir, 'runs.log');
});

afterEach(async () => {
  await killTracked();
  killTaskGroups(join(dir, '.rolebox', 'tasks'));
  await rm(dir, { recursive: true, force: true });
});

/**
 * A worker that appends `<label> <loop id> <round>` to $RUNS (once per run) and answers.
 * With `gated`, it waits for the file `gate` in the working directory first; with `pause`,
 * it sleeps that many seconds.
 */
function worker(label: string, gated = false, pause = ''): string {
  const wait = `${gated ? 'while [ ! -f gate ]; do sleep 0.02; done; ' : ''}${pause ? `sleep ${pause}; ` : ''}`;
  return `cat > /dev/null; ${wait}echo "${label} $ROLEBOX_LOOP_ID $ROLEBOX_ROUND" >> "$RUNS"; echo "${label}-WORKER round $ROLEBOX_ROUND"`;
}

/** The lines of $RUNS, sorted (empty when no worker ran yet). */
function ran(): string[] {
  if (!existsSync(runs)) return [];
  return readFileSync(runs, 'utf8').trim().split('\n').filter(Boolean).sort();
}

/** `label loopId round` for each round, sorted as {@link ran} sorts. */
function expected(...rounds: [label: string, loopId: string, round: number][]): string[] {
  return rounds.map(([label, loopId, round]) => `${label} ${loopId} ${round}`).sort();
}

/** The session and loop a `rolebox loop` acknowledged on stderr. */
function acknowledged(stderr: string): { session: string; loop: string } {
  const match = /» session (s_\w+), loop (loop_\w+):/.exec(stderr);
  if (!match) throw new Error(`no acknowledgement in:\n${stderr}`);
  return { session: match[1] as string, loop: match[2] as string };
}

/** `text` as one shell word, nothing in it expanded. */
function quoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** Runs a shell pipeline in `dir` (its own process group, killed after the test). */
function pipeline(command: string): Promise<{ code: number; stderr: string; stdout: string }> {
  const child: ChildProcess = track(
    spawn('bash', ['-c', `set -o pipefail; ${command}`], {
      cwd: dir,
      env: { ...process.env, RUNS: runs },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ code: code ?? -1, stderr, stdout })),
  );
}

describe('a loop started while another stored loop is unfinished', () => {
  it("runs only its own rounds; resume runs the other's with that loop's own worker, each once", async () => {
    // Loop A: its reader stops after one line, so it leaves with exit 143 after round 1,
    // its round 2 still to come.
    const a = await pipeline(
      `node ${quoted(ROLEBOX_BIN)} loop "|loop:3| task A" --worker ${quoted(worker('A'))} --delay 2000 | head -1`,
    );
    expect(a.code, a.stderr).toBe(143);
    expect(a.stdout).toMatch(/^\[loop-progress loop started: 3 rounds/);
    const loopA = acknowledged(a.stderr);
    expect(ran()).toEqual(expected(['A', loopA.loop, 1]));

    // Loop B, in another session of the same store, outlasting A's delay: its worker runs
    // B's round only, and A's round 2 waits for `rolebox resume`.
    const b = await cli('loop', '|loop:1| task B', '--worker', worker('B', false, '2.5'));
    expect(b.code, b.stderr).toBe(0);
    const loopB = acknowledged(b.stderr);
    expect(b.stderr).not.toMatch(/round 2\/1/);
    expect(b.stdout).toContain('[loop-progress loop complete]');
    expect(b.stdout).not.toContain('A-WORKER');
    expect(ran()).toEqual(expected(['A', loopA.loop, 1], ['B', loopB.loop, 1]));
    expect(b.stderr).toContain(
      '» 1 other stored loop is unfinished; `rolebox resume` goes on with it',
    );
    const status = (await cli('status')).stdout;
    expect(status).toMatch(new RegExp(`${loopA.loop} \\w+ 2/3`));
    expect(status).toMatch(new RegExp(`${loopB.loop} complete 1/1`));

    // A new loop in loop A's session is refused: that session's loop is resume's.
    const taken = await cli(
      'loop',
      '|loop:1| task C',
      '--worker',
      worker('C'),
      '--session',
      loopA.session,
    );
    expect(taken.code).toBe(2);
    expect(taken.stderr).toContain(
      `rolebox: session "${loopA.session}" already runs loop "${loopA.loop}", unfinished; \`rolebox resume\` goes on with it (or pass another --session) [invalid_argument]`,
    );
    expect((await cli('status')).stdout).toBe(status);

    // Resume: A's rounds 2 and 3 run A's worker, once each; B is not run again. A --worker
    // given to resume does not replace the one a loop was started with.
    const resumed = await cli('resume', '--worker', worker('WRONG'));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(ran()).toEqual(
      expected(
        ['A', loopA.loop, 1],
        ['B', loopB.loop, 1],
        ['A', loopA.loop, 2],
        ['A', loopA.loop, 3],
      ),
    );
    expect(resumed.stderr).toContain(`» worker: ${worker('A')} · delay between rounds: 2 s`);
    expect(resumed.stdout).toContain('A-WORKER round 3');
    expect(resumed.stdout).not.toContain('B-WORKER');
    expect(resumed.stderr).toContain(
      `» loop ${loopA.loop} keeps the worker it was started with (${worker('A')}); --worker is for loops whose own is not recorded`,
    );
    expect((await cli('status')).stdout).toMatch(new RegExp(`${loopA.loop} complete 3/3`));
  });
});

describe('rolebox resume with two unfinished loops', () => {
  it('runs each loop with the worker it was started with, every round once', async () => {
    const started: { session: string; loop: string }[] = [];
    // Started with different round timeouts too: the process has one, and says which.
    for (const [label, timeout] of [
      ['A', '60000'],
      ['B', '120000'],
    ]) {
      const child = startCli(
        [
          'loop',
          `|loop:2| task ${label}`,
          '--worker',
          worker(label as string, true),
          '--delay',
          '0',
          '--round-timeout',
          timeout as string,
        ],
        { cwd: dir, env: { RUNS: runs } },
      );
      await child.line(/» round 1\/2 running/);
      child.process.kill('SIGTERM');
      expect(await child.exited).toBe(143);
      started.push(acknowledged(child.stderr()));
    }
    const [loopA, loopB] = started as [(typeof started)[0], (typeof started)[0]];
    expect(ran()).toEqual([]);
    await writeFile(join(dir, 'gate'), '');

    const resumed = await cli('resume');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(ran()).toEqual(
      expected(
        ['A', loopA.loop, 1],
        ['A', loopA.loop, 2],
        ['B', loopB.loop, 1],
        ['B', loopB.loop, 2],
      ),
    );
    expect(resumed.stderr).toContain(
      '» workers: each loop its own (2 commands) · delay between rounds: 0 ms · round timeout: 2 min',
    );
    expect(resumed.stderr).toContain(
      '» the loops were started with different --round-timeout (1 min, 2 min); all of them go on with the longest, 2 min (pass --round-timeout to choose)',
    );
    for (const [label, { loop }] of [
      ['A', loopA],
      ['B', loopB],
    ] as const) {
      expect(resumed.stderr).toMatch(
        new RegExp(
          `» resuming loop ${loop} in session s_\\w+: round 1/2, \\w+ · worker: .*${label}-WORKER`,
        ),
      );
    }
    const status = (await cli('status')).stdout;
    expect(status).toMatch(new RegExp(`${loopA.loop} complete 2/2`));
    expect(status).toMatch(new RegExp(`${loopB.loop} complete 2/2`));
  });
});

/**
 * A store as rolebox wrote it before the per-loop record: a session whose loop is
 * unfinished (its round 1 running), with the session's worker slot when `worker` is given.
 * Returns the session's and the loop's ids.
 */
async function olderStore(
  workerCommand: string,
  recordWorker: boolean,
): Promise<{ sessionId: string; loopId: string }> {
  const store = new SqliteSnapshotStore(join(dir, '.rolebox', 'state.db'));
  const rb = createRolebox({
    store,
    dispatcher: new CommandDispatcher({
      command: workerCommand,
      stateDir: join(dir, '.rolebox', 'tasks'),
      cwd: dir,
      env: { RUNS: runs },
    }),
    saveDebounceMs: 0,
  });
  await rb.start();
  const session = await rb.openSession();
  if (recordWorker) {
    session.setSlot(SESSION_WORKER_SLOT, workerCommand);
    session.setSlot(SESSION_LIMITS_SLOT, { delay: 0 });
  }
  const started = session.startLoop('|loop:2| older');
  if (!started.ok) throw new Error(started.reason);
  // Stored with its round 1 dispatched: that round's worker is the one it was started with.
  for (let i = 0; i < 2_000 && session.view().loop?.phase !== 'awaiting_worker'; i++)
    await new Promise((resolve) => setTimeout(resolve, 5));
  expect(session.view().loop?.phase).toBe('awaiting_worker');
  await rb.flush();
  await rb.stop();
  await store.close();
  return { sessionId: session.id, loopId: started.loopId };
}

describe('rolebox resume of a store written before the per-loop record', () => {
  it("uses the session's recorded worker", async () => {
    const { sessionId, loopId } = await olderStore(worker('OLD', true), true);
    await writeFile(join(dir, 'gate'), '');
    const resumed = await cli('resume');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(
      `» worker: ${worker('OLD', true)} · delay between rounds: 0 ms`,
    );
    expect(ran()).toEqual(expected(['OLD', loopId, 1], ['OLD', loopId, 2]));
    // `show` names the loop's worker from the session's record too.
    expect((await cli('show', sessionId)).stdout).toContain(`worker:    ${worker('OLD', true)}`);
  });

  it('refuses, changing nothing, when no worker is known; --worker runs it', async () => {
    const { loopId } = await olderStore(worker('API', true), false);
    const before = (await cli('status')).stdout;
    const refused = await cli('resume');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `rolebox: no worker command is recorded in "\\.rolebox/state\\.db" for loop ${loopId} \\(session s_\\w+, started by an earlier rolebox\\); pass --worker "<command>" \\[invalid_argument\\]`,
      ),
    );
    expect((await cli('status')).stdout).toBe(before);

    await writeFile(join(dir, 'gate'), '');
    const resumed = await cli('resume', '--worker', worker('GIVEN'), '--delay', '0');
    expect(resumed.code, resumed.stderr).toBe(0);
    // Round 1 was started by the API's dispatcher; round 2 runs the worker given.
    expect(ran()).toEqual(expected(['API', loopId, 1], ['GIVEN', loopId, 2]));
  });
});

describe('rolebox mcp on a store with an unfinished rolebox loop', () => {
  it('runs that loop with the worker it was started with, not its own --worker', async () => {
    // Absolute paths: the server runs in this process, whose directory is not `dir`.
    const gate = join(dir, 'gate');
    const labelled = (label: string) =>
      `cat > /dev/null; while [ ! -f ${quoted(gate)} ]; do sleep 0.02; done; echo "${label} $ROLEBOX_LOOP_ID $ROLEBOX_ROUND" >> ${quoted(runs)}`;
    const child = startCli(['loop', '|loop:2| task A', '--worker', labelled('A'), '--delay', '0'], {
      cwd: dir,
    });
    await child.line(/» round 1\/2 running/);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(143);
    const loopA = acknowledged(child.stderr());

    const stdin = new PassThrough();
    const said: string[] = [];
    const served = runMcpCommand(
      {
        store: join(dir, '.rolebox', 'state.db'),
        tasks: join(dir, '.rolebox', 'tasks'),
        worker: labelled('MCP'),
        inspect: false,
      },
      { out: (line) => said.push(line), err: (line) => said.push(line) },
      '1',
      { stdin, stdout: new PassThrough() },
    );
    // Round 1 ends; the server wakes the loop's session and runs round 2 (a minute at most:
    // a loaded machine is slow to start a server and its worker).
    await writeFile(gate, '');
    for (let i = 0; i < 6_000 && ran().length < 2; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    stdin.end();
    expect(await served).toBe(0);
    expect(ran(), said.join('\n')).toEqual(expected(['A', loopA.loop, 1], ['A', loopA.loop, 2]));
  });
});

describe('LoopWorkerDispatcher', () => {
  const input = (loopId: string) => ({
    loopId,
    round: 1,
    originSessionId: 's1',
    agent: 'default',
    prompt: 'p',
  });

  it('refuses a round of a loop it was given no worker for, starting nothing', async () => {
    const tasks = join(dir, 'tasks');
    const dispatcher = new LoopWorkerDispatcher({ stateDir: tasks });
    dispatcher.assign('loop_a', 'echo a');
    const error = await dispatcher.dispatchRound(input('loop_b'), 'loop_b:1').catch((e) => e);
    expect(isRoleboxError(error, 'invalid_argument')).toBe(true);
    expect((error as Error).message).toContain('no worker command is known here for loop "loop_b"');
    expect(existsSync(tasks)).toBe(false);
    dispatcher.close();
  });

  it('keeps the worker a loop was given first, and refuses an empty command', () => {
    const dispatcher = new LoopWorkerDispatcher({ stateDir: join(dir, 'tasks') });
    dispatcher.assign('loop_a', 'echo a');
    dispatcher.assign('loop_a', 'echo a'); // the same again is fine
    const other = (() => {
      try {
        dispatcher.assign('loop_a', 'echo b');
      } catch (error) {
        return error;
      }
    })();
    expect(isRoleboxError(other, 'invalid_argument')).toBe(true);
    expect((other as Error).message).toBe(
      'loop "loop_a" runs "echo a"; it cannot be given "echo b" too',
    );
    expect(dispatcher.workerOf('loop_a')).toBe('echo a');
    expect(() => dispatcher.assign('loop_c', ' ')).toThrow(/needs a shell command/);
    expect(dispatcher.workerOf('loop_c')).toBeUndefined();
    dispatcher.close();
  });

  it("runs each loop's rounds with that loop's command", async () => {
    const dispatcher = new LoopWorkerDispatcher({ stateDir: join(dir, 'tasks') });
    dispatcher.assign('loop_a', 'echo "a $ROLEBOX_LOOP_ID"');
    dispatcher.assign('loop_b', 'echo "b $ROLEBOX_LOOP_ID"');
    const results: string[] = [];
    for (const loopId of ['loop_a', 'loop_b']) {
      const task = await dispatcher.dispatchRound(input(loopId), `${loopId}:1`);
      await new Promise<void>((resolve) => {
        const stop = dispatcher.onTerminated(task.taskId, () => {
          stop();
          resolve();
        });
      });
      results.push((await dispatcher.getRoundResult(task.taskId)).text);
    }
    expect(results).toEqual(['a loop_a', 'b loop_b']);
    dispatcher.close();
  });
});

describe('ownSessionsStore', () => {
  it('reads the wake-ups of the sessions this process drives only', async () => {
    const store = new MemorySnapshotStore();
    await store.setWakeUps([
      { sessionId: 'mine', at: 10 },
      { sessionId: 'other', at: 5 },
    ]);
    const own = ownSessionsStore(store);
    expect(await own.loadWakeUps()).toEqual([]);
    own.drive('mine');
    expect(await own.loadWakeUps()).toEqual([{ sessionId: 'mine', at: 10 }]);
    // Everything else is the store's own.
    expect(own.immediate).toBe(store.immediate);
    expect((await store.loadWakeUps()).map((wakeUp) => wakeUp.sessionId).sort()).toEqual([
      'mine',
      'other',
    ]);
  });
});

describe('loopRunIn', () => {
  it("never gives one loop another loop's worker", () => {
    const slots = { [LOOP_RUN_SLOT]: { loopId: 'loop_1', worker: 'echo 1', delay: 5 } };
    expect(loopRunIn(slots, 'loop_1')).toEqual({ worker: 'echo 1', delay: 5, from: 'loop' });
    expect(loopRunIn(slots, 'loop_2')).toBeUndefined();
    // Even with an older session record beside it: that one is older still.
    expect(loopRunIn({ ...slots, [SESSION_WORKER_SLOT]: 'echo old' }, 'loop_2')).toBeUndefined();
    expect(loopRunIn({ [SESSION_WORKER_SLOT]: 'echo old' }, 'loop_2')).toEqual({
      worker: 'echo old',
      from: 'session',
    });
  });
});
