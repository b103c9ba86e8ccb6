import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  CommandDispatcher,
  type RoundInput,
  SimulatedClock,
  type TaskStatus,
} from '../src/index.js';
import { isAlive as alive, isGroupAlive } from '../src/ports/command-dispatcher.js';
import { errorOf } from './support/errors.js';
import { killTaskGroups, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

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
  const make = (
    command: string,
    options: { clock?: SimulatedClock; killGraceMs?: number; stateDir?: string } = {},
  ) => {
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
    for (const dispatcher of dispatchers.splice(0)) dispatcher.close();
    killTaskGroups(join(dir, 'state'));
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
    });
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
    const pid = Number(await readFile(join(stateDir, task.taskId, 'pid'), 'utf8'));
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
});
