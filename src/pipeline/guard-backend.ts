/** The state of one guard lane in one scope. */
export interface GuardState {
  /** When the lane was last touched. */
  readonly lastEventAt?: number;
  /** When the lane was first touched (kept by later touches). */
  readonly startedAt?: number;
}

/**
 * Where guard lanes live (debounce, throttle, outer timeout, action idempotency). Async so
 * a shared backend (Redis) can stand behind it for scale-out.
 */
export interface GuardBackend {
  /** The lane's state; `{}` for a lane never touched. */
  get(scopeKey: string, lane: string): Promise<GuardState>;
  /** Sets `lastEventAt` to `now` (and `startedAt` the first time); returns the new state. */
  touch(scopeKey: string, lane: string, now: number): Promise<GuardState>;
}

/**
 * Guard lanes in a Map. Use when: one process, tests. The state is lost with the process:
 * idempotency marks made by a run do not survive a crash.
 */
export class InMemoryGuardBackend implements GuardBackend {
  readonly #lanes = new Map<string, GuardState>();

  async get(scopeKey: string, lane: string): Promise<GuardState> {
    return this.#lanes.get(`${scopeKey}::${lane}`) ?? {};
  }

  async touch(scopeKey: string, lane: string, now: number): Promise<GuardState> {
    const key = `${scopeKey}::${lane}`;
    const state = { lastEventAt: now, startedAt: this.#lanes.get(key)?.startedAt ?? now };
    this.#lanes.set(key, state);
    return state;
  }
}
