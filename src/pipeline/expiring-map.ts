import { describeValue, RoleboxError } from '../errors.js';
import type { Clock } from '../ports/clock.js';

/** How many entries at the front of the map each write looks at for expiry. */
const SWEEP_PER_WRITE = 2;

/**
 * Entries that expire, on the injected clock, at most `maxEntries` of them. Internal to the
 * in-memory backends. The map is kept in the order of last write (a write moves its key to
 * the end), so the front holds the oldest entries: with one TTL per map, the first to
 * expire. Each write sweeps a few expired entries off the front, so memory follows the
 * live entries instead of growing until a full sweep.
 */
export class ExpiringMap<T> {
  readonly #entries = new Map<string, { value: T; expiresAt: number }>();
  #writesSinceSweep = 0;
  /** Expiry is read on `clock`; `maxEntries` bounds the size (no bound by default). */
  constructor(
    readonly clock: Clock,
    readonly maxEntries: number = Number.POSITIVE_INFINITY,
  ) {}

  /** How many entries are held (expired ones not yet swept included). */
  get size(): number {
    return this.#entries.size;
  }

  /** The live value under `key`; an expired one is dropped. */
  get(key: string): T | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /**
   * Stores `value` until `ttlMs` from now. When the map is full of live entries, the oldest
   * written is evicted to make room; `{ evict: false }` refuses instead (answers false and
   * stores nothing), for entries that must not be forgotten while live (a held lock).
   */
  set(key: string, value: T, ttlMs: number, { evict = true } = {}): boolean {
    const now = this.clock.now();
    this.#sweepFront(now);
    if (!this.#entries.has(key) && this.#entries.size >= this.maxEntries) {
      if (!evict) {
        this.sweep();
        if (this.#entries.size >= this.maxEntries) return false;
      } else this.#evictOldest();
    }
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: now + ttlMs });
    // Backstop for maps whose entries have different TTLs (an expired entry can sit behind
    // a live one at the front): sweep all once per as many writes as there are entries
    // (at least 1024), which costs O(1) per write on average, bounded map or not.
    if (++this.#writesSinceSweep >= Math.max(1024, this.#entries.size)) {
      this.sweep();
      this.#writesSinceSweep = 0;
    }
    return true;
  }

  /** Forgets `key`. */
  delete(key: string): void {
    this.#entries.delete(key);
  }

  /** Drops every expired entry. */
  sweep(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
  }

  /** Drops expired entries at the front, at most a few, stopping at the first live one. */
  #sweepFront(now: number): void {
    let looked = 0;
    for (const [key, entry] of this.#entries) {
      if (looked++ >= SWEEP_PER_WRITE || entry.expiresAt > now) return;
      this.#entries.delete(key);
    }
  }

  #evictOldest(): void {
    for (const key of this.#entries.keys()) {
      this.#entries.delete(key);
      return;
    }
  }
}

/**
 * `value` checked as an entry bound (`option` names it in the error). Throws:
 * `invalid_argument` naming the value when it is not a whole number ≥ 1.
 */
export function checkMaxEntries(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new RoleboxError(
      'invalid_argument',
      `${option} must be a whole number ≥ 1, got ${describeValue(value)}`,
      { option, value },
    );
  }
  return value;
}
