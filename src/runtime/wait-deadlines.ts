import type { Clock, TimerHandle } from '../ports/clock.js';

/** What the wait-deadline timers need of their rolebox. */
export interface WaitDeadlineDeps {
  readonly clock: Clock;
  /**
   * The live session's earliest deadline (its wait's `waitExpiresAt`, its functions' open
   * requests' `expiresAt`), or undefined when it has none or is not live here.
   */
  deadlineOf(sessionId: string): number | undefined;
  /** Expires what is due by `at` in the live session (requests, the wait), on the command path. */
  expire(sessionId: string, at: number): void;
  /** Reports a failure nobody called for. */
  report(error: Error, sessionId: string): void;
}

/** One armed deadline: its time and the timer that fires at it. */
interface Armed {
  readonly at: number;
  timer?: TimerHandle;
}

/**
 * Fires the deadlines of waits for the user (`limits.waitUserTimeoutMs`, SPEC §9) and of
 * approval requests (`approval_timeout`): a timer on the clock per live session with a
 * deadline, expiring what is due once that time has come. The deadline itself is in the
 * session's context or its functions' ledgers (saved with it); a passivated
 * session's is in its wake-up, so it is woken for it, and {@link reconcile} with `fireDue` on
 * activation fires a deadline that came meanwhile. A timer that fires before its time (a real
 * timer may, by a millisecond) is armed again for the rest: the expiry is never lost, and
 * never sent early. Asking twice arms once.
 */
export class WaitDeadlines {
  readonly #deps: WaitDeadlineDeps;
  readonly #armed = new Map<string, Armed>();
  #stopped = false;

  constructor(deps: WaitDeadlineDeps) {
    this.#deps = deps;
  }

  /**
   * Arms, moves or forgets session `sessionId`'s timer as its deadline now stands (after a
   * step that changed it). With `fireDue` (an activation), a deadline that has come fires at once.
   */
  reconcile(sessionId: string, fireDue = false): void {
    if (this.#stopped) return;
    const at = this.#deps.deadlineOf(sessionId);
    if (at !== undefined && this.#armed.get(sessionId)?.at === at) return;
    this.drop(sessionId);
    if (at === undefined) return;
    if (fireDue && this.#deps.clock.now() >= at) this.#expire(sessionId);
    else this.#arm(sessionId, at);
  }

  /** The session's deadline, for its wake-up when it is passivated. */
  wakeUpAt(sessionId: string): number | undefined {
    return this.#deps.deadlineOf(sessionId);
  }

  /** Forgets a session's timer (passivated, closed). */
  drop(sessionId: string): void {
    const armed = this.#armed.get(sessionId);
    if (!armed) return;
    if (armed.timer !== undefined) this.#deps.clock.clearTimeout(armed.timer);
    this.#armed.delete(sessionId);
  }

  /** How many sessions have a deadline armed here. */
  get size(): number {
    return this.#armed.size;
  }

  /** Forgets every timer: the rolebox stops. */
  stop(): void {
    for (const sessionId of [...this.#armed.keys()]) this.drop(sessionId);
    this.#stopped = true;
  }

  #arm(sessionId: string, at: number): void {
    const armed: Armed = { at };
    this.#armed.set(sessionId, armed);
    const delay = Math.max(0, at - this.#deps.clock.now());
    armed.timer = this.#deps.clock.setTimeout(() => this.#fired(sessionId, armed), delay);
  }

  #fired(sessionId: string, armed: Armed): void {
    if (this.#stopped || this.#armed.get(sessionId) !== armed) return;
    this.#armed.delete(sessionId);
    // The deadline moved (a new wait) or went (answered) since: arm what stands now.
    if (this.#deps.deadlineOf(sessionId) !== armed.at) this.reconcile(sessionId);
    // Early: the time has not come on the clock that armed it; wait for the rest.
    else if (this.#deps.clock.now() < armed.at) this.#arm(sessionId, armed.at);
    else this.#expire(sessionId);
  }

  #expire(sessionId: string): void {
    try {
      this.#deps.expire(sessionId, this.#deps.clock.now());
    } catch (error) {
      this.#deps.report(error instanceof Error ? error : new Error(String(error)), sessionId);
    }
  }
}
