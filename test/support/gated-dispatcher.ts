import type { DispatchedTask, RoundInput, RoundResult } from '../../src/index.js';
import { ScriptedDispatcher } from '../../src/testing/index.js';

interface Gate<T> {
  resolve(value: T): void;
  reject(error: Error): void;
}

/**
 * A scripted dispatcher whose dispatch, result and cancel calls wait until the test
 * releases them, so a loop can be held in `dispatching`, `summarizing` or `finalizing`.
 */
export class GatedDispatcher extends ScriptedDispatcher {
  readonly #dispatches: Gate<void>[] = [];
  readonly #results: Gate<void>[] = [];
  readonly #cancels: Gate<void>[] = [];

  override async dispatchRound(input: RoundInput, key: string): Promise<DispatchedTask> {
    await new Promise<void>((resolve, reject) => this.#dispatches.push({ resolve, reject }));
    return super.dispatchRound(input, key);
  }

  override async getRoundResult(taskId: string): Promise<RoundResult> {
    await new Promise<void>((resolve, reject) => this.#results.push({ resolve, reject }));
    return super.getRoundResult(taskId);
  }

  override async cancelRound(taskId: string): Promise<void> {
    await new Promise<void>((resolve, reject) => this.#cancels.push({ resolve, reject }));
    return super.cancelRound(taskId);
  }

  /** Lets the oldest waiting dispatch go through. */
  releaseDispatch(): void {
    this.#take(this.#dispatches, 'dispatch').resolve();
  }

  /** Lets the oldest waiting result read go through, or fail it. */
  releaseResult(error?: Error): void {
    const gate = this.#take(this.#results, 'result');
    if (error) gate.reject(error);
    else gate.resolve();
  }

  /** Lets the oldest waiting cancel go through. */
  releaseCancel(): void {
    this.#take(this.#cancels, 'cancel').resolve();
  }

  /** Drops every waiting call, as if the process that made them had died. */
  forgetPending(): void {
    this.#dispatches.length = 0;
    this.#results.length = 0;
    this.#cancels.length = 0;
  }

  #take(queue: Gate<void>[], what: string): Gate<void> {
    const gate = queue.shift();
    if (!gate) throw new Error(`no ${what} is waiting`);
    return gate;
  }
}
