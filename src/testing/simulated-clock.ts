import type { Clock, TimerHandle } from '../ports/clock.js';

interface PendingTimer {
  readonly id: number;
  readonly dueAt: number;
  readonly callback: () => void;
}

/**
 * A clock that moves only when told to. Due timers fire in order of due time (ties in the
 * order they were set), each seeing `now()` equal to its own due time.
 *
 * Use when: testing anything with delays or deadlines. Never sleep in a test; advance this.
 */
export class SimulatedClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: PendingTimer[] = [];

  /** @param startAt the initial time in epoch milliseconds (default 0). */
  constructor(startAt = 0) {
    this.#now = startAt;
  }

  /** The simulated time. */
  now(): number {
    return this.#now;
  }

  /** Schedules `callback` at `now() + delayMs` (negative delays count as 0). */
  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    const id = this.#nextId++;
    this.#timers.push({ id, dueAt: this.#now + Math.max(0, delayMs), callback });
    return id;
  }

  /** Cancels a pending timer. */
  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((timer) => timer.id !== handle);
  }

  /** How many timers are waiting. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way (including
   * timers that those callbacks set, when they fall inside the window).
   */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`advance() needs a non-negative number, got ${ms}`);
    const until = this.#now + ms;
    for (;;) {
      const next = this.#nextDue();
      if (!next || next.dueAt > until) break;
      this.#timers = this.#timers.filter((timer) => timer !== next);
      this.#now = next.dueAt;
      next.callback();
    }
    this.#now = until;
  }

  /** Moves time to the next due timer and fires it; returns false when none is pending. */
  runNext(): boolean {
    const next = this.#nextDue();
    if (!next) return false;
    this.advance(next.dueAt - this.#now);
    return true;
  }

  #nextDue(): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const timer of this.#timers) {
      if (!best || timer.dueAt < best.dueAt || (timer.dueAt === best.dueAt && timer.id < best.id))
        best = timer;
    }
    return best;
  }
}
