import type { Clock, TimerHandle } from '../ports/clock.js';
import type { SessionLease, SnapshotStore, StoredRecord, WakeUp } from '../ports/snapshot-store.js';
import { refusedIn } from '../ports/store-contract.js';
import { effectResultRecordId } from './effect-result-record.js';
import { encodeEnvelope, makeEnvelope, SYSTEM_RECORD_ID } from './envelope.js';
import { WrittenWakeUps } from './written-wake-ups.js';

/** What the persister needs from its rolebox. */
export interface PersisterHost {
  readonly store: SnapshotStore;
  readonly clock: Clock;
  /** The debounce window: changes within it are written together. */
  readonly debounceMs: number;
  /** The persisted snapshot of a live session subtree; undefined when it is not live. */
  sessionSnapshot(sessionId: string): unknown;
  /** The persisted state of the system actor itself (without its sessions). */
  systemSnapshot(): unknown;
  /** Why a passivated session must be woken, as of its live state (written with its record). */
  wakeUpOf(sessionId: string): WakeUp;
  /** Our lease on a session, when we hold one (saves of the session are fenced by it). */
  leaseOf(sessionId: string): SessionLease | undefined;
  /** Sessions whose save the store refused: another process owns them now. */
  onRefused(sessionIds: readonly string[]): void;
  /** Sessions whose records the store just took (written, not refused): their step is saved. */
  onSaved?(sessionIds: readonly string[]): void;
  /**
   * Called when a save fails, with the records it was writing (the changes stay pending;
   * the rolebox halts on it, SPEC §6).
   */
  onError(error: Error, recordIds: readonly string[]): void;
}

/**
 * Writes what changed, and only that: one record per session the runtime marked (a
 * command went to it, or it answered one), with its wake-up in the same transaction, plus
 * the system record when the loop registry changed. Saves are debounced (`debounceMs`) and
 * fenced by our leases; `flush()` writes at once. The cost of a save depends on the size of
 * the changed sessions, not on how many sessions there are. A wake-up the store already
 * holds (under the same lease) is not written again ({@link WrittenWakeUps}).
 */
export class Persister {
  readonly #host: PersisterHost;
  readonly #dirty = new Set<string>();
  readonly #deleted = new Set<string>();
  #timer: TimerHandle | undefined;
  #writing: Promise<void> = Promise.resolve();
  #lastRegistry: unknown;
  readonly #wakeUpsWritten = new WrittenWakeUps();
  /** How many records were written (for benchmarks and tests). */
  recordsWritten = 0;

  constructor(host: PersisterHost) {
    this.#host = host;
  }

  /** Marks a record (a session id, or the system record) as changed. */
  mark(recordId: string): void {
    this.#deleted.delete(recordId);
    this.#dirty.add(recordId);
    this.#schedule();
  }

