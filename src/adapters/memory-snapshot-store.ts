import type { SnapshotStore, StoredRecord } from '../ports/snapshot-store.js';

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
