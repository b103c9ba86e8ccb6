import type { Clock } from '../ports/clock.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import type { SourceWindow } from './context.js';
import { ExpiringMap } from './expiring-map.js';
import { DEFAULT_SOURCE_EVENT_BOUNDS, type SourceEventStore } from './source-event-store.js';
import { StoredExpiringRecords } from './stored-expiring-records.js';

/** Where dedupe marks are stored: `$pipeline:dedupe:<event id>` (encoded). */
export const DEDUPE_PREFIX = '$pipeline:dedupe:';
/** Where scope windows are stored: `$pipeline:window:<scope key>` (encoded). */
export const WINDOW_PREFIX = '$pipeline:window:';

/** A stored window, or undefined when it is not one. */
function sourceWindow(value: unknown): SourceWindow | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { eventCount, lastEventAt, lastEventId } = value as Record<string, unknown>;
  if (typeof eventCount !== 'number' || typeof lastEventAt !== 'number') return undefined;
  if (typeof lastEventId !== 'string') return undefined;
  return { eventCount, lastEventAt, lastEventId };
}

/**
 * The ingress state kept in a SnapshotStore, so that it survives a restart: an event sent
 * again after a crash is still a duplicate within its dedupe window, and a scope's window
 * goes on counting. Scope locks stay in memory (bounded like the in-memory store's): a lock
 * guards an intake in flight, and a crash ends every intake, so a stored lock would only
 * make the next process wait out its TTL. Use when: one process per store (several
 * processes sharing ingress state need a backend with a compare-and-set of its own).
 */
export class StoreSourceEventStore implements SourceEventStore {
  readonly #dedupe: StoredExpiringRecords<true>;
  readonly #windows: StoredExpiringRecords<SourceWindow>;
  readonly #locks: ExpiringMap<true>;

  /** State in `store`, expiring on `clock`; at most `maxScopeLocks` locks held at once. */
  constructor(
    store: SnapshotStore,
    clock: Clock,
    maxScopeLocks: number = DEFAULT_SOURCE_EVENT_BOUNDS.maxScopeLocks,
  ) {
    this.#dedupe = new StoredExpiringRecords(store, DEDUPE_PREFIX, clock, (value) =>
      value === true ? true : undefined,
    );
    this.#windows = new StoredExpiringRecords(store, WINDOW_PREFIX, clock, sourceWindow);
    this.#locks = new ExpiringMap(clock, maxScopeLocks);
  }

  tryDedupe(eventId: string, ttlMs: number): Promise<boolean> {
    return this.#dedupe.update(eventId, (seen) =>
      seen ? { result: false, write: false } : { result: true, value: true, ttlMs },
    );
  }

  // As in memory: a full lock map answers false, as a contended lock does.
  async acquireScopeLock(scopeKey: string, ttlMs: number): Promise<boolean> {
    if (this.#locks.get(scopeKey)) return false;
    return this.#locks.set(scopeKey, true, ttlMs, { evict: false });
  }

  async releaseScopeLock(scopeKey: string): Promise<void> {
    this.#locks.delete(scopeKey);
  }

  readWindow(scopeKey: string): Promise<SourceWindow | undefined> {
    return this.#windows.get(scopeKey);
  }

  async writeWindow(scopeKey: string, window: SourceWindow, ttlMs: number): Promise<void> {
    const { eventCount, lastEventAt, lastEventId } = window;
    await this.#windows.update(scopeKey, () => ({
      result: undefined,
      value: { eventCount, lastEventAt, lastEventId },
      ttlMs,
    }));
  }

  /** Deletes the records of expired dedupe marks and windows now (also swept as writes go on). */
  async sweep(): Promise<void> {
    await Promise.all([this.#dedupe.sweep(), this.#windows.sweep()]);
  }
}