  /** Marks the system record when the registry is not the one last written. */
  markRegistry(registry: unknown): void {
    if (registry === this.#lastRegistry) return;
    this.#lastRegistry = registry;
    this.mark(SYSTEM_RECORD_ID);
  }

  /** Marks a closed session's record for deletion. */
  markDeleted(sessionId: string): void {
    this.#dirty.delete(sessionId);
    this.#deleted.add(sessionId);
    this.#schedule();
  }

  /**
   * Forgets what it wrote of a session that is no longer live here (passivated: its lease
   * released), so that it holds nothing per passivated session; its next save writes all.
   */
  forget(sessionId: string): void {
    this.#wakeUpsWritten.forget(sessionId);
  }

  /** True while changes wait to be written. */
  get pending(): boolean {
    return this.#dirty.size > 0 || this.#deleted.size > 0;
  }

  /** True while this session's changes wait to be written. */
  isPending(recordId: string): boolean {
    return this.#dirty.has(recordId) || this.#deleted.has(recordId);
  }

  /**
   * Writes every pending change now, with `extra` records (not sessions': an effect's
   * result) in the same transaction; resolves when the store has them.
   */
  async flush(extra: readonly StoredRecord[] = []): Promise<void> {
    if (this.#timer !== undefined) {
      this.#host.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    // Serialise writes: a flush waits for the one in progress, then writes what is left.
    // (a failed write was reported already: it must not fail the next one)
    this.#writing = this.#writing.catch(() => {}).then(() => this.#write(extra));
    await this.#writing;
  }

  /** Cancels the pending timer (rb.stop flushes first). */
  dispose(): void {
    if (this.#timer !== undefined) this.#host.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    this.#timer = this.#host.clock.setTimeout(() => {
      this.#timer = undefined;
      // A failure was reported through onError and the changes stay pending.
      this.flush().catch(() => {});
    }, this.#host.debounceMs);
  }

  async #write(extra: readonly StoredRecord[]): Promise<void> {
    if (!this.pending && extra.length === 0) return;
    const dirty = [...this.#dirty];
    const deleted = [...this.#deleted];
    this.#dirty.clear();
    this.#deleted.clear();
    const now = this.#host.clock.now();
    const { records, wakeUps, leases } = this.#collect(dirty, now);
    const collected = records.length;
    records.push(...extra);
    for (const id of deleted) {
      this.#wakeUpsWritten.forget(id);
      const lease = this.#host.leaseOf(id);
      if (lease) leases.push(lease);
    }
    try {
      let refused: readonly string[] = [];
      // The answers are checked: a store written for the 0.1 port answers nothing.
      if (records.length > 0)
        refused = refusedIn(await this.#host.store.save(records, leases, { now, wakeUps }), 'save');
      if (deleted.length > 0)
        refused = [
          ...refused,
          ...refusedIn(
            await this.#host.store.delete(withResultRecords(deleted), leases, { now }),
            'delete',
          ),
        ];
      this.recordsWritten += collected;
      this.#wroteWakeUps(wakeUps, leases, refused);
      if (refused.length > 0) this.#host.onRefused(refused);
      this.#savedSessions(records.slice(0, collected), refused);
    } catch (error) {
      // Nothing is lost: the records stay dirty and the next flush retries them.
      for (const id of dirty) if (!this.#deleted.has(id)) this.#dirty.add(id);
      for (const id of deleted) if (!this.#dirty.has(id)) this.#deleted.add(id);
      for (const wakeUp of wakeUps) this.#wakeUpsWritten.forget(wakeUp.sessionId);
      this.#host.onError(
        error instanceof Error ? error : new Error(String(error)),
        [...dirty, ...deleted].filter((id) => id !== SYSTEM_RECORD_ID),
      );
      throw error;
    }
  }

  /**
   * The records of the dirty ids that are still there, with their leases, and the wake-ups
   * the store does not hold yet (one the store holds under the same lease is left out).
   */
  #collect(
    dirty: readonly string[],
    now: number,
  ): { records: StoredRecord[]; wakeUps: WakeUp[]; leases: SessionLease[] } {
    const records: StoredRecord[] = [];
    const wakeUps: WakeUp[] = [];
    const leases: SessionLease[] = [];
    for (const id of dirty) {
      const isSystem = id === SYSTEM_RECORD_ID;
      const snapshot = isSystem ? this.#host.systemSnapshot() : this.#host.sessionSnapshot(id);
      if (snapshot === undefined) continue;
      records.push({ id, data: encodeEnvelope(makeEnvelope(id, snapshot, now)) });
      if (isSystem) continue;
      const lease = this.#host.leaseOf(id);
      if (lease) leases.push(lease);
      const wakeUp = this.#host.wakeUpOf(id);
      if (this.#wakeUpsWritten.needsWrite(wakeUp, lease, now)) wakeUps.push(wakeUp);
    }
    return { records, wakeUps, leases };
  }

  /** Tells the host which sessions' records the store took (not the system record, not refused ones). */
  #savedSessions(records: readonly StoredRecord[], refused: readonly string[]): void {
    if (!this.#host.onSaved) return;
    const saved = records
      .map((record) => record.id)
      .filter((id) => id !== SYSTEM_RECORD_ID && !refused.includes(id));
    if (saved.length > 0) this.#host.onSaved(saved);
  }

  /** Remembers the wake-ups the store took; a refused session's is forgotten. */
  #wroteWakeUps(
    wakeUps: readonly WakeUp[],
    leases: readonly SessionLease[],
    refused: readonly string[],
  ): void {
    for (const wakeUp of wakeUps) {
      if (refused.includes(wakeUp.sessionId)) this.#wakeUpsWritten.forget(wakeUp.sessionId);
      else
        this.#wakeUpsWritten.written(
          wakeUp,
          leases.find((lease) => lease.sessionId === wakeUp.sessionId),
        );
    }
  }
}

/** Deleted sessions' ids, each with its effect-result record (deleted with it). */
function withResultRecords(sessionIds: readonly string[]): string[] {
  return sessionIds.flatMap((id) =>
    id === SYSTEM_RECORD_ID ? [id] : [id, effectResultRecordId(id)],
  );
}
