import type {
  DispatchedTask,
  Dispatcher,
  RoundInput,
  RoundOutput,
  RoundResult,
  TaskStatus,
} from '../ports/dispatcher.js';

/** One task the scripted dispatcher was asked to run. */
export interface ScriptedTask {
  readonly taskId: string;
  readonly workerSessionId: string;
  readonly key: string;
  readonly input: RoundInput;
  status: TaskStatus;
  result?: RoundResult;
}

/** Decides how a task ends as soon as it is dispatched; return undefined to leave it running. */
export type ScriptedAnswer = (
  input: RoundInput,
  task: ScriptedTask,
) => string | { error: string } | undefined;

/**
 * A dispatcher whose tasks end when the test says so.
 *
 * Use when: testing loops. Tasks start `running`; end them with `complete`, `fail`,
 * `cancelExternally` or `forget`, or give an `answer` function that ends each one at once.
 * Every call is recorded (`tasks`, `cancelled`). All promises resolve in the same tick.
 */
export class ScriptedDispatcher implements Dispatcher {
  /** Every task, in dispatch order. */
  readonly tasks: ScriptedTask[] = [];
  /** Task ids passed to `cancelRound`, in order. */
  readonly cancelled: string[] = [];
  /** How many times `dispatchRound` was called (including idempotent repeats). */
  dispatchCalls = 0;
  readonly #listeners = new Map<string, Set<(status: TaskStatus) => void>>();
  readonly #byKey = new Map<string, ScriptedTask>();
  readonly #byId = new Map<string, ScriptedTask>();
  #answer: ScriptedAnswer | undefined;

  /** @param answer ends each task as soon as it is dispatched (see {@link ScriptedAnswer}). */
  constructor(answer?: ScriptedAnswer) {
    this.#answer = answer;
  }

  /** Replaces the automatic answer. */
  answerWith(answer: ScriptedAnswer | undefined): void {
    this.#answer = answer;
  }

  async dispatchRound(input: RoundInput, key: string): Promise<DispatchedTask> {
    this.dispatchCalls++;
    const existing = this.#byKey.get(key);
    if (existing) return { taskId: existing.taskId, workerSessionId: existing.workerSessionId };
    const n = this.tasks.length + 1;
    const task: ScriptedTask = {
      taskId: `task-${n}`,
      workerSessionId: `worker-${n}`,
      key,
      input,
      status: 'running',
    };
    this.tasks.push(task);
    this.#byKey.set(key, task);
    this.#byId.set(task.taskId, task);
    const answer = this.#answer?.(input, task);
    if (typeof answer === 'string') this.complete(task.taskId, answer);
    else if (answer) this.fail(task.taskId, answer.error);
    return { taskId: task.taskId, workerSessionId: task.workerSessionId };
  }

  async getTaskStatus(taskId: string): Promise<TaskStatus> {
    return this.#find(taskId)?.status ?? 'unknown';
  }

  async getRoundResult(taskId: string): Promise<RoundResult> {
    const task = this.#find(taskId);
    if (!task?.result)
      throw new Error(
        `scripted task ${taskId} has no result (status ${task?.status ?? 'unknown'})`,
      );
    return task.result;
  }

  async cancelRound(taskId: string): Promise<void> {
    this.cancelled.push(taskId);
    const task = this.#find(taskId);
    if (task && (task.status === 'running' || task.status === 'pending')) {
      task.status = 'cancelled';
      task.result = { text: '', hadError: true, errorReason: 'cancelled' };
      this.#notify(taskId, 'cancelled');
    }
  }

  onTerminated(taskId: string, listener: (status: TaskStatus) => void): () => void {
    const set = this.#listeners.get(taskId) ?? new Set();
    set.add(listener);
    this.#listeners.set(taskId, set);
    const status = this.#find(taskId)?.status ?? 'unknown';
    if (status !== 'running' && status !== 'pending')
      queueMicrotask(() => set.has(listener) && listener(status));
    return () => set.delete(listener);
  }

  /** The task dispatched for `loopId:round`, or the latest one. */
  task(which?: string | number): ScriptedTask {
    const task =
      which === undefined
        ? this.tasks.at(-1)
        : typeof which === 'number'
          ? this.tasks[which - 1]
          : this.#find(which);
    if (!task) throw new Error(`no scripted task ${which ?? '(latest)'}`);
    return task;
  }

  /** Ends a task successfully with `text` (default: the latest task), and `output` facts if given. */
  complete(taskId: string = this.task().taskId, text = '', output?: RoundOutput): void {
    this.#end(taskId, 'completed', { text, hadError: false, ...(output ? { output } : {}) });
  }

  /** Ends a task with an error, and `output` facts if given. */
  fail(
    taskId: string = this.task().taskId,
    reason = 'worker failed',
    text = '',
    output?: RoundOutput,
  ): void {
    this.#end(taskId, 'error', {
      text,
      hadError: true,
      errorReason: reason,
      ...(output ? { output } : {}),
    });
  }

  /** Marks a task cancelled by someone other than the loop. */
  cancelExternally(taskId: string = this.task().taskId): void {
    this.#end(taskId, 'cancelled', { text: '', hadError: true, errorReason: 'cancelled' });
  }

  /** Forgets a task, as a dispatcher that lost it would: its status becomes `unknown`. */
  forget(taskId: string = this.task().taskId): void {
    const index = this.tasks.findIndex((task) => task.taskId === taskId);
    const [task] = this.tasks.splice(index, 1);
    if (task) {
      this.#byKey.delete(task.key);
      this.#byId.delete(task.taskId);
    }
  }

  /** Calls the termination listeners of a task again, as a flaky dispatcher might. */
  renotify(taskId: string = this.task().taskId): void {
    this.#notify(taskId, this.#find(taskId)?.status ?? 'unknown');
  }

  /** How many termination listeners are subscribed to a task. */
  listenerCount(taskId: string): number {
    return this.#listeners.get(taskId)?.size ?? 0;
  }

  #end(taskId: string, status: TaskStatus, result: RoundResult): void {
    const task = this.#find(taskId);
    if (!task) throw new Error(`no scripted task ${taskId}`);
    task.status = status;
    task.result = result;
    this.#notify(taskId, status);
  }

  #notify(taskId: string, status: TaskStatus): void {
    for (const listener of [...(this.#listeners.get(taskId) ?? [])]) listener(status);
  }

  #find(taskId: string): ScriptedTask | undefined {
    return this.#byId.get(taskId);
  }
}
