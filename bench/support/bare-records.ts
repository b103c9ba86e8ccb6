// Where the bare-machine baselines keep their sessions' snapshots: the least a store can do,
// so that the baseline pays for the medium what any system keeping its workflows there
// pays — a Map in memory, or one row per session in a SQLite file (WAL, synchronous NORMAL,
// as rolebox's SqliteSnapshotStore and the LangGraph connection are set), each write its
// own transaction. No claim, lease, checksum, wake-up or envelope.
import Database from 'better-sqlite3';

/** Session snapshots as JSON text by session id. */
export interface BareRecords {
  get(id: string): string | undefined;
  set(id: string, text: string): void;
  /** The SQLite file, when the records are kept in one. */
  readonly file?: string;
  close(): void;
}

/** Records in a Map. */
export function memoryRecords(): BareRecords {
  const records = new Map<string, string>();
  return {
    get: (id) => records.get(id),
    set: (id, text) => void records.set(id, text),
    close: () => {},
  };
}

/** Records in the SQLite file `file`, opened now; `close` closes it. */
export function sqliteRecords(file: string): BareRecords {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, data TEXT NOT NULL)');
  const read = db.prepare<[string], { data: string }>('SELECT data FROM sessions WHERE id = ?');
  const write = db.prepare('INSERT OR REPLACE INTO sessions (id, data) VALUES (?, ?)');
  return {
    get: (id) => read.get(id)?.data,
    set: (id, text) => void write.run(id, text),
    file,
    close: () => db.close(),
  };
}

/** `records` with a `close` that leaves its connection open (its owner closes it). */
export function sharedRecords(records: BareRecords): BareRecords {
  return {
    get: (id) => records.get(id),
    set: (id, text) => records.set(id, text),
    ...(records.file ? { file: records.file } : {}),
    close: () => {},
  };
}
