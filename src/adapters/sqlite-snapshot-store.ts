import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { describeValue, RoleboxError } from '../errors.js';
import type { SnapshotStore, StoredRecord } from '../ports/snapshot-store.js';

/** Where the CLI keeps its state by default. */
export const DEFAULT_SQLITE_PATH = '.rolebox/state.db';

/**
 * The embedded default store: one SQLite file (better-sqlite3), WAL mode, one row per
 * record, every save one transaction. A process that crashes mid-save leaves the previous
 * version of every row intact. `synchronous=NORMAL`: committed saves survive a crash of
 * the process; a power loss may lose the last ones.
 */
export class SqliteSnapshotStore implements SnapshotStore {
  /** The database file. */
  readonly path: string;
  readonly #db: Database.Database;
  readonly #upsert: Database.Statement<[string, string, number]>;
  readonly #select: Database.Statement<[string], { data: string }>;
  readonly #selectAll: Database.Statement<[], StoredRecord>;
  readonly #remove: Database.Statement<[string]>;

  /** Opens (or creates) the database. Throws: `store_failed` naming the path and why. */
  constructor(path: string = DEFAULT_SQLITE_PATH) {
    this.path = path;
    try {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      this.#db = new Database(path);
      this.#db.pragma('journal_mode = WAL');
      this.#db.pragma('synchronous = NORMAL');
      // Session rows are rewritten at random: keep the hot part of a large store in memory
      // (64 MiB) so a save costs the same at 100 or 10 000 sessions.
      this.#db.pragma('cache_size = -65536');
      this.#db.exec(
        'CREATE TABLE IF NOT EXISTS snapshots (id TEXT PRIMARY KEY, data TEXT NOT NULL, saved_at INTEGER NOT NULL)',
      );
    } catch (error) {
      throw new RoleboxError(
        'store_failed',
        `cannot open snapshot store ${describeValue(path)}: ${(error as Error).message}`,
        { path },
      );
    }
    this.#upsert = this.#db.prepare(
      'INSERT INTO snapshots (id, data, saved_at) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET data = excluded.data, saved_at = excluded.saved_at',
    );
    this.#select = this.#db.prepare('SELECT data FROM snapshots WHERE id = ?');
    this.#selectAll = this.#db.prepare('SELECT id, data FROM snapshots ORDER BY id');
    this.#remove = this.#db.prepare('DELETE FROM snapshots WHERE id = ?');
  }

  async loadAll(): Promise<StoredRecord[]> {
    return this.#run('read', () => this.#selectAll.all());
  }

  async load(id: string): Promise<string | undefined> {
    return this.#run('read', () => this.#select.get(id)?.data);
  }

  async save(records: readonly StoredRecord[]): Promise<void> {
    const now = Date.now();
    this.#run('write', () =>
      this.#db.transaction(() => {
        for (const record of records) this.#upsert.run(record.id, record.data, now);
      })(),
    );
  }

  async delete(ids: readonly string[]): Promise<void> {
    this.#run('write', () =>
      this.#db.transaction(() => {
        for (const id of ids) this.#remove.run(id);
      })(),
    );
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  /** Writes a record's raw text: for tests that need a corrupt row. */
  putRaw(id: string, data: string): void {
    this.#upsert.run(id, data, Date.now());
  }

  #run<T>(what: 'read' | 'write', operation: () => T): T {
    try {
      return operation();
    } catch (error) {
      throw new RoleboxError(
        'store_failed',
        `snapshot store ${describeValue(this.path)}: ${what} failed: ${(error as Error).message}`,
        {
          path: this.path,
        },
      );
    }
  }
}
