// The worker of the loop benchmarks: to rolebox what LangGraph's `instantWorker` node is to a
// graph (an async function that answers at once and keeps nothing), so that a loop's time is
// the engine's, not a test double's bookkeeping. The testing ScriptedDispatcher keeps every
// task for tests to read (a record, two map entries and a listener set per round, never
// dropped): 2–9% of rolebox's time in a 5-round loop (paired in one process, two runs).
import type {
  DispatchedTask,
  Dispatcher,
  RoundInput,
  RoundResult,
  TaskStatus,
} from '../../src/ports/dispatcher.js';

/** The prefix of the task ids it hands out: the only tasks it knows. */
const TASK_PREFIX = 'instant:';

/**
 * A dispatcher whose workers finish as soon as they start, with `text`, and which keeps
 * nothing: a task's id is its round's key, so dispatching a key again returns the same task
 * and every task it made reads `completed`, in this process or the next (the Dispatcher
 * contract); a task it did not make reads `unknown`.
 */
export class InstantDispatcher implements Dispatcher {
  readonly #result: RoundResult;

  /** @param text what every worker answers */
  constructor(text = 'answer') {
    this.#result = { text, hadError: false };
  }

  async dispatchRound(_input: RoundInput, key: string): Promise<DispatchedTask> {
    return { taskId: `${TASK_PREFIX}${key}`, workerSessionId: `worker:${key}` };
  }

  async getTaskStatus(taskId: string): Promise<TaskStatus> {
    return statusOf(taskId);
  }

  async getRoundResult(taskId: string): Promise<RoundResult> {
    if (statusOf(taskId) === 'unknown') throw new Error(`no instant task ${taskId}`);
    return this.#result;
  }

  async cancelRound(): Promise<void> {}

  onTerminated(taskId: string, listener: (status: TaskStatus) => void): () => void {
    // Reported on the next turn, as a task that had ended before the call is.
    let listening = true;
    const status = statusOf(taskId);
    queueMicrotask(() => listening && listener(status));
    return () => {
      listening = false;
    };
  }
}

function statusOf(taskId: string): TaskStatus {
  return taskId.startsWith(TASK_PREFIX) ? 'completed' : 'unknown';
}
