import type { Clock } from '../ports/clock.js';
import type { SourceWindow } from './context.js';

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

/** Entries that expire, on the injected clock. */
class ExpiringMap<T> {
  readonly #entries = new Map<string, { value: T; expiresAt: number }>();
  #sweepAt = 1024;
  constructor(readonly clock: Clock) {}

  get(key: string): T | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: T, ttlMs: number): void {
    this.#entries.set(key, { value, expiresAt: this.clock.now() + ttlMs });
    // Sweep when the map has doubled since the last sweep: a long-lived process does not
    // keep every key it ever saw, and the sweeps cost O(1) per insertion on average.
    if (this.#entries.size >= this.#sweepAt) {
      this.sweep();
      this.#sweepAt = Math.max(1024, this.#entries.size * 2);
    }
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  sweep(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
  }
}

/** The ingress state in memory, for one process and for tests (on the simulated clock). */
export class InMemorySourceEventStore implements SourceEventStore {
  readonly #dedupe: ExpiringMap<true>;
  readonly #locks: ExpiringMap<true>;
  readonly #windows: ExpiringMap<SourceWindow>;

  constructor(clock: Clock) {
    this.#dedupe = new ExpiringMap(clock);
    this.#locks = new ExpiringMap(clock);
    this.#windows = new ExpiringMap(clock);
  }

  async tryDedupe(eventId: string, ttlMs: number): Promise<boolean> {
    if (this.#dedupe.get(eventId)) return false;
    this.#dedupe.set(eventId, true, ttlMs);
    return true;
  }

  async acquireScopeLock(scopeKey: string, ttlMs: number): Promise<boolean> {
    if (this.#locks.get(scopeKey)) return false;
    this.#locks.set(scopeKey, true, ttlMs);
    return true;
  }

  async releaseScopeLock(scopeKey: string): Promise<void> {
    this.#locks.delete(scopeKey);
  }

  async readWindow(scopeKey: string): Promise<SourceWindow | undefined> {
    return this.#windows.get(scopeKey);
  }

  async writeWindow(scopeKey: string, window: SourceWindow, ttlMs: number): Promise<void> {
    this.#windows.set(scopeKey, window, ttlMs);
  }
}
