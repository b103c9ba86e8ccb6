/** What a loop asks a dispatcher to run for one round. */
export interface RoundInput {
  readonly loopId: string;
  /** 1-based round number. */
  readonly round: number;
  readonly originSessionId: string;
  /** The agent that runs the round. */
  readonly agent: string;
  /** The round's full prompt (seed included). */
  readonly prompt: string;
  /** How long the round may run. */
  readonly timeoutMs?: number;
}

/** A dispatched round: the worker task and the session the worker runs in. */
export interface DispatchedTask {
  readonly taskId: string;
  readonly workerSessionId: string;
}

/** Where a worker task stands. `unknown`: the dispatcher never heard of it. */
export type TaskStatus = 'pending' | 'running' | 'completed' | 'error' | 'cancelled' | 'unknown';

/** Statuses a task never leaves. */
export const TERMINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set([
  'completed',
  'error',
  'cancelled',
]);

/** How much the worker wrote, and how much of it a dispatcher that caps output kept. */
export interface RoundOutput {
  /** Bytes the worker wrote to stdout in all. */
  readonly bytes: number;
  /** Bytes of it kept (the last ones): `text` is made of these. */
  readonly keptBytes: number;
  /** True when bytes were dropped (`bytes > keptBytes`). */
  readonly truncated: boolean;
}

/** The outcome of a finished round. */
export interface RoundResult {
  /** The worker's text. */
  readonly text: string;
  readonly hadError: boolean;
  readonly errorReason?: string;
  /** Optional: how much output the worker wrote and how much `text` holds of it. */
  readonly output?: RoundOutput;
  /**
   * Optional: how long the worker itself ran, in ms, when the dispatcher measured it; the
   * round's duration then (not the time until this process saw the result).
   */
  readonly ranMs?: number;
  /** Optional: true when the task was started by an earlier process (the round spanned a restart). */
  readonly acrossRestart?: boolean;
}

/**
 * Runs loop rounds as worker tasks. Loops talk to workers only through this port.
 *
 * Every method must be safe to call again after a restart: a second `dispatchRound` with
 * the same key returns the same task, `getTaskStatus` answers for tasks started by an
 * earlier process.
 */
export interface Dispatcher {
  /** Starts the round, or returns the task already started for `key` (`<loopId>:<round>`). */
  dispatchRound(input: RoundInput, key: string): Promise<DispatchedTask>;
  getTaskStatus(taskId: string): Promise<TaskStatus>;
  /** The result of a finished task. */
  getRoundResult(taskId: string): Promise<RoundResult>;
  /** Stops the task; cancelling a finished or unknown task does nothing. */
  cancelRound(taskId: string): Promise<void>;
  /**
   * Calls `listener` when the task reaches a terminal status, also when it had already
   * reached one before the call (it may call it more than once). Returns: unsubscribe.
   */
  onTerminated(taskId: string, listener: (status: TaskStatus) => void): () => void;
  /** Optional: release what keeps the process alive (called by `rb.stop()`); tasks keep running. */
  close?(): void;
}
