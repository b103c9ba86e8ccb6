import { checkOptionNames } from '../base/option-names.js';
import type { Clock } from '../ports/clock.js';
import type { SourceWindow } from './context.js';
import { checkMaxEntries, ExpiringMap } from './expiring-map.js';

/**
 * The ingress's shared state: dedupe keys, scope locks and windows, each with a time to
 * live. Async and small so a shared backend (Redis) can stand behind it for scale-out.
 */
export interface SourceEventStore {
  /** Marks `eventId` seen for `ttlMs`; false when it was already seen (a duplicate). */
  tryDedupe(eventId: string, ttlMs: number): Promise<boolean>;
  /** Takes the scope's lock for `ttlMs` (so a crashed holder cannot keep it); false when someone holds it. */
  acquireScopeLock(scopeKey: string, ttlMs: number): Promise<boolean>;
  releaseScopeLock(scopeKey: string): Promise<void>;
  readWindow(scopeKey: string): Promise<SourceWindow | undefined>;
  writeWindow(scopeKey: string, window: SourceWindow, ttlMs: number): Promise<void>;
}

/** How many entries each in-memory ingress map holds at most. */
export interface SourceEventStoreBounds {
  /** Dedupe keys (10 000); when full the oldest key is forgotten before its window ends. */
  readonly maxDedupeKeys: number;
  /** Scope locks held at once (10 000); when full a new lock waits, a held one is never dropped. */
  readonly maxScopeLocks: number;
  /** Scope windows (10 000); when full the oldest written window is forgotten. */
  readonly maxWindows: number;
}

/** The default bounds. */
export const DEFAULT_SOURCE_EVENT_BOUNDS: SourceEventStoreBounds = {
  maxDedupeKeys: 10_000,
  maxScopeLocks: 10_000,
  maxWindows: 10_000,
};

/**
 * The ingress state in memory, for one process and for tests (on the simulated clock).
 * Each map is bounded in entries (see {@link SourceEventStoreBounds}); expired entries are
 * swept a few per write.
 */
export class InMemorySourceEventStore implements SourceEventStore {
  readonly #dedupe: ExpiringMap<true>;
  readonly #locks: ExpiringMap<true>;
  readonly #windows: ExpiringMap<SourceWindow>;

  /**
   * Expiry on `clock`; `bounds` overrides the default sizes. Throws: `invalid_argument`
   * naming a bound that is not a whole number ≥ 1, or an unknown bound name.
   */
  constructor(clock: Clock, bounds: Partial<SourceEventStoreBounds> = {}) {
    checkOptionNames(
      bounds,
      Object.keys(DEFAULT_SOURCE_EVENT_BOUNDS),
      'InMemorySourceEventStore bounds',
      'bound',
    );
    const sizes = { ...DEFAULT_SOURCE_EVENT_BOUNDS, ...bounds };
    for (const [name, value] of Object.entries(sizes)) checkMaxEntries(name, value);
    this.#dedupe = new ExpiringMap(clock, sizes.maxDedupeKeys);
    this.#locks = new ExpiringMap(clock, sizes.maxScopeLocks);
    this.#windows = new ExpiringMap(clock, sizes.maxWindows);
  }

  /** Entries held per map (expired ones not yet swept included): for tests and benches. */
  get sizes(): { dedupeKeys: number; scopeLocks: number; windows: number } {
    return {
      dedupeKeys: this.#dedupe.size,
      scopeLocks: this.#locks.size,
      windows: this.#windows.size,
    };
  }

  async tryDedupe(eventId: string, ttlMs: number): Promise<boolean> {
    if (this.#dedupe.get(eventId)) return false;
    this.#dedupe.set(eventId, true, ttlMs);
    return true;
  }

  // A full lock map answers false, as a contended lock does: the ingress waits and retries,
  // and no held lock is ever evicted to make room.
  async acquireScopeLock(scopeKey: string, ttlMs: number): Promise<boolean> {
    if (this.#locks.get(scopeKey)) return false;
    return this.#locks.set(scopeKey, true, ttlMs, { evict: false });
  }

  async releaseScopeLock(scopeKey: string): Promise<void> {
    this.#locks.delete(scopeKey);
  }

  // Copies on the way in and out, as a shared store would: a caller changing the object it
  // wrote or read afterwards does not change the stored window.
  async readWindow(scopeKey: string): Promise<SourceWindow | undefined> {
    const window = this.#windows.get(scopeKey);
    return window === undefined ? undefined : { ...window };
  }

  async writeWindow(scopeKey: string, window: SourceWindow, ttlMs: number): Promise<void> {
    this.#windows.set(scopeKey, { ...window }, ttlMs);
  }
}
