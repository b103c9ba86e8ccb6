import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { describeValue, RoleboxError } from '../errors.js';
import type {
  ClaimedRecord,
  ClaimResult,
  FenceOptions,
  ImmediateSessionAccess,
  LoadWakeUpsOptions,
  SaveOptions,
  SessionLease,
  SnapshotStore,
  StoredRecord,
  StoreOwner,
  StoreWriteResult,
  WakeUp,
} from '../ports/snapshot-store.js';
import { brokenNativeModule, loadBetterSqlite3 } from './better-sqlite3.js';
import { isAlive } from './process-alive.js';
import {
  type ClaimRow,
  checkClaim,
  checkIds,
  checkLeases,
  checkPrefix,
  checkRecords,
  checkRenewal,
  checkWakeUps,
  decideClaim,
  fenceTime,
  leaseTokens,
  SAVE_OPTION_NAMES,
  wakeUpOf,
  wakeUpsDueBy,
  writeAllowed,
} from './store-ownership.js';

/** Where the CLI keeps its state by default. */
export const DEFAULT_SQLITE_PATH = '.rolebox/state.db';

/**
 * The least string greater than every string that starts with `prefix`, in SQLite's BINARY
 * order (UTF-8 bytes, which is code point order): the prefix with its last code point
 * incremented, skipping the surrogates. Undefined when there is none (a prefix made only
 * of U+10FFFF), and then the range has no upper bound.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length > 0) {
    let last = (points.pop() as string).codePointAt(0) as number;
    // A lone surrogate is stored as U+FFFD: bound what is stored.
    if (last >= 0xd800 && last <= 0xdfff) last = 0xfffd;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return points.join('') + String.fromCodePoint(next);
    }
  }
  return undefined;
}

interface ClaimColumns {
  owner_id: string;
  pid: number;
  host: string;
  token: number;
  expires_at: number;
}

interface WakeUpColumns {
  session_id: string;
  at: number | null;
  task_id: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS snapshots (id TEXT PRIMARY KEY, data TEXT NOT NULL, saved_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS claims (
  session_id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL,
  token INTEGER NOT NULL, expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS wakeups (session_id TEXT PRIMARY KEY, at INTEGER, task_id TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS wakeups_by_time ON wakeups (at, session_id) WHERE at IS NOT NULL;
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
`;

/**
 * The embedded default store: one SQLite file (better-sqlite3), WAL mode, one row per
 * record, every write one transaction. A process that crashes mid-save leaves the previous
 * version of every row intact. `synchronous=NORMAL`: committed saves survive a crash of
 * the process; a power loss may lose the last ones.
 *
 * Besides `snapshots` the file holds `claims` (who drives a session, until when, with which
 * fencing token), `wakeups` (why a passivated session must be woken) and `store_meta` (the
 * last token issued). Files written before those tables existed open as they are: the
 * tables are created when missing. Every write that checks a claim runs in a `BEGIN
 * IMMEDIATE` transaction, so two processes on one file never both see a session free.
 */
export class SqliteSnapshotStore implements SnapshotStore {
  /** The database file. */
  readonly path: string;
  readonly #db: Database.Database;
  readonly #upsert: Database.Statement<[string, string, number]>;
  readonly #select: Database.Statement<[string], { data: string }>;
  readonly #selectAll: Database.Statement<[], StoredRecord>;
  readonly #selectFrom: Database.Statement<[string], StoredRecord>;
  readonly #selectRange: Database.Statement<[string, string], StoredRecord>;
  readonly #remove: Database.Statement<[string]>;
  readonly #selectClaim: Database.Statement<[string], ClaimColumns>;
  readonly #putClaim: Database.Statement<[string, string, number, string, number, number]>;
  readonly #extendClaim: Database.Statement<[number, string, number, string, number]>;
  readonly #dropClaim: Database.Statement<[string, number]>;
  readonly #nextToken: Database.Statement<[], { value: number }>;
  readonly #putWakeUp: Database.Statement<[string, number | null, string | null]>;
  readonly #removeWakeUp: Database.Statement<[string]>;
  readonly #selectWakeUps: Database.Statement<[], WakeUpColumns>;
  readonly #selectDueWakeUps: Database.Statement<[number], WakeUpColumns>;
  // Transactions are built once: better-sqlite3 builds a wrapper per `transaction()` call.
  readonly #claimTx: Database.Transaction<
    (sessionId: string, owner: StoreOwner, ttlMs: number, now: number) => ClaimResult
  >;
  readonly #saveTx: Database.Transaction<
    (
      records: readonly StoredRecord[],
      wakeUps: readonly WakeUp[],
      tokens: ReadonlyMap<string, number>,
      now: number,
      savedAt: number,
    ) => StoreWriteResult
  >;
  readonly #claimAndLoadTx: Database.Transaction<
    (sessionId: string, owner: StoreOwner, ttlMs: number, now: number) => ClaimedRecord | undefined
  >;

