/**
 * One FIFO queue of tasks per scope key: tasks on one scope run one after the other in
 * the order they were added, tasks on different scopes run independently. A contended scope
 * makes a task wait its turn; nothing is ever dropped.
 */
export class ScopeQueues {
  readonly #tails = new Map<string, Promise<unknown>>();
  #pending = 0;
  #idleWaiters: (() => void)[] = [];

  /** Runs `task` after every task already queued on `scopeKey`; resolves with its result. */
  run<T>(scopeKey: string, task: () => Promise<T>): Promise<T> {
    this.#pending++;
    const previous = this.#tails.get(scopeKey) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(scopeKey, tail);
    void tail.then(() => {
      if (this.#tails.get(scopeKey) === tail) this.#tails.delete(scopeKey);
      this.#pending--;
      if (this.#pending === 0) for (const resolve of this.#idleWaiters.splice(0)) resolve();
    });
    return result;
  }

  /** How many tasks are queued or running. */
  get size(): number {
    return this.#pending;
  }

  /** Resolves once no task is queued or running (at once when none is). */
  idle(): Promise<void> {
    if (this.#pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}
