import { realClock } from '../adapters/real-clock.js';
import type { Clock } from '../ports/clock.js';
import { checkMaxEntries, ExpiringMap } from './expiring-map.js';

/** The state of one guard lane in one scope. */
export interface GuardState {
  /** When the lane was last touched. */
  readonly lastEventAt?: number;
  /** When the lane was first touched (kept by later touches). */
  readonly startedAt?: number;
}

/** How long a lane lives after its last touch when the caller names no TTL (an hour). */
export const DEFAULT_GUARD_TTL_MS = 3_600_000;

/**
 * How many guard lanes the in-memory backend holds at most (10 000). When full, the lane
 * touched longest ago is forgotten: it then reads as never touched (a debounce or throttle
 * lets an event through, an idempotency mark is lost and its action may run again).
 */
export const DEFAULT_MAX_GUARD_LANES = 10_000;

/**
 * Where guard lanes live (debounce, throttle, outer timeout, action idempotency). Async so
 * a shared backend (Redis) can stand behind it for scale-out. A lane expires `ttlMs` after
 * its last touch and then reads as never touched, so state for scopes that went quiet does
 * not pile up.
 */
export interface GuardBackend {
  /** The lane's state; `{}` for a lane never touched, or expired. */
  get(scopeKey: string, lane: string): Promise<GuardState>;
  /**
   * Sets `lastEventAt` to `now` (and `startedAt` the first time) and keeps the lane for
   * `ttlMs` more (the pipeline passes `limits.guardTtlMs`); returns the new state.
   */
  touch(scopeKey: string, lane: string, now: number, ttlMs?: number): Promise<GuardState>;
}

/**
 * Guard lanes in memory, expiring on `clock` (give it the pipeline's clock; the pipeline's
 * own default backend has it). Use when: one process, tests. The state is lost with the
 * process: idempotency marks made by a run do not survive a crash.
 */
export class InMemoryGuardBackend implements GuardBackend {
  readonly #lanes: ExpiringMap<GuardState>;

  /**
   * `clock` decides when lanes expire (default: the real clock); at most `maxLanes` lanes
   * are kept, the one touched longest ago evicted first. Throws: `invalid_argument` naming
   * a `maxLanes` that is not a whole number ≥ 1.
   */
  constructor(clock: Clock = realClock, maxLanes: number = DEFAULT_MAX_GUARD_LANES) {
    this.#lanes = new ExpiringMap(clock, checkMaxEntries('maxLanes', maxLanes));
  }

  /** How many lanes are held (expired ones not yet swept included): for tests and benches. */
  get size(): number {
    return this.#lanes.size;
  }

  async get(scopeKey: string, lane: string): Promise<GuardState> {
    return { ...this.#lanes.get(laneKey(scopeKey, lane)) };
  }

  async touch(
    scopeKey: string,
    lane: string,
    now: number,
    ttlMs: number = DEFAULT_GUARD_TTL_MS,
  ): Promise<GuardState> {
    const key = laneKey(scopeKey, lane);
    const state = { lastEventAt: now, startedAt: this.#lanes.get(key)?.startedAt ?? now };
    this.#lanes.set(key, state, ttlMs);
    return { ...state };
  }
}

/** NUL cannot be typed into a scope key or lane by accident: `a::b` + `c` ≠ `a` + `b::c`. */
function laneKey(scopeKey: string, lane: string): string {
  return `${scopeKey}\u0000${lane}`;
}
