import type { Clock } from '../ports/clock.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import { DEFAULT_GUARD_TTL_MS, type GuardBackend, type GuardState } from './guard-backend.js';
import { StoredExpiringRecords } from './stored-expiring-records.js';

/** Where guard lanes are stored: `$pipeline:guard:<scope key>\u0000<lane>` (encoded). */
export const GUARD_LANE_PREFIX = '$pipeline:guard:';

const isTime = (value: unknown) => value === undefined || typeof value === 'number';

/** A stored lane's state, or undefined when it is not one. */
function guardState(value: unknown): GuardState | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { lastEventAt, startedAt } = value as Record<string, unknown>;
  if (!isTime(lastEventAt) || !isTime(startedAt)) return undefined;
  return {
    ...(lastEventAt === undefined ? {} : { lastEventAt: lastEventAt as number }),
    ...(startedAt === undefined ? {} : { startedAt: startedAt as number }),
  };
}

/**
 * Guard lanes (debounce, throttle, outer timeout, action idempotency) kept in a
 * SnapshotStore, so they survive a restart: an action marked applied before a crash is not
 * applied again after it, a throttle holds across it. Use when: one process per store (the
 * rolebox's SQLite store is fine); see the README (pipeline, guard state) for what several
 * processes need. A lane expires `ttlMs` after its last touch and its record is deleted.
 */
export class StoreGuardBackend implements GuardBackend {
  readonly #lanes: StoredExpiringRecords<GuardState>;

  /** Lanes in `store`, expiring on `clock` (give it the pipeline's clock). */
  constructor(store: SnapshotStore, clock: Clock) {
    this.#lanes = new StoredExpiringRecords(store, GUARD_LANE_PREFIX, clock, guardState);
  }

  async get(scopeKey: string, lane: string): Promise<GuardState> {
    return (await this.#lanes.get(laneKey(scopeKey, lane))) ?? {};
  }

  touch(
    scopeKey: string,
    lane: string,
    now: number,
    ttlMs: number = DEFAULT_GUARD_TTL_MS,
  ): Promise<GuardState> {
    return this.#lanes.update(laneKey(scopeKey, lane), (current) => {
      const state = { lastEventAt: now, startedAt: current?.startedAt ?? now };
      return { result: { ...state }, value: state, ttlMs };
    });
  }

  /** Deletes the records of expired lanes now (they are also swept as writes go on). */
  async sweep(): Promise<void> {
    await this.#lanes.sweep();
  }
}

/** NUL cannot be typed into a scope key or lane by accident: `a::b` + `c` ≠ `a` + `b::c`. */
function laneKey(scopeKey: string, lane: string): string {
  return `${scopeKey}\u0000${lane}`;
}
