import * as restate from '@restatedev/restate-sdk';
import { CommandDispatcher, DEFAULT_TASKS_DIR } from '../adapters/command-dispatcher.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { RoundInput, RoundResult, TaskStatus } from '../ports/dispatcher.js';
import { roleboxWorker } from './worker.js';

/** The default name of the built-in shell-command worker service. */
export const SHELL_WORKER_NAME = 'rolebox-shell-worker';

/** Options of {@link shellCommandWorker}. */
export interface ShellCommandWorkerOptions {
  /** The shell command that runs one round: the prompt on stdin, the round's text on stdout. */
  readonly command: string;
  /** Where the tasks' files are kept (default `.rolebox/tasks`): a retried round finds its task there. */
  readonly tasksDir?: string;
  /** The service name (default {@link SHELL_WORKER_NAME}). */
  readonly name?: string;
}

/** The shell worker service, and a way to stop the rounds this process runs. */
export interface ShellWorker {
  /** The Restate service to bind. */
  readonly service: ReturnType<typeof roleboxWorker>;
  /**
   * Kills the process group (and marked descendants) of every round this process runs and
   * waits until they are gone: the endpoint is stopping. Their invocations report the
   * rounds cancelled (now, or when retried).
   */
  stopRounds(): Promise<void>;
}

/** What the closure of a round journals: how its task ended, and its result when it has one. */
interface RoundEnd {
  readonly status: TaskStatus;
  readonly result?: RoundResult;
}

/** A round this process runs: its task once dispatched, and whether it is to be stopped. */
interface LiveRound {
  task?: Promise<string>;
  stopped: boolean;
}

/**
 * The built-in worker service: runs each round as a shell command through the command
 * dispatcher, keyed by the round. A worker invocation retried after its process died
 * finds the task the first attempt started (same machine, same `tasksDir`) and waits for
 * it instead of running the command again; the command's process group outlives an
 * endpoint process that is killed. A cancelled invocation (a timed-out round, a loop
 * stopped now, an operator's cancel) kills the round's process group and descendants, as
 * the embedded dispatcher does. Throws: `invalid_argument` for an empty command.
 */
export function shellCommandWorker(options: ShellCommandWorkerOptions) {
  return shellWorker(options).service;
}

/** {@link shellCommandWorker} with {@link ShellWorker.stopRounds}, for an endpoint that stops. */
export function shellWorker(options: ShellCommandWorkerOptions): ShellWorker {
  checkOptionNames(
    options,
    Object.keys({
      command: true,
      tasksDir: true,
      name: true,
    } satisfies Record<keyof ShellCommandWorkerOptions, true>),
    'shellCommandWorker options',
  );
  if (typeof options?.command !== 'string' || options.command.trim() === '')
    throw new RoleboxError(
      'invalid_argument',
      `the shell worker needs a command, got ${describeValue(options?.command)}`,
    );
  const dispatcher = new CommandDispatcher({
    command: options.command,
    stateDir: options.tasksDir ?? DEFAULT_TASKS_DIR,
  });
  /** The rounds running here, by round key (`<session>/<round key>`). */
  const live = new Map<string, LiveRound>();
  let stopping = false;

  /** Kills the round's task: now if it is dispatched, else as soon as it is. */
  const stop = async (roundKey: string): Promise<void> => {
    const round = live.get(roundKey);
    if (!round) return;
    round.stopped = true;
    const taskId = await round.task?.catch(() => undefined);
    if (taskId !== undefined) await dispatcher.cancelRound(taskId);
  };

  /** Runs the round's command (or adopts the task a first attempt started) to its end. */
  const runRound = async (roundKey: string, round: RoundInput): Promise<RoundEnd> => {
    const entry: LiveRound = live.get(roundKey) ?? { stopped: false };
    live.set(roundKey, entry);
    try {
      // The endpoint is stopping: not started here, the round runs when Restate retries it.
      if (stopping) throw new Error('the endpoint is stopping: the round is left for a retry');
      // Cancelled before it started: the command never runs.
      if (entry.stopped) return { status: 'cancelled' };
      const dispatched = dispatcher.dispatchRound(round, roundKey).then((task) => task.taskId);
      entry.task = dispatched;
      const taskId = await dispatched;
      // The dispatcher may report at once, and more than once: the first report counts.
      let unwatch = () => {};
      const ended = new Promise<TaskStatus>((resolve) => {
        unwatch = dispatcher.onTerminated(taskId, resolve);
      });
      if (entry.stopped) await dispatcher.cancelRound(taskId);
      const status = await ended;
      unwatch();
      if (status !== 'completed' && status !== 'error') return { status };
      return { status, result: await dispatcher.getRoundResult(taskId) };
    } finally {
      if (live.get(roundKey) === entry) live.delete(roundKey);
    }
  };

  const service = roleboxWorker(options.name ?? SHELL_WORKER_NAME, async (ctx, round, request) => {
    const roundKey = `${request.session.key}/${request.key}`;
    let end: RoundEnd;
    try {
      end = journaledRoundEnd(
        await ctx.run('run the round command', () => runRound(roundKey, round)),
      );
    } catch (error) {
      // Cancelled while the command runs: its process group goes with the invocation. The
      // invocation ends cancelled whatever the kill met (a retry would run nothing more).
      if (error instanceof restate.CancelledError) await stop(roundKey).catch(() => {});
      throw error;
    }
    // Killed from outside (the endpoint stopped): the round is lost, not failed.
    if (end.status === 'cancelled') throw new restate.CancelledError();
    return (
      end.result ?? { text: '', hadError: true, errorReason: `the worker task ended ${end.status}` }
    );
  });
  return {
    service,
    stopRounds: async () => {
      stopping = true;
      await Promise.all([...live.keys()].map(stop));
    },
  };
}

/**
 * The journaled end of a round. An invocation journaled by rolebox 0.1 (in flight across
 * the upgrade) recorded the bare `RoundResult`: it is read as a completed round, so that
 * its replay reports the result instead of "ended undefined".
 */
function journaledRoundEnd(journaled: RoundEnd | RoundResult): RoundEnd {
  return 'status' in journaled ? journaled : { status: 'completed', result: journaled };
}
