import type { SessionLease } from '../ports/snapshot-store.js';

/** What the directory knows of one live session. */
export interface LiveSession {
  /** Clock time of the last command to it (idle passivation counts from here). */
  lastUsedAt: number;
  /** Our claim on it in the store, when there is a store. */
  lease?: SessionLease;
}

/**
 * The live sessions of one process (DESIGN §7), least recently used first: the host
 * runtime's answer to "is this session in memory, and since when is it idle". A session in
 * the store but not here is passivated. Plain Map, O(1) per operation, whatever the number
 * of sessions.
 */
export class SessionDirectory {
  readonly #live = new Map<string, LiveSession>();
  /**
   * The live sessions no passivation is under way for, in the same order: what the LRU limit
   * looks at. Kept apart so that a burst of activations over the limit, with thousands of
   * passivations in flight at the front of the order, does not walk past all of them on each
   * activation (quadratic in the burst).
   */
  readonly #staying = new Map<string, LiveSession>();

  /** True when the session is live here. */
  has(sessionId: string): boolean {
    return this.#live.has(sessionId);
  }

  /** The live session's entry, if it is live. */
  get(sessionId: string): LiveSession | undefined {
    return this.#live.get(sessionId);
  }

  /** Adds a live session (most recently used). */
  add(sessionId: string, entry: LiveSession): void {
    this.#live.delete(sessionId);
    this.#live.set(sessionId, entry);
    this.#staying.delete(sessionId);
    this.#staying.set(sessionId, entry);
  }

  /** Marks a command to the session: it becomes the most recently used. */
  touch(sessionId: string, at: number): void {
    const entry = this.#live.get(sessionId);
    if (!entry) return;
    entry.lastUsedAt = at;
    this.#live.delete(sessionId);
    this.#live.set(sessionId, entry);
    // Used again: a passivation in flight for it will keep it live.
    this.#staying.delete(sessionId);
    this.#staying.set(sessionId, entry);
  }

  /** A passivation of the session is under way: the LRU limit need not look at it again. */
  leaving(sessionId: string): void {
    this.#staying.delete(sessionId);
  }

  /**
   * A passivation ended and the session is still live (used meanwhile, or it failed): the LRU
   * limit may look at it again. Unless used meanwhile (then it is in place already), it comes
   * back as the most recently used: it waits out one more round of the limit.
   */
  stayed(sessionId: string): void {
    const entry = this.#live.get(sessionId);
    if (entry && !this.#staying.has(sessionId)) this.#staying.set(sessionId, entry);
  }

  /** Forgets a session (passivated or closed). */
  remove(sessionId: string): void {
    this.#live.delete(sessionId);
    this.#staying.delete(sessionId);
  }

  /** How many sessions are live. */
  get size(): number {
    return this.#live.size;
  }

  /** Live session ids, least recently used first. */
  ids(): string[] {
    return [...this.#live.keys()];
  }

  /** Live session ids no passivation is under way for, least recently used first. */
  staying(): IterableIterator<string> {
    return this.#staying.keys();
  }

  /** Live sessions with their entries, least recently used first. */
  entries(): IterableIterator<[string, LiveSession]> {
    return this.#live.entries();
  }
}
