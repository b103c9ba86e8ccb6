import { reachedAt } from '../base/reached-at.js';
import type { Clock, TimerHandle } from '../ports/clock.js';
import type { Dispatcher, TaskStatus } from '../ports/dispatcher.js';
import type { WakeUp } from '../ports/snapshot-store.js';

/**
 * Wakes passivated sessions (DESIGN §7): at their earliest deadline, or when the worker
 * task they wait for ends. A session is woken once; waking it is the runtime's activation,
 * which re-arms what its state needs (a deadline that is due fires at once).
 */
export class WakeUpScheduler {
  readonly #clock: Clock;
  readonly #dispatcher: Dispatcher | undefined;
  readonly #wake: (sessionId: string, dueBy: number) => void;
  readonly #pending = new Map<string, { timer?: TimerHandle; unwatch?: () => void }>();

  /**
   * @param wake activates the session (errors are the caller's to report); `dueBy` is the
   *   time that has come: the wake-up's own time when its timer fired (even a millisecond
   *   early, as Node's may), the clock's when its task ended.
   */
  constructor(
    clock: Clock,
    dispatcher: Dispatcher | undefined,
    wake: (sessionId: string, dueBy: number) => void,
  ) {
    this.#clock = clock;
    this.#dispatcher = dispatcher;
    this.#wake = wake;
  }

  /** Arms the wake-up of a passivated session (replacing any before); nothing for an empty one. */
  schedule(wakeUp: WakeUp): void {
    this.cancel(wakeUp.sessionId);
    if (wakeUp.at === undefined && wakeUp.taskId === undefined) return;
    const entry: { timer?: TimerHandle; unwatch?: () => void } = {};
    this.#pending.set(wakeUp.sessionId, entry);
    const wake = (dueBy: number) => {
      if (this.#pending.get(wakeUp.sessionId) !== entry) return;
      this.cancel(wakeUp.sessionId);
      this.#wake(wakeUp.sessionId, reachedAt(dueBy, this.#clock.now()));
    };
    const { at } = wakeUp;
    if (at !== undefined)
      entry.timer = this.#clock.setTimeout(() => wake(at), Math.max(0, at - this.#clock.now()));
    if (wakeUp.taskId !== undefined && this.#dispatcher) {
      const ended = (status: TaskStatus) => {
        if (status !== 'pending' && status !== 'running') wake(this.#clock.now());
      };
      try {
        entry.unwatch = this.#dispatcher.onTerminated(wakeUp.taskId, ended);
        this.#dispatcher.getTaskStatus(wakeUp.taskId).then(ended, () => wake(this.#clock.now()));
      } catch {
        queueMicrotask(() => wake(this.#clock.now()));
      }
    }
  }

  /** Forgets a session's wake-up (it was activated, or closed). */
  cancel(sessionId: string): void {
    const entry = this.#pending.get(sessionId);
    if (!entry) return;
    if (entry.timer !== undefined) this.#clock.clearTimeout(entry.timer);
    entry.unwatch?.();
    this.#pending.delete(sessionId);
  }

  /** How many passivated sessions wait for a wake-up here. */
  get size(): number {
    return this.#pending.size;
  }

  /** Forgets every wake-up. */
  stop(): void {
    for (const sessionId of [...this.#pending.keys()]) this.cancel(sessionId);
  }
}
