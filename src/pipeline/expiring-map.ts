import type { Clock } from '../ports/clock.js';

/** Entries that expire, on the injected clock. Internal to the in-memory backends. */
export class ExpiringMap<T> {
  readonly #entries = new Map<string, { value: T; expiresAt: number }>();
  #sweepAt = 1024;
  /** Expiry is read on `clock`. */
  constructor(readonly clock: Clock) {}

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

  /** Stores `value` until `ttlMs` from now. */
  set(key: string, value: T, ttlMs: number): void {
    this.#entries.set(key, { value, expiresAt: this.clock.now() + ttlMs });
    // Sweep when the map has doubled since the last sweep: a long-lived process does not
    // keep every key it ever saw, and the sweeps cost O(1) per insertion on average.
    if (this.#entries.size >= this.#sweepAt) {
      this.sweep();
      this.#sweepAt = Math.max(1024, this.#entries.size * 2);
    }
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
}
