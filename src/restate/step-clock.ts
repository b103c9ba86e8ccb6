import type { Clock, TimerHandle } from '../ports/clock.js';

/**
 * The clock of one step on Restate: time stands still at the step's time (from Restate's
 * journaled `ctx.date.now()`, so a retried step sees the same), and a timer due by then
 * fires when the step runs what is due. A later timer is left for the session's wake-up
 * (a delayed call to itself), never waited for in the process.
 */
export class StepClock implements Clock {
  readonly #now: number;
  readonly #timers = new Map<number, { readonly dueAt: number; readonly callback: () => void }>();
  #nextId = 1;

  /** @param now the step's time, epoch ms. */
  constructor(now: number) {
    this.#now = now;
  }

  /** The step's time. */
  now(): number {
    return this.#now;
  }

  /** Arms `callback`; it fires in {@link runDue} once `delayMs` is 0 or less. */
  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    const id = this.#nextId++;
    this.#timers.set(id, { dueAt: this.#now + Math.max(0, delayMs), callback });
    return id;
  }

  /** Disarms a timer; unknown ones are ignored. */
  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number);
  }

  /** Fires the timers due at the step's time, in the order they were armed. Returns: how many. */
  runDue(): number {
    let fired = 0;
    for (const [id, timer] of [...this.#timers]) {
      if (timer.dueAt > this.#now || !this.#timers.has(id)) continue;
      this.#timers.delete(id);
      timer.callback();
      fired++;
    }
    return fired;
  }
}
