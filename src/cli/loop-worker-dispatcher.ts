import { CommandDispatcher, type DispatchPoint } from '../adapters/command-dispatcher.js';
import { describeValue, RoleboxError } from '../errors.js';
import type {
  DispatchedTask,
  Dispatcher,
  RoundInput,
  RoundResult,
  TaskStatus,
} from '../ports/dispatcher.js';

/** Options of {@link LoopWorkerDispatcher}. */
export interface LoopWorkerDispatcherOptions {
  /** Where every worker's tasks are kept (one folder, whichever command ran them). */
  readonly stateDir: string;
  /** Testing only: the command dispatcher's crash points (see `CommandDispatcher`). */
  readonly onDispatchPoint?: (point: DispatchPoint) => void;
  /**
   * For a round of a loop given no worker with `assign`: the worker that loop was started
   * with, when the caller can say (read where it is kept); undefined refuses the round.
   */
  readonly workerOf?: (input: RoundInput) => string | undefined;
}

/**
 * The CLI's dispatcher: runs each loop's rounds with the shell command that loop was
 * started with, never another's. A loop is given its worker with {@link assign} before it
 * dispatches (or `workerOf` says it then); a round of a loop with none is refused
 * (`invalid_argument`), so it never falls back on whatever command this process holds.
 *
 * One {@link CommandDispatcher} per distinct command, all on one tasks folder: a task's
 * status, result and cancellation do not depend on the command, so a task this process did
 * not start (an earlier process did) is answered by any of them.
 */
export class LoopWorkerDispatcher implements Dispatcher {
  readonly #stateDir: string;
  readonly #onDispatchPoint: ((point: DispatchPoint) => void) | undefined;
  readonly #workerOf: ((input: RoundInput) => string | undefined) | undefined;
  /** The worker command of each loop this process may drive. */
  readonly #workers = new Map<string, string>();
  /** One dispatcher per command (a key is a command). */
  readonly #byCommand = new Map<string, CommandDispatcher>();
  /** The dispatcher that started each task here: it watches its own child without polling. */
  readonly #byTask = new Map<string, CommandDispatcher>();
  /** Answers for tasks started by another process (none of this one's commands matter). */
  #reader: CommandDispatcher | undefined;

  constructor(options: LoopWorkerDispatcherOptions) {
    this.#stateDir = options.stateDir;
    this.#onDispatchPoint = options.onDispatchPoint;
    this.#workerOf = options.workerOf;
  }

  /**
   * Makes `worker` the command of loop `loopId`'s rounds. Throws: `invalid_argument` for a
   * command the command dispatcher refuses (an empty one), and when the loop was given
   * another command already: a loop keeps the worker it was started with.
   */
  assign(loopId: string, worker: string): void {
    const known = this.#workers.get(loopId);
    if (known !== undefined && known !== worker)
      throw new RoleboxError(
        'invalid_argument',
        `loop ${describeValue(loopId)} runs ${describeValue(known)}; it cannot be given ${describeValue(worker)} too`,
        { loopId },
      );
    this.#dispatcherFor(worker);
    this.#workers.set(loopId, worker);
  }

  /** The worker command of loop `loopId`, when it was given one. */
  workerOf(loopId: string): string | undefined {
    return this.#workers.get(loopId);
  }

  /**
   * Checks `worker` as the command dispatcher would (before anything starts).
   * Throws: `invalid_argument` for a command it refuses.
   */
  check(worker: string): void {
    this.#dispatcherFor(worker);
  }

  async dispatchRound(input: RoundInput, key: string): Promise<DispatchedTask> {
    const worker = this.#workers.get(input.loopId) ?? this.#workerOf?.(input);
    if (worker === undefined)
      throw new RoleboxError(
        'invalid_argument',
        `no worker command is known here for loop ${describeValue(input.loopId)}; \`rolebox resume\` runs each stored loop with its own`,
        { loopId: input.loopId },
      );
    const dispatcher = this.#dispatcherFor(worker);
    const task = await dispatcher.dispatchRound(input, key);
    this.#byTask.set(task.taskId, dispatcher);
    return task;
  }

  getTaskStatus(taskId: string): Promise<TaskStatus> {
    return this.#forTask(taskId).getTaskStatus(taskId);
  }

  getRoundResult(taskId: string): Promise<RoundResult> {
    return this.#forTask(taskId).getRoundResult(taskId);
  }

  cancelRound(taskId: string): Promise<void> {
    return this.#forTask(taskId).cancelRound(taskId);
  }

  onTerminated(taskId: string, listener: (status: TaskStatus) => void): () => void {
    return this.#forTask(taskId).onTerminated(taskId, listener);
  }

  /** The file that holds a task's stdout (see `CommandDispatcher.outputFile`). */
  outputFile(taskId: string): string {
    return this.#forTask(taskId).outputFile(taskId);
  }

  close(): void {
    for (const dispatcher of this.#byCommand.values()) dispatcher.close();
    this.#reader?.close();
  }

  #dispatcherFor(worker: string): CommandDispatcher {
    let dispatcher = this.#byCommand.get(worker);
    if (!dispatcher) {
      dispatcher = new CommandDispatcher({
        command: worker,
        stateDir: this.#stateDir,
        ...(this.#onDispatchPoint ? { onDispatchPoint: this.#onDispatchPoint } : {}),
      });
      this.#byCommand.set(worker, dispatcher);
    }
    return dispatcher;
  }

  #forTask(taskId: string): CommandDispatcher {
    const started = this.#byTask.get(taskId);
    if (started) return started;
    // Never runs its command: it only reads and signals tasks other processes started.
    this.#reader ??= new CommandDispatcher({ command: 'true', stateDir: this.#stateDir });
    return this.#reader;
  }
}
