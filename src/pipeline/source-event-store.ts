import type { Clock } from '../ports/clock.js';
import type { SourceWindow } from './context.js';
import { ExpiringMap } from './expiring-map.js';

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
