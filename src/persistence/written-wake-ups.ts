import type { SessionLease, WakeUp } from '../ports/snapshot-store.js';

/** A wake-up as last written, and the lease it was written under. */
interface Written {
  readonly token: number;
  readonly wakeUp: WakeUp;
}

/**
 * Whether two wake-ups of a session wake it the same way: the same worker task, and the
 * same time, or both due already (`at` ≤ `now`: either wakes the session at once on a
 * restart, so the row written first stands for both).
 */
export function sameWakeUp(stored: WakeUp, next: WakeUp, now: number): boolean {
  if (stored.taskId !== next.taskId) return false;
  if (stored.at === next.at) return true;
  return stored.at !== undefined && next.at !== undefined && stored.at <= now && next.at <= now;
}

/**
 * The wake-up rows the persister wrote, per session, so that a save leaves out a session's
 * wake-up when the stored row already says the same (SPEC §6: the row is part of the save,
 * its write is the same whether skipped or repeated). A session's effects mark it due at
 * every save while they are pending (`at` = now): without this, each of an effect's saves
 * rewrites the row and its time index, about a third of a small save's cost in SQLite.
 * Trusted only under the same lease: no other process writes a session's rows while we hold
 * it, and a new lease (after another owner may have written) starts over.
 */
export class WrittenWakeUps {
  readonly #written = new Map<string, Written>();

  /** Whether `wakeUp` must be written: the stored row is not known to say the same. */
  needsWrite(wakeUp: WakeUp, lease: SessionLease | undefined, now: number): boolean {
    const last = this.#written.get(wakeUp.sessionId);
    if (!last || !lease || last.token !== lease.token) return true;
    return !sameWakeUp(last.wakeUp, wakeUp, now);
  }

  /** Remembers a wake-up the store accepted, written under `lease`. */
  written(wakeUp: WakeUp, lease: SessionLease | undefined): void {
    if (lease) this.#written.set(wakeUp.sessionId, { token: lease.token, wakeUp });
    else this.#written.delete(wakeUp.sessionId);
  }

  /** Forgets what was written for a session (refused, failed, deleted): its next save writes it. */
  forget(sessionId: string): void {
    this.#written.delete(sessionId);
  }
}
