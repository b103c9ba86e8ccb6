import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  isAlive as alive,
  type DispatchPoint,
  isGroupAlive,
  taskProcesses,
} from '../src/adapters/command-dispatcher.js';
import { describeValue } from '../src/errors.js';
import { createRolebox, type RoundInput, type TaskStatus } from '../src/index.js';
import { CommandDispatcher, type CommandDispatcherOptions } from '../src/node.js';
import { SimulatedClock } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import {
  killTaskGroups,
  killTracked,
  PROCESS_TEST_TIMEOUT_MS,
  track,
} from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const root = join(import.meta.dirname, '..');
const dispatchChild = join(import.meta.dirname, 'support', 'dispatch-child.ts');

const round = (prompt: string, extra: Partial<RoundInput> = {}): RoundInput => ({
  loopId: 'L1',
  round: 1,
  originSessionId: 'S',
  agent: 'default',
  prompt,
  ...extra,
});

function terminated(dispatcher: CommandDispatcher, taskId: string): Promise<TaskStatus> {
  return new Promise((resolve) => {
    const off = dispatcher.onTerminated(taskId, (status) => {
      off();
      resolve(status);
    });
  });
}

/** Waits until `condition` holds, re-checking as the event loop turns (no fixed sleep). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 4_000; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition never held');
}

/** Waits until a file exists and has content. */
async function fileAppears(path: string): Promise<string> {
  await until(() => existsSync(path) && readFileSync(path, 'utf8').trim() !== '');
  return readFileSync(path, 'utf8').trim();
}

