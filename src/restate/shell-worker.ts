import { CommandDispatcher, DEFAULT_TASKS_DIR } from '../adapters/command-dispatcher.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { RoundResult, TaskStatus } from '../ports/dispatcher.js';
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

/**
 * The built-in worker service: runs each round as a shell command through the command
 * dispatcher, keyed by the round. A worker invocation retried after its process died
 * finds the task the first attempt started (same machine, same `tasksDir`) and waits for
 * it instead of running the command again; the command's process group outlives the
 * endpoint's process. Throws: `invalid_argument` for an empty command.
 */
export function shellCommandWorker(options: ShellCommandWorkerOptions) {
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
  return roleboxWorker(options.name ?? SHELL_WORKER_NAME, async (ctx, round, request) =>
    ctx.run('run the round command', async (): Promise<RoundResult> => {
      const task = await dispatcher.dispatchRound(round, `${request.session.key}/${request.key}`);
      // The dispatcher may report at once, and more than once: the first report counts.
      let unwatch = () => {};
      const status = await new Promise<TaskStatus>((resolve) => {
        unwatch = dispatcher.onTerminated(task.taskId, resolve);
      });
      unwatch();
      if (status !== 'completed' && status !== 'error')
        return { text: '', hadError: true, errorReason: `the worker task ended ${status}` };
      return dispatcher.getRoundResult(task.taskId);
    }),
  );
}
