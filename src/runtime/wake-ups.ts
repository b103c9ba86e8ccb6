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
  readonly #wake: (sessionId: string) => void;
  readonly #pending = new Map<string, { timer?: TimerHandle; unwatch?: () => void }>();

  /** @param wake activates the session (errors are the caller's to report). */
  constructor(clock: Clock, dispatcher: Dispatcher | undefined, wake: (sessionId: string) => void) {
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
    const wake = () => {
      if (this.#pending.get(wakeUp.sessionId) !== entry) return;
      this.cancel(wakeUp.sessionId);
      this.#wake(wakeUp.sessionId);
    };
    if (wakeUp.at !== undefined)
      entry.timer = this.#clock.setTimeout(wake, Math.max(0, wakeUp.at - this.#clock.now()));
    if (wakeUp.taskId !== undefined && this.#dispatcher) {
      const ended = (status: TaskStatus) => {
        if (status !== 'pending' && status !== 'running') wake();
      };
      try {
        entry.unwatch = this.#dispatcher.onTerminated(wakeUp.taskId, ended);
        this.#dispatcher.getTaskStatus(wakeUp.taskId).then(ended, () => wake());
      } catch {
        queueMicrotask(wake);
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
