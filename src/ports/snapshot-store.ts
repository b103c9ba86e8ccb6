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