describe('CommandDispatcher', () => {
  let dir: string;
  const dispatchers: CommandDispatcher[] = [];
  const make = (command: string, options: Omit<CommandDispatcherOptions, 'command'> = {}) => {
    const dispatcher = new CommandDispatcher({
      command,
      stateDir: options.stateDir ?? join(dir, 'state'),
      cwd: dir,
      orphanCheckMs: 100,
      ...options,
    });
    dispatchers.push(dispatcher);
    return dispatcher;
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-cmd-'));
  });
  afterEach(async () => {
    await killTracked();
    for (const dispatcher of dispatchers.splice(0)) dispatcher.close();
    // Every tasks folder a test used: a test that fails midway leaves its workers running.
    for (const tasksDir of ['state', 'shared-state']) killTaskGroups(join(dir, tasksDir));
    await rm(dir, { recursive: true, force: true });
  });

  it('runs the command with the prompt on stdin and takes the round text from stdout', async () => {
    const dispatcher = make('tr a-z A-Z');
    const prompt = 'hello $(touch pwned) `touch pwned2`; rm -rf / "quoted" \'single\'';
    const task = await dispatcher.dispatchRound(round(prompt), 'L1:1');
    expect(await terminated(dispatcher, task.taskId)).toBe('completed');
    expect(await dispatcher.getTaskStatus(task.taskId)).toBe('completed');
    expect(await dispatcher.getRoundResult(task.taskId)).toEqual({
      text: prompt.toUpperCase(),
      hadError: false,
      output: { bytes: prompt.length, keptBytes: prompt.length, truncated: false },
      ranMs: expect.any(Number),
    });
    // Nothing of the prompt was run by a shell.
    expect(existsSync(join(dir, 'pwned'))).toBe(false);
    expect(existsSync(join(dir, 'pwned2'))).toBe(false);
  });

  it('passes the round to the command in its environment', async () => {
    const dispatcher = make(
      'echo "$ROLEBOX_LOOP_ID/$ROLEBOX_ROUND/$ROLEBOX_ORIGIN_SESSION/$ROLEBOX_AGENT"',
    );
    const task = await dispatcher.dispatchRound(round('x', { round: 4, agent: 'critic' }), 'L1:4');
    await terminated(dispatcher, task.taskId);
    expect((await dispatcher.getRoundResult(task.taskId)).text).toBe('L1/4/S/critic');
  });

  it('reports a non-zero exit as an error with the exit code and the last stderr line', async () => {
    const dispatcher = make(
      'echo partial; echo "warming up" >&2; echo "model not found" >&2; exit 3',
    );
    const task = await dispatcher.dispatchRound(round('x'), 'L1:1');
    expect(await terminated(dispatcher, task.taskId)).toBe('error');
    expect(await dispatcher.getRoundResult(task.taskId)).toEqual({
      text: 'partial',
      hadError: true,
      errorReason: 'exit code 3: model not found',
      output: { bytes: 8, keptBytes: 8, truncated: false },
      ranMs: expect.any(Number),
    });
  });

  it('returns the same task for the same key, and runs it once', async () => {
    const dispatcher = make('echo run >> runs.txt; cat');
    const first = await dispatcher.dispatchRound(round('a'), 'L1:1');
    const again = await dispatcher.dispatchRound(round('a'), 'L1:1');
    expect(again).toEqual(first);
    const other = await dispatcher.dispatchRound(round('b', { round: 2 }), 'L1:2');
    expect(other.taskId).not.toBe(first.taskId);
    await Promise.all([terminated(dispatcher, first.taskId), terminated(dispatcher, other.taskId)]);
    expect((await readFile(join(dir, 'runs.txt'), 'utf8')).trim().split('\n')).toEqual([
      'run',
      'run',
    ]);
  });

  it('kills the whole process group of a hanging round on timeout', async () => {
    const clock = new SimulatedClock();
    const dispatcher = make('sleep 1000 & echo $! > child.pid; wait', { clock });
    const task = await dispatcher.dispatchRound(round('x', { timeoutMs: 30_000 }), 'L1:1');
    const childPid = Number(await fileAppears(join(dir, 'child.pid')));
    expect(alive(childPid)).toBe(true);
    expect(await dispatcher.getTaskStatus(task.taskId)).toBe('running');
    const ended = terminated(dispatcher, task.taskId);
    clock.advance(30_000);
    expect(await ended).toBe('error');
    expect(await dispatcher.getRoundResult(task.taskId)).toMatchObject({
      hadError: true,
      errorReason: 'timed out after 30000ms',
    });
    expect(alive(childPid)).toBe(false);
  });

  it('kills the process group on cancel, with SIGKILL when SIGTERM is ignored', async () => {
    const clock = new SimulatedClock();
    const dispatcher = make("trap '' TERM; sleep 1000 & echo $! > child.pid; wait", {
      clock,
      killGraceMs: 2_000,
    });
    const task = await dispatcher.dispatchRound(round('x'), 'L1:1');
    const childPid = Number(await fileAppears(join(dir, 'child.pid')));
    const ended = terminated(dispatcher, task.taskId);
    const wrapperPid = Number(await readFile(join(dir, 'state', task.taskId, 'pid'), 'utf8'));
    const cancelling = dispatcher.cancelRound(task.taskId);
    // The wrapper dies of SIGTERM; the rest of the group ignores it and lives on until the
    // grace period's SIGKILL.
    await until(() => !alive(wrapperPid));
    expect(isGroupAlive(wrapperPid)).toBe(true);
    expect(alive(childPid)).toBe(true);
    clock.advance(2_000);
    await cancelling;
    expect(await ended).toBe('cancelled');
    expect(alive(childPid)).toBe(false);
    expect(isGroupAlive(wrapperPid)).toBe(false);
    expect(await dispatcher.getRoundResult(task.taskId)).toEqual({
      text: '',
      hadError: true,
      errorReason: 'cancelled',
      output: { bytes: 0, keptBytes: 0, truncated: false },
    });
    // Cancelling again, or cancelling an unknown task, does nothing.
    await dispatcher.cancelRound(task.taskId);
    await dispatcher.cancelRound('t_never');
  });

  it('answers for tasks of an earlier process: finished while it was down, still running, never heard of', async () => {
    const stateDir = join(dir, 'shared-state');
    const before = make(
      'while [ ! -f "$ROLEBOX_TASK_ID.go" ]; do sleep 0.02; done; echo "finished $ROLEBOX_ROUND"',
      { stateDir },
    );
    const early = await before.dispatchRound(round('x'), 'L1:1');
    const late = await before.dispatchRound(round('x', { round: 2 }), 'L1:2');
    await writeFile(join(dir, `${early.taskId}.go`), '');
    await terminated(before, early.taskId);
    before.close(); // the first process is gone; its tasks are not

    const after = make('cat', { stateDir });
    expect(await after.getTaskStatus(early.taskId)).toBe('completed');
    expect(await after.getRoundResult(early.taskId)).toEqual({
      text: 'finished 1',
      hadError: false,
      output: { bytes: 11, keptBytes: 11, truncated: false },
      ranMs: expect.any(Number),
      // Started by the earlier process: the round spanned a restart.
      acrossRestart: true,
    });
    // Running once its wrapper has claimed it (pending until then).
    await fileAppears(join(stateDir, late.taskId, 'pid'));
    expect(await after.getTaskStatus(late.taskId)).toBe('running');
    expect(await after.getTaskStatus('t_unheardof')).toBe('unknown');
    // The key still maps to the running task: a restarted loop does not start it twice.
    expect(await after.dispatchRound(round('x', { round: 2 }), 'L1:2')).toEqual(late);
    // And it is told when the adopted task ends.
    const ended = terminated(after, late.taskId);
    await writeFile(join(dir, `${late.taskId}.go`), '');
    expect(await ended).toBe('completed');
    expect((await after.getRoundResult(late.taskId)).text).toBe('finished 2');
  });

  it('reports a task whose process died without an exit status as an error', async () => {
    const stateDir = join(dir, 'state');
    const first = make('sleep 1000', { stateDir });
    const task = await first.dispatchRound(round('x'), 'L1:1');
    first.close();
    const pid = Number(await fileAppears(join(stateDir, task.taskId, 'pid')));
    const second = make('cat', { stateDir });
    const ended = terminated(second, task.taskId);
    process.kill(-pid, 'SIGKILL');
    expect(await ended).toBe('error');
    expect(await second.getRoundResult(task.taskId)).toMatchObject({
      hadError: true,
      errorReason: 'worker process died without an exit status',
    });
  });

  it('refuses an empty command and results of unfinished or unknown tasks', async () => {
    expect(errorOf(() => new CommandDispatcher({ command: '  ' })).code).toBe('invalid_argument');
    const dispatcher = make('sleep 1000');
    const task = await dispatcher.dispatchRound(round('x'), 'L1:1');
    await expect(dispatcher.getRoundResult(task.taskId)).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(dispatcher.getRoundResult('t_unknown')).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(dispatcher.getTaskStatus('../etc')).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await dispatcher.cancelRound(task.taskId);
  });

  const runs = () =>
    existsSync(join(dir, 'runs.log'))
      ? readFileSync(join(dir, 'runs.log'), 'utf8').trim().split('\n')
      : [];
  /** Waits until no process of the task is left (the wrappers that lost a claim included). */
  const allGone = (taskId: string) => until(() => taskProcesses(taskId)?.length === 0);

  describe('runs a task key at most once, whatever dies where', () => {
    const worker = 'echo run >> runs.log; echo done';

    it.each(['before-key', 'before-spawn', 'after-spawn'] as const)(
      'the dispatcher dies at %s: another one adopts the key and the worker runs once',
      async (point: DispatchPoint) => {
        const stateDir = join(dir, 'state');
        const first = make(worker, {
          stateDir,
          onDispatchPoint: (at) => {
            if (at === point) throw new Error(`died at ${at}`);
          },
        });
        await expect(first.dispatchRound(round('x'), 'L1:1')).rejects.toThrow(`died at ${point}`);
        first.close();
        const second = make(worker, { stateDir });
        const task = await second.dispatchRound(round('x'), 'L1:1');
        expect(await terminated(second, task.taskId)).toBe('completed');
        expect(await second.getRoundResult(task.taskId)).toMatchObject({
          text: 'done',
          hadError: false,
        });
        await allGone(task.taskId);
        expect(runs()).toEqual(['run']);
      },
    );

    it.each(['before-key', 'before-spawn', 'after-spawn'] as const)(
      'a process SIGKILLed at %s: another one adopts the key and the worker runs once',
      async (point: DispatchPoint) => {
        const stateDir = join(dir, 'state');
        // Node itself with tsx as a loader: one process, so its SIGKILL is a real crash.
        const child = track(
          spawn(
            process.execPath,
            [
              '--import',
              'tsx',
              '--conditions=rolebox-source',
              dispatchChild,
              stateDir,
              dir,
              worker,
            ],
            {
              cwd: root,
              env: { ...process.env, DIE_AT: point },
              stdio: ['ignore', 'pipe', 'pipe'],
            },
          ),
        );
        let stderr = '';
        child.stderr?.on('data', (chunk) => (stderr += chunk));
        const [, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
          child.once('exit', (code, signal) => resolve([code, signal])),
        );
        expect({ signal, stderr }).toEqual({ signal: 'SIGKILL', stderr: '' });
        const second = make(worker, { stateDir });
        const task = await second.dispatchRound(round('x'), 'L1:1');
        expect(await terminated(second, task.taskId)).toBe('completed');
        await allGone(task.taskId);
        expect(runs()).toEqual(['run']);
      },
    );

    it('two dispatchers adopting a task nobody has claimed start it at once, and it runs once', async () => {
      // As a process killed after its key, before any wrapper claimed the task, leaves it;
      // with the temporary pid file of a wrapper killed just before its claim.
      const stateDir = join(dir, 'state');
      const taskId = 't_unclaimed';
      await mkdir(join(stateDir, 'keys'), { recursive: true });
      await mkdir(join(stateDir, taskId));
      await writeFile(
        join(stateDir, taskId, 'meta.json'),
        JSON.stringify({ taskId, key: 'L1:1', workerSessionId: taskId, startedAt: 0 }),
      );
      await writeFile(join(stateDir, taskId, 'prompt'), 'x');
      await writeFile(join(stateDir, taskId, 'pid.999999.tmp'), '999999');
      await writeFile(join(stateDir, 'keys', encodeURIComponent('L1:1')), taskId);
      const [a, b] = [make(worker, { stateDir }), make(worker, { stateDir })];
      const tasks = await Promise.all([
        a.dispatchRound(round('x'), 'L1:1'),
        b.dispatchRound(round('x'), 'L1:1'),
      ]);
      expect(tasks).toEqual([
        { taskId, workerSessionId: taskId },
        { taskId, workerSessionId: taskId },
      ]);
      expect(await Promise.all([terminated(a, taskId), terminated(b, taskId)])).toEqual([
        'completed',
        'completed',
      ]);
      await allGone(taskId);
      expect(runs()).toEqual(['run']);
    });

    it('a task whose wrapper has claimed it is never started again', async () => {
      const stateDir = join(dir, 'state');
      const gated = 'echo run >> runs.log; while [ ! -f go ]; do sleep 0.02; done; echo done';
      const first = make(gated, { stateDir });
      const task = await first.dispatchRound(round('x'), 'L1:1');
      await fileAppears(join(stateDir, task.taskId, 'pid'));
      await fileAppears(join(dir, 'runs.log'));
      first.close();
      const second = make(gated, { stateDir });
      expect(await second.dispatchRound(round('x'), 'L1:1')).toEqual(task);
      const ended = terminated(second, task.taskId);
      await writeFile(join(dir, 'go'), '');
      expect(await ended).toBe('completed');
      await allGone(task.taskId);
      expect(runs()).toEqual(['run']);
    });

    it('a wrapper SIGKILLed alone: running while its command lives, an error once the group is gone', async () => {
      const dispatcher = make('sleep 1000 & echo $! > child.pid; wait');
      const task = await dispatcher.dispatchRound(round('x'), 'L1:1');
      const childPid = Number(await fileAppears(join(dir, 'child.pid')));
      const wrapperPid = Number(await fileAppears(join(dir, 'state', task.taskId, 'pid')));
      const ended = terminated(dispatcher, task.taskId);
      process.kill(wrapperPid, 'SIGKILL');
      await until(() => !alive(wrapperPid));
      expect(alive(childPid)).toBe(true);
      expect(await dispatcher.getTaskStatus(task.taskId)).toBe('running');
      process.kill(-wrapperPid, 'SIGKILL');
      expect(await ended).toBe('error');
      expect(await dispatcher.getRoundResult(task.taskId)).toMatchObject({
        hadError: true,
        errorReason: 'worker process died without an exit status',
      });
    });
  });

  describe('descendants that left the process group', () => {
    // `setsid` puts the sleep in a session (and group) of its own; it still carries the
    // task's ROLEBOX_TASK_ID, which is how the dispatcher finds it.
    const escaped: number[] = [];
    afterEach(() => {
      for (const pid of escaped.splice(0)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already dead, as it should be.
        }
      }
    });

    it('die with the round on timeout', async () => {
      const clock = new SimulatedClock();
      const dispatcher = make(`setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' & wait`, {
        clock,
      });
      const task = await dispatcher.dispatchRound(round('x', { timeoutMs: 30_000 }), 'L1:1');
      const escapedPid = Number(await fileAppears(join(dir, 'escaped.pid')));
      escaped.push(escapedPid);
      const wrapperPid = Number(await fileAppears(join(dir, 'state', task.taskId, 'pid')));
      expect(isGroupAlive(escapedPid)).toBe(true);
      expect(escapedPid).not.toBe(wrapperPid);
      // The pid file is written just before `exec sleep`: while the exec runs, its
      // /proc/<pid>/environ can read empty for a moment.
      await until(() => taskProcesses(task.taskId, wrapperPid)?.includes(escapedPid) === true);
      const ended = terminated(dispatcher, task.taskId);
      clock.advance(30_000);
      expect(await ended).toBe('error');
      await until(() => !alive(escapedPid));
      expect(taskProcesses(task.taskId, wrapperPid)).toEqual([]);
    });

    it('die with the round on cancel, with SIGKILL when they ignore SIGTERM', async () => {
      const clock = new SimulatedClock();
      const dispatcher = make(
        `setsid sh -c 'trap "" TERM; echo $$ > escaped.pid; while :; do sleep 0.05; done' & wait`,
        { clock, killGraceMs: 2_000 },
      );
      const task = await dispatcher.dispatchRound(round('x'), 'L1:1');
      const escapedPid = Number(await fileAppears(join(dir, 'escaped.pid')));
      escaped.push(escapedPid);
      const wrapperPid = Number(await fileAppears(join(dir, 'state', task.taskId, 'pid')));
      let cancelled = false;
      const cancelling = dispatcher.cancelRound(task.taskId).then(() => (cancelled = true));
      await until(() => !isGroupAlive(wrapperPid));
      // The group is gone; the escaped shell ignored SIGTERM and keeps the cancel waiting.
      expect(alive(escapedPid)).toBe(true);
      expect(cancelled).toBe(false);
      clock.advance(2_000);
      await cancelling;
      expect(alive(escapedPid)).toBe(false);
      expect(taskProcesses(task.taskId, wrapperPid)).toEqual([]);
    });
  });

  describe('output', () => {
    const total = (count: number) => Array.from({ length: count }, (_, i) => `${i + 1}\n`).join('');
    const keptOnDisk = async (taskId: string, name: string) => {
      const size = async (file: string) => (existsSync(file) ? (await stat(file)).size : 0);
      const folder = join(dir, 'state', taskId);
      return (await size(join(folder, name))) + (await size(join(folder, `${name}.prev`)));
    };

    it('keeps the last maxOutputBytes of stdout and of stderr on disk and says how much there was', async () => {
      const cap = 64 * 1024;
      const dispatcher = make('seq 1 200000; seq 1 100000 >&2; exit 4', { maxOutputBytes: cap });
      const task = await dispatcher.dispatchRound(round('x'), 'L1:1');
      expect(await terminated(dispatcher, task.taskId)).toBe('error');
      const stdout = total(200_000);
      const result = await dispatcher.getRoundResult(task.taskId);
      expect(result).toMatchObject({
        hadError: true,
        errorReason: 'exit code 4: 100000',
        output: { bytes: stdout.length, truncated: true },
      });
      const kept = result.output?.keptBytes as number;
      expect(kept).toBeLessThanOrEqual(cap);
      expect(kept).toBeGreaterThanOrEqual(cap / 2);
      expect(result.text).toBe(stdout.slice(-kept).trimEnd());
      expect(await keptOnDisk(task.taskId, 'stdout')).toBe(kept);
      expect(await keptOnDisk(task.taskId, 'stderr')).toBeLessThanOrEqual(cap);
    });

    it('a loop records the facts in its round record', async () => {
      const cap = 64 * 1024;
      const dispatcher = make('head -c 1048576 /dev/zero | tr "\\0" a', { maxOutputBytes: cap });
      const rb = createRolebox({ dispatcher, limits: { interRoundDelayMs: 0 } });
      const finished = new Promise((resolve) => rb.on('loop_finished', resolve));
      await rb.start();
      const session = await rb.openSession({ id: 'S' });
      session.startLoop('|loop:1| write a lot');
      await finished;
      const loop = session.view().loop;
      expect(loop?.phase).toBe('complete');
      expect(loop?.rounds[0]?.output).toEqual({
        bytes: 1_048_576,
        keptBytes: cap,
        truncated: true,
      });
      expect(loop?.lastSummary).toBe('a'.repeat(8_000));
      await rb.stop();
    });

    it('keeps whole characters at the cut, and works with the smallest cap', async () => {
      // Cap 5: segments of 2 bytes; "aééé" (7 bytes) keeps its last 3, the first of which
      // is the second byte of an "é".
      const five = make('printf aééé', { maxOutputBytes: 5 });
      const a = await five.dispatchRound(round('x'), 'L1:1');
      expect(await terminated(five, a.taskId)).toBe('completed');
      expect(await five.getRoundResult(a.taskId)).toEqual({
        text: 'é',
        hadError: false,
        output: { bytes: 7, keptBytes: 3, truncated: true },
        ranMs: expect.any(Number),
      });
      const one = make('printf abc', { maxOutputBytes: 1 });
      const b = await one.dispatchRound(round('x', { round: 2 }), 'L1:2');
      expect(await terminated(one, b.taskId)).toBe('completed');
      expect(await one.getRoundResult(b.taskId)).toEqual({
        text: 'c',
        hadError: false,
        output: { bytes: 3, keptBytes: 1, truncated: true },
        ranMs: expect.any(Number),
      });
      expect(await keptOnDisk(b.taskId, 'stdout')).toBe(1);
    });

    it('stdout or stderr that cannot be read makes a round error naming the file and the cause', async () => {
      const dispatcher = make('echo fine; echo trouble >&2; exit 3');
      const task = await dispatcher.dispatchRound(round('x'), 'L1:1');
      expect(await terminated(dispatcher, task.taskId)).toBe('error');
      // A directory where a file should be: a fault that holds when the tests run as root.
      const folder = join(dir, 'state', task.taskId);
      await rm(join(folder, 'stderr'));
      await mkdir(join(folder, 'stderr'));
      expect(await dispatcher.getRoundResult(task.taskId)).toEqual({
        text: 'fine',
        hadError: true,
        errorReason: `exit code 3 (could not read worker output ${join(folder, 'stderr')}: EISDIR: illegal operation on a directory, read)`,
        output: { bytes: 5, keptBytes: 5, truncated: false },
        ranMs: expect.any(Number),
      });

      const ok = make('echo fine');
      const done = await ok.dispatchRound(round('x', { round: 2 }), 'L1:2');
      expect(await terminated(ok, done.taskId)).toBe('completed');
      const stdout = join(dir, 'state', done.taskId, 'stdout');
      await rm(stdout);
      await mkdir(stdout);
      expect(await ok.getRoundResult(done.taskId)).toEqual({
        text: '',
        hadError: true,
        errorReason: `could not read worker output ${stdout}: EISDIR: illegal operation on a directory, read`,
      });
    });

    it('refuses a maxOutputBytes that is not a whole number of bytes from 1 to 256 MiB', () => {
      for (const maxOutputBytes of [
        0,
        -1,
        1.5,
        Number.NaN,
        2 ** 28 + 1,
        '16' as unknown as number,
      ]) {
        const error = errorOf(() => new CommandDispatcher({ command: 'cat', maxOutputBytes }));
        expect(error.code).toBe('invalid_argument');
        expect(error.message).toContain(`got ${describeValue(maxOutputBytes)}`);
      }
      expect(
        () => new CommandDispatcher({ command: 'cat', maxOutputBytes: 2 ** 28 }),
      ).not.toThrow();
    });
  });
});