  /**
   * Opens (or creates) the database. Throws: `store_failed` naming the path and why;
   * `missing_dependency` when better-sqlite3 is not installed or its native module is broken.
   */
  constructor(path: string = DEFAULT_SQLITE_PATH) {
    this.path = path;
    const SqliteDatabase = loadBetterSqlite3();
    try {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      this.#db = new SqliteDatabase(path);
      this.#db.pragma('journal_mode = WAL');
      this.#db.pragma('synchronous = NORMAL');
      // Session rows are rewritten at random: keep the hot part of a large store in memory
      // (64 MiB) so a save costs the same at 100 or 10 000 sessions.
      this.#db.pragma('cache_size = -65536');
      this.#db.exec(SCHEMA);
    } catch (error) {
      const broken = brokenNativeModule(error);
      if (broken !== undefined) throw broken;
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
    this.#selectFrom = this.#db.prepare('SELECT id, data FROM snapshots WHERE id >= ? ORDER BY id');
    this.#selectRange = this.#db.prepare(
      'SELECT id, data FROM snapshots WHERE id >= ? AND id < ? ORDER BY id',
    );
    this.#remove = this.#db.prepare('DELETE FROM snapshots WHERE id = ?');
    this.#selectClaim = this.#db.prepare(
      'SELECT owner_id, pid, host, token, expires_at FROM claims WHERE session_id = ?',
    );
    this.#putClaim = this.#db.prepare(
      'INSERT INTO claims (session_id, owner_id, pid, host, token, expires_at) VALUES (?, ?, ?, ?, ?, ?) ' +
        'ON CONFLICT(session_id) DO UPDATE SET owner_id = excluded.owner_id, pid = excluded.pid, ' +
        'host = excluded.host, token = excluded.token, expires_at = excluded.expires_at',
    );
    this.#extendClaim = this.#db.prepare(
      'UPDATE claims SET expires_at = ? WHERE session_id = ? AND token = ? AND owner_id = ? AND expires_at > ?',
    );
    this.#dropClaim = this.#db.prepare('DELETE FROM claims WHERE session_id = ? AND token = ?');
    this.#nextToken = this.#db.prepare(
      "INSERT INTO store_meta (key, value) VALUES ('last_token', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1 RETURNING value",
    );
    this.#putWakeUp = this.#db.prepare(
      'INSERT INTO wakeups (session_id, at, task_id) VALUES (?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET at = excluded.at, task_id = excluded.task_id',
    );
    this.#removeWakeUp = this.#db.prepare('DELETE FROM wakeups WHERE session_id = ?');
    this.#selectWakeUps = this.#db.prepare(
      'SELECT session_id, at, task_id FROM wakeups ORDER BY session_id',
    );
    this.#selectDueWakeUps = this.#db.prepare(
      'SELECT session_id, at, task_id FROM wakeups WHERE at <= ? ORDER BY at, session_id',
    );
    // Every save (the hot path: a few per effect) runs this one transaction.
    this.#saveTx = this.#db.transaction((records, wakeUps, tokens, now, savedAt) =>
      this.#saveIn(records, wakeUps, tokens, now, savedAt),
    );
    this.#claimTx = this.#db.transaction((sessionId, owner, ttlMs, now) =>
      this.#claimIn(sessionId, owner, ttlMs, now),
    );
    // Read and claimed in one transaction: no other process writes the record between
    // the read and the claim, and one transaction costs less than two.
    this.#claimAndLoadTx = this.#db.transaction((sessionId, owner, ttlMs, now) => {
      const data = this.#select.get(sessionId)?.data;
      return data === undefined
        ? undefined
        : { data, claim: this.#claimIn(sessionId, owner, ttlMs, now) };
    });
  }

  async loadAll(): Promise<StoredRecord[]> {
    return this.#run('read', () => this.#selectAll.all());
  }

  async loadByPrefix(prefix: string): Promise<StoredRecord[]> {
    checkPrefix(prefix);
    // A range on the primary key reads only the matching rows (LIKE or substr would scan).
    const upper = prefixUpperBound(prefix);
    return this.#run('read', () =>
      upper === undefined ? this.#selectFrom.all(prefix) : this.#selectRange.all(prefix, upper),
    );
  }

  async load(id: string): Promise<string | undefined> {
    return this.#loadNow(id);
  }

  #loadNow(id: string): string | undefined {
    return this.#run('read', () => this.#select.get(id)?.data);
  }

  async save(
    records: readonly StoredRecord[],
    leases?: readonly SessionLease[],
    options?: SaveOptions,
  ): Promise<StoreWriteResult> {
    checkRecords(records);
    const wakeUps = checkWakeUps(options?.wakeUps ?? []);
    const tokens = leaseTokens(leases);
    const now = fenceTime(options, SAVE_OPTION_NAMES);
    const savedAt = Date.now();
    return this.#run('write', () => this.#saveTx.immediate(records, wakeUps, tokens, now, savedAt));
  }

  /** Inside a transaction: writes the records and wake-ups our leases allow; answers the refused. */
  #saveIn(
    records: readonly StoredRecord[],
    wakeUps: readonly WakeUp[],
    tokens: ReadonlyMap<string, number>,
    now: number,
    savedAt: number,
  ): StoreWriteResult {
    const refused = this.#refused(
      [...records.map((record) => record.id), ...wakeUps.map((entry) => entry.sessionId)],
      tokens,
      now,
    );
    for (const record of records)
      if (!refused.has(record.id)) this.#upsert.run(record.id, record.data, savedAt);
    this.#writeWakeUps(wakeUps, refused);
    return { refused: [...refused] };
  }

  async delete(
    ids: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    checkIds(ids, 'ids');
    const tokens = leaseTokens(leases);
    const now = fenceTime(options);
    return this.#run('write', () =>
      this.#db
        .transaction(() => {
          const refused = this.#refused(ids, tokens, now);
          for (const id of ids) {
            if (refused.has(id)) continue;
            this.#remove.run(id);
            this.#removeWakeUp.run(id);
          }
          return { refused: [...refused] };
        })
        .immediate(),
    );
  }

  async claim(
    sessionId: string,
    owner: StoreOwner,
    ttlMs: number,
    now: number,
  ): Promise<ClaimResult> {
    return this.#claimNow(sessionId, owner, ttlMs, now);
  }

  /** The record and the claim of a session, answered at once (better-sqlite3 is synchronous). */
  readonly immediate: ImmediateSessionAccess = {
    load: (id) => this.#loadNow(id),
    claim: (sessionId, owner, ttlMs, now) => this.#claimNow(sessionId, owner, ttlMs, now),
    claimAndLoad: (sessionId, owner, ttlMs, now) =>
      this.#claimAndLoadNow(sessionId, owner, ttlMs, now),
    renew: (leases, owner, ttlMs, now) => this.#renewNow(leases, owner, ttlMs, now),
  };

  #claimNow(sessionId: string, owner: StoreOwner, ttlMs: number, now: number): ClaimResult {
    checkClaim(sessionId, owner, ttlMs, now);
    return this.#run('write', () => this.#claimTx.immediate(sessionId, owner, ttlMs, now));
  }

  #claimAndLoadNow(
    sessionId: string,
    owner: StoreOwner,
    ttlMs: number,
    now: number,
  ): ClaimedRecord | undefined {
    checkClaim(sessionId, owner, ttlMs, now);
    return this.#run('write', () => this.#claimAndLoadTx.immediate(sessionId, owner, ttlMs, now));
  }

  /** The claim, inside a transaction (one claim decision per row read). */
  #claimIn(sessionId: string, owner: StoreOwner, ttlMs: number, now: number): ClaimResult {
    const row = this.#claimRow(sessionId);
    const decision = decideClaim(row, owner, now, isAlive);
    if (decision === 'refuse' && row !== undefined)
      return { ok: false, owner: row.owner, expiresAt: row.expiresAt };
    const token =
      decision === 'keep' && row !== undefined
        ? row.token
        : (this.#nextToken.get() as { value: number }).value;
    this.#putClaim.run(sessionId, owner.ownerId, owner.pid, owner.host, token, now + ttlMs);
    return { ok: true, token };
  }

  async renew(
    lease: SessionLease,
    owner: StoreOwner,
    ttlMs: number,
    now: number,
  ): Promise<boolean> {
    return this.#renewNow([lease], owner, ttlMs, now).length === 0;
  }

  /** Renews each lease still ours, in one transaction; returns the session ids whose claim was lost. */
  #renewNow(
    leases: readonly SessionLease[],
    owner: StoreOwner,
    ttlMs: number,
    now: number,
  ): string[] {
    const checked = checkRenewal(leases, owner, ttlMs, now);
    return this.#run('write', () =>
      this.#db
        .transaction(() =>
          // One statement per lease: the row is checked and extended atomically.
          checked.flatMap(({ sessionId, token }) =>
            this.#extendClaim.run(now + ttlMs, sessionId, token, owner.ownerId, now).changes === 1
              ? []
              : [sessionId],
          ),
        )
        .immediate(),
    );
  }

  async release(leases: readonly SessionLease[]): Promise<void> {
    const checked = checkLeases(leases);
    this.#run('write', () =>
      this.#db
        .transaction(() => {
          for (const lease of checked) this.#dropClaim.run(lease.sessionId, lease.token);
        })
        .immediate(),
    );
  }

  async setWakeUps(
    entries: readonly WakeUp[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    checkWakeUps(entries);
    const tokens = leaseTokens(leases);
    const now = fenceTime(options);
    return this.#run('write', () =>
      this.#db
        .transaction(() => {
          const refused = this.#refused(
            entries.map((entry) => entry.sessionId),
            tokens,
            now,
          );
          this.#writeWakeUps(entries, refused);
          return { refused: [...refused] };
        })
        .immediate(),
    );
  }

  async clearWakeUps(
    sessionIds: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    checkIds(sessionIds, 'sessionIds');
    const tokens = leaseTokens(leases);
    const now = fenceTime(options);
    return this.#run('write', () =>
      this.#db
        .transaction(() => {
          const refused = this.#refused(sessionIds, tokens, now);
          for (const id of sessionIds) if (!refused.has(id)) this.#removeWakeUp.run(id);
          return { refused: [...refused] };
        })
        .immediate(),
    );
  }

  async loadWakeUps(options?: LoadWakeUpsOptions): Promise<WakeUp[]> {
    const dueBy = wakeUpsDueBy(options);
    const rows = this.#run('read', () =>
      dueBy === undefined ? this.#selectWakeUps.all() : this.#selectDueWakeUps.all(dueBy),
    );
    return rows.map((row) => wakeUpOf(row.session_id, row.at, row.task_id));
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  /** Writes a record's raw text: for tests that need a corrupt row. */
  putRaw(id: string, data: string): void {
    this.#upsert.run(id, data, Date.now());
  }

  #claimRow(sessionId: string): ClaimRow | undefined {
    const row = this.#selectClaim.get(sessionId);
    return row === undefined
      ? undefined
      : {
          owner: { ownerId: row.owner_id, pid: row.pid, host: row.host },
          token: row.token,
          expiresAt: row.expires_at,
        };
  }

  /** Inside a transaction: the sessions among `ids` whose rows may not be written. */
  #refused(ids: readonly string[], tokens: ReadonlyMap<string, number>, now: number): Set<string> {
    const refused = new Set<string>();
    const checked = new Set<string>();
    for (const id of ids) {
      if (checked.has(id)) continue;
      checked.add(id);
      if (!writeAllowed(this.#claimRow(id), tokens.get(id), now)) refused.add(id);
    }
    return refused;
  }

  #writeWakeUps(entries: readonly WakeUp[], refused: ReadonlySet<string>): void {
    for (const entry of entries) {
      if (refused.has(entry.sessionId)) continue;
      if (entry.at === undefined && entry.taskId === undefined)
        this.#removeWakeUp.run(entry.sessionId);
      else this.#putWakeUp.run(entry.sessionId, entry.at ?? null, entry.taskId ?? null);
    }
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
