/** One stored record: a serialized snapshot envelope under its id. */
export interface StoredRecord {
  readonly id: string;
  /** The envelope as JSON text. */
  readonly data: string;
}

/**
 * Where rolebox keeps its snapshots: one record per session subtree, plus one for the
 * system actor. Records are opaque JSON text here; the persistence layer validates them.
 */
export interface SnapshotStore {
  /** Every record, for restoring at start. */
  loadAll(): Promise<StoredRecord[]>;
  /** One record, or undefined. */
  load(id: string): Promise<string | undefined>;
  /** Writes records atomically: all of them or none. */
  save(records: readonly StoredRecord[]): Promise<void>;
  /** Removes records (missing ids are ignored). */
  delete(ids: readonly string[]): Promise<void>;
  /** Releases the store (rb.stop calls it after the last flush). */
  close?(): Promise<void>;
}

/**
 * Keeps records in memory. Use when: tests, or a host that persists elsewhere.
 * `records` is exposed so tests can corrupt or inspect what was saved.
 */
export class MemorySnapshotStore implements SnapshotStore {
  /** The stored text by id. */
  readonly records = new Map<string, string>();
  /** How many save calls were made (each one a transaction). */
  saves = 0;

  async loadAll(): Promise<StoredRecord[]> {
    return [...this.records].map(([id, data]) => ({ id, data }));
  }

  async load(id: string): Promise<string | undefined> {
    return this.records.get(id);
  }

  async save(records: readonly StoredRecord[]): Promise<void> {
    this.saves++;
    for (const record of records) this.records.set(record.id, record.data);
  }

  async delete(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.records.delete(id);
  }
}
