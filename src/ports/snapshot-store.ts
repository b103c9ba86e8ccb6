/** One stored record: a serialized snapshot envelope under its id. */
export interface StoredRecord {
  readonly id: string;
  /** The envelope as JSON text. */
  readonly data: string;
}

/**
 * Who drives a session: one per rolebox instance. `pid` and `host` say where it runs, so a
 * refused process can name the owner, and a claim whose owner died on this host can be
 * taken at once instead of after its TTL.
 */
export interface StoreOwner {
  /** Random per rolebox instance (two instances in one process are two owners). */
  readonly ownerId: string;
  readonly pid: number;
  /** `os.hostname()` of the owner's machine. */
  readonly host: string;
}

/**
 * The answer to {@link SnapshotStore.claim}: the fencing token of our claim, or who holds
 * the session and until when (epoch ms, on the claimant's clock).
 */
export type ClaimResult =
  | { readonly ok: true; readonly token: number }
  | { readonly ok: false; readonly owner: StoreOwner; readonly expiresAt: number };

/**
 * Proof of ownership carried by writes: the session and the token its claim returned. A
 * lease holds while its token is the session's current one, it was not released, and the
 * claim has not expired.
 */
export interface SessionLease {
  readonly sessionId: string;
  readonly token: number;
}

/**
 * Why a passivated session must be woken: its earliest deadline (`at`, epoch ms) and/or a
 * worker task in flight (`taskId`). An entry with neither means "nothing to wake for" and
 * removes the session's row.
 */
export interface WakeUp {
  readonly sessionId: string;
  readonly at?: number;
  readonly taskId?: string;
}

/**
 * What a fenced write did not do: the session ids whose lease no longer holds, or (written
 * without a lease) whose session has a live claim. Nothing of those sessions was written;
 * everything else was, in the same transaction. The owner drops a refused session.
 */
export interface StoreWriteResult {
  readonly refused: readonly string[];
}

/** When a fenced write happens (`now`, epoch ms, on the clock given to `claim`). */
export interface FenceOptions {
  /**
   * The time leases are checked against. Default `Date.now()`: pass the same clock's time
   * as to `claim`, or every lease taken on a simulated clock looks expired.
   */
  readonly now?: number;
}

/** {@link FenceOptions} for a save, plus the wake-ups written in the same transaction. */
export interface SaveOptions extends FenceOptions {
  /**
   * Wake-up rows to set with the records, fenced like them, so a session's record and its
   * wake-up never disagree after a crash.
   */
  readonly wakeUps?: readonly WakeUp[];
}

/** Which wake-ups {@link SnapshotStore.loadWakeUps} returns. */
export interface LoadWakeUpsOptions {
  /** Only those with a deadline at or before this time (epoch ms), earliest first. */
  readonly dueBy?: number;
}

/**
 * Where rolebox keeps its snapshots: one record per session subtree (its id is the session
 * id), one for the system actor (`$system`), the pipeline's (`$pipeline:…`); the claims
 * that say which process drives a session; and the wake-up index of passivated sessions.
 * Records are opaque JSON text here; the persistence layer validates them.
 *
 * Every method is required: a host's own store must implement ownership and wake-ups too
 * (see the memory store for the semantics in a few lines, and "Writing your own store" in
 * the README). `createRolebox` checks the methods once, and rolebox checks each answer it
 * reads (`invalid_argument` saying what is expected, and what changed since the 0.1 port).
 * Bad arguments are refused with `invalid_argument`, a failing backend with
 * `store_failed`; neither changes anything.
 *
 * Fencing: a write (`save`, `delete`, `setWakeUps`, `clearWakeUps`) given `leases` writes a
 * session's rows only while its lease holds; written without a lease, a session's rows are
 * written only when no live claim exists on it (so an old caller can never overwrite a
 * session another process drives). Sessions refused are listed in the result; the rest is
 * written in one transaction.
 */
export interface SnapshotStore {
  /** Every record, in no particular order (for tools that read the whole store). */
  loadAll(): Promise<StoredRecord[]>;
  /** The records whose id starts with `prefix`, without reading the others. */
  loadByPrefix(prefix: string): Promise<StoredRecord[]>;
  /** One record, or undefined. */
  load(id: string): Promise<string | undefined>;
  /** Writes records (and `options.wakeUps`) atomically, fenced as described above. */
  save(
    records: readonly StoredRecord[],
    leases?: readonly SessionLease[],
    options?: SaveOptions,
  ): Promise<StoreWriteResult>;
  /** Removes records and their wake-ups (missing ids are ignored), fenced. */
  delete(
    ids: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult>;
  /**
   * Takes the session for `owner` until `now + ttlMs` if it is free, its claim expired
   * (`expiresAt <= now`), its owner runs on `owner.host` with a pid that is no longer
   * alive, or it is already ours. A claim that stays with the same owner while live keeps
   * its token; whenever the session changes hands (or ours had expired) the token is new
   * and higher than every token the store ever issued, so a stale holder is fenced off.
   */
  claim(sessionId: string, owner: StoreOwner, ttlMs: number, now: number): Promise<ClaimResult>;
  /** Extends our live claim to `now + ttlMs`; false when the lease no longer holds. */
  renew(lease: SessionLease, owner: StoreOwner, ttlMs: number, now: number): Promise<boolean>;
  /** Drops our claims (those whose token still matches; others are left alone). */
  release(leases: readonly SessionLease[]): Promise<void>;
  /** Sets wake-up rows (one per session, replacing the previous one), fenced. */
  setWakeUps(
    entries: readonly WakeUp[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult>;
  /** Removes the wake-up rows of these sessions, fenced. */
  clearWakeUps(
    sessionIds: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult>;
  /** The wake-up index: every row by session id, or those due by `options.dueBy`. */
  loadWakeUps(options?: LoadWakeUpsOptions): Promise<WakeUp[]>;
  /** Releases the store. The host calls it when done: `rb.stop()` leaves the store open (it is the host's). */
  close?(): Promise<void>;
  /**
   * Optional: a session's record and its claim answered at once, for stores that can (both
   * built-in ones). With it, a passivated session is activated by any call to it, as a
   * live one would answer; without it, only by `await rb.openSession({ id })`.
   */
  readonly immediate?: ImmediateSessionAccess;
}

/** A record read together with its claim ({@link ImmediateSessionAccess.claimAndLoad}). */
export interface ClaimedRecord {
  readonly data: string;
  readonly claim: ClaimResult;
}

/** The reads and claims a store can answer at once (see {@link SnapshotStore.immediate}). */
export interface ImmediateSessionAccess {
  /** One record, or undefined. */
  load(id: string): string | undefined;
  /** As {@link SnapshotStore.claim}. */
  claim(sessionId: string, owner: StoreOwner, ttlMs: number, now: number): ClaimResult;
  /**
   * Reads session `sessionId`'s record and claims it, as one step (nothing written in
   * between): what an activation needs. Returns: undefined, claiming nothing, when there
   * is no such record; else the record and the claim's result (a refused claim still
   * returns the record, which the caller must not use).
   */
  claimAndLoad(
    sessionId: string,
    owner: StoreOwner,
    ttlMs: number,
    now: number,
  ): ClaimedRecord | undefined;
  /**
   * As {@link SnapshotStore.renew}, for many leases in one go (one transaction).
   * Returns: the session ids whose claim could not be renewed (expired, or taken).
   */
  renew(leases: readonly SessionLease[], owner: StoreOwner, ttlMs: number, now: number): string[];
}
