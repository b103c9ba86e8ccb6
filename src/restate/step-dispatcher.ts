import {
  type DispatchedTask,
  type Dispatcher,
  type RoundInput,
  type RoundResult,
  type TaskStatus,
  TERMINAL_TASK_STATUSES,
} from '../ports/dispatcher.js';

/** What a session object knows of one of its worker tasks (kept in its Restate state). */
export interface TaskEntry {
  readonly status: TaskStatus;
  /** The worker's result, once it called back. */
  readonly result?: RoundResult;
  /** The worker invocation's Restate id, to cancel it. */
  readonly invocationId?: string;
}

/** A round the step asked to run: sent to the worker service once the step is stored. */
export interface RoundToDispatch {
  readonly key: string;
  readonly taskId: string;
  readonly workerSessionId: string;
  readonly round: RoundInput;
}

/** How many finished tasks a session keeps (a loop reads a result right after its end). */
const FINISHED_TASKS_KEPT = 8;

/**
 * The dispatcher of one step on Restate (DESIGN §8). It runs nothing itself: a dispatch is
 * noted, to be sent to the worker service after the step; statuses and results are those
 * the workers reported back to the session object (its `tasks` state). Every answer is
 * known at once, so a step never waits for a worker.
 */
export class StepDispatcher implements Dispatcher {
  readonly #tasks: Record<string, TaskEntry>;
  /** Rounds dispatched in this step, in order. */
  readonly dispatched: RoundToDispatch[] = [];
  /** Tasks cancelled in this step (their invocations are cancelled after it). */
  readonly cancelled: TaskEntry[] = [];

  /** @param tasks the session's tasks, copied: the step changes its own copy. */
  constructor(tasks: Readonly<Record<string, TaskEntry>>) {
    this.#tasks = { ...tasks };
  }

  /** The tasks after the step, the oldest finished ones dropped. */
  tasks(): Record<string, TaskEntry> {
    const finished = Object.keys(this.#tasks).filter((taskId) =>
      TERMINAL_TASK_STATUSES.has(this.#tasks[taskId]?.status as TaskStatus),
    );
    const kept = { ...this.#tasks };
    for (const taskId of finished.slice(0, Math.max(0, finished.length - FINISHED_TASKS_KEPT)))
      delete kept[taskId];
    return kept;
  }

  /** The task of round `key`: the same one when asked again. */
  async dispatchRound(input: RoundInput, key: string): Promise<DispatchedTask> {
    const taskId = `task_${key}`;
    const workerSessionId = `worker_${key}`;
    if (!Object.hasOwn(this.#tasks, taskId)) {
      this.#tasks[taskId] = { status: 'running' };
      this.dispatched.push({ key, taskId, workerSessionId, round: input });
    }
    return { taskId, workerSessionId };
  }

  /** As the worker last reported it; `unknown` for a task this session never dispatched. */
  async getTaskStatus(taskId: string): Promise<TaskStatus> {
    return Object.hasOwn(this.#tasks, taskId)
      ? (this.#tasks[taskId] as TaskEntry).status
      : 'unknown';
  }

  /** The result the worker reported. Throws when it has not reported one. */
  async getRoundResult(taskId: string): Promise<RoundResult> {
    const result = Object.hasOwn(this.#tasks, taskId) ? this.#tasks[taskId]?.result : undefined;
    if (!result) throw new Error(`task ${taskId} has no result`);
    return result;
  }

  /** Marks a running task cancelled; its worker invocation is cancelled after the step. */
  async cancelRound(taskId: string): Promise<void> {
    const entry = Object.hasOwn(this.#tasks, taskId) ? this.#tasks[taskId] : undefined;
    if (!entry || TERMINAL_TASK_STATUSES.has(entry.status)) return;
    this.#tasks[taskId] = { ...entry, status: 'cancelled' };
    this.cancelled.push(entry);
  }

  /** Reports a task that has ended already; one that ends later is a later step's business. */
  onTerminated(taskId: string, listener: (status: TaskStatus) => void): () => void {
    const entry = Object.hasOwn(this.#tasks, taskId) ? this.#tasks[taskId] : undefined;
    if (entry && TERMINAL_TASK_STATUSES.has(entry.status)) {
      const { status } = entry;
      queueMicrotask(() => listener(status));
    }
    return () => {};
  }

  /** Records what the worker reported (the step that follows reads it). */
  report(taskId: string, status: TaskStatus, result: RoundResult | undefined): void {
    const entry = this.#tasks[taskId];
    this.#tasks[taskId] = { ...entry, status, ...(result ? { result } : {}) };
  }

  /** Notes the Restate invocation that runs a dispatched task. */
  invokedAs(taskId: string, invocationId: string): void {
    const entry = this.#tasks[taskId];
    if (entry) this.#tasks[taskId] = { ...entry, invocationId };
  }
}
