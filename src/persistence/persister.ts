import type { InspectionEvent } from 'xstate';
import { SYSTEM_ACTOR_ID } from '../base/actor-ids.js';
import type { Clock, TimerHandle } from '../ports/clock.js';
import type { SnapshotStore, StoredRecord } from '../ports/snapshot-store.js';
import { makeEnvelope, SYSTEM_RECORD_ID } from './envelope.js';

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
  /**
   * Called when a save fails, with the records it was writing (the changes stay pending;
   * the rolebox halts on it, SPEC §6).
   */
  onError(error: Error, recordIds: readonly string[]): void;
}

interface ActorLike {
  readonly systemId?: string | undefined;
  readonly _parent?: ActorLike | undefined;
}

/**
 * Writes what changed, and only that: one record per session subtree whose actors changed,
 * plus the system record when the system actor changed. Saves are debounced (`debounceMs`)
 * and written in one store transaction; `flush()` writes at once. The cost of a save
 * depends on the size of the changed sessions, not on how many sessions there are.
 */
export class Persister {
  readonly #host: PersisterHost;
  readonly #dirty = new Set<string>();
  readonly #deleted = new Set<string>();
  /** Which record an actor belongs to, once found. */
  readonly #recordOf = new WeakMap<object, string | null>();
  #timer: TimerHandle | undefined;
  #writing: Promise<void> = Promise.resolve();
  /** How many records were written (for benchmarks and tests). */
  recordsWritten = 0;

  constructor(host: PersisterHost) {
    this.#host = host;
  }

  /** The inspection observer that marks a session dirty when any actor of its subtree changes. */
  readonly observe = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot') return;
    const record = this.#recordFor(event.actorRef as unknown as ActorLike);
    if (record === null) return;
    if (record === SYSTEM_RECORD_ID) {
      // The root reports a snapshot for every event it routes; only its loop registry is
      // its own state worth saving.
      const registry = (event.snapshot as { context?: { loopRegistry?: unknown } }).context
        ?.loopRegistry;
      if (registry === this.#lastSystemState) return;
      this.#lastSystemState = registry;
    }
    this.mark(record);
  };
  #lastSystemState: unknown;

  /** Marks a record (a session id, or the system record) as changed. */
  mark(recordId: string): void {
    this.#deleted.delete(recordId);
    this.#dirty.add(recordId);
    this.#schedule();
  }

  /** Marks a closed session's record for deletion. */
  markDeleted(sessionId: string): void {
    this.#dirty.delete(sessionId);
    this.#deleted.add(sessionId);
    this.#schedule();
  }

  /** True while changes wait to be written. */
  get pending(): boolean {
    return this.#dirty.size > 0 || this.#deleted.size > 0;
  }

  /** Writes every pending change now; resolves when the store has them. */
  async flush(): Promise<void> {
    if (this.#timer !== undefined) {
      this.#host.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    // Serialise writes: a flush waits for the one in progress, then writes what is left.
    // (a failed write was reported already: it must not fail the next one)
    this.#writing = this.#writing.catch(() => {}).then(() => this.#write());
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

  async #write(): Promise<void> {
    if (!this.pending) return;
    const dirty = [...this.#dirty];
    const deleted = [...this.#deleted];
    this.#dirty.clear();
    this.#deleted.clear();
    const now = this.#host.clock.now();
    const records: StoredRecord[] = [];
    for (const id of dirty) {
      const snapshot =
        id === SYSTEM_RECORD_ID ? this.#host.systemSnapshot() : this.#host.sessionSnapshot(id);
      if (snapshot !== undefined)
        records.push({ id, data: JSON.stringify(makeEnvelope(id, snapshot, now)) });
    }
    try {
      if (records.length > 0) await this.#host.store.save(records);
      if (deleted.length > 0) await this.#host.store.delete(deleted);
      this.recordsWritten += records.length;
    } catch (error) {
      // Nothing is lost: the records stay dirty and the next flush retries them.
      for (const id of dirty) if (!this.#deleted.has(id)) this.#dirty.add(id);
      for (const id of deleted) if (!this.#dirty.has(id)) this.#deleted.add(id);
      this.#host.onError(
        error instanceof Error ? error : new Error(String(error)),
        [...dirty, ...deleted].filter((id) => id !== SYSTEM_RECORD_ID),
      );
      throw error;
    }
  }

  /** The record an actor's changes belong to: its session, the system, or none. */
  #recordFor(actor: ActorLike): string | null {
    const known = this.#recordOf.get(actor);
    if (known !== undefined) return known;
    let record: string | null = null;
    for (let current: ActorLike | undefined = actor; current; current = current._parent) {
      const systemId = current.systemId;
      if (systemId?.startsWith('session:')) {
        record = systemId.slice('session:'.length);
        break;
      }
      if (systemId === SYSTEM_ACTOR_ID) {
        record = SYSTEM_RECORD_ID;
        break;
      }
    }
    this.#recordOf.set(actor, record);
    return record;
  }
}
