import { signalAlive } from '../base/host-process.js';
import type {
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
  FENCE_OPTION_NAMES,
  fenceTime,
  leaseTokens,
  SAVE_OPTION_NAMES,
  wakeUpOf,
  wakeUpsDueBy,
  writeAllowed,
} from './store-ownership.js';

/**
 * Keeps records, claims and wake-ups in memory, with the same ownership semantics as the
 * SQLite store (between owners of one instance). Use when: tests, or a host that persists
 * elsewhere. `records` is exposed so tests can corrupt or inspect what was saved.
 */
export class MemorySnapshotStore implements SnapshotStore {
  /** The stored text by id. */
  readonly records = new Map<string, string>();
  /** How many save calls were made (each one a transaction). */
  saves = 0;
  readonly #claims = new Map<string, ClaimRow>();
  readonly #wakeUps = new Map<string, WakeUp>();
  /** Tokens come from one counter, so a released claim's row can go without reuse. */
  #lastToken = 0;

  async loadAll(): Promise<StoredRecord[]> {
    return [...this.records].map(([id, data]) => ({ id, data }));
  }

  async loadByPrefix(prefix: string): Promise<StoredRecord[]> {
    checkPrefix(prefix);
    const found: StoredRecord[] = [];
    for (const [id, data] of this.records) if (id.startsWith(prefix)) found.push({ id, data });
    return found;
  }

  async load(id: string): Promise<string | undefined> {
    return this.#loadNow(id);
  }

  #loadNow(id: string): string | undefined {
    return this.records.get(id);
  }

  async save(
    records: readonly StoredRecord[],
    leases?: readonly SessionLease[],
    options?: SaveOptions,
  ): Promise<StoreWriteResult> {
    checkRecords(records);
    const wakeUps = checkWakeUps(options?.wakeUps ?? []);
    const refused = this.#refused(
      [...records.map((record) => record.id), ...wakeUps.map((entry) => entry.sessionId)],
      leases,
      options,
      SAVE_OPTION_NAMES,
    );
    this.saves++;
    for (const record of records)
      if (!refused.has(record.id)) this.records.set(record.id, record.data);
    this.#setWakeUps(wakeUps, refused);
    return { refused: [...refused] };
  }

  async delete(
    ids: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    checkIds(ids, 'ids');
    const refused = this.#refused(ids, leases, options);
    for (const id of ids) {
      if (refused.has(id)) continue;
      this.records.delete(id);
      this.#wakeUps.delete(id);
    }
    return { refused: [...refused] };
  }

  async claim(
    sessionId: string,
    owner: StoreOwner,
    ttlMs: number,
    now: number,
  ): Promise<ClaimResult> {
    return this.#claimNow(sessionId, owner, ttlMs, now);
  }

  /** The record and the claim of a session, answered at once. */
  readonly immediate: ImmediateSessionAccess = {
    load: (id) => this.#loadNow(id),
    claim: (sessionId, owner, ttlMs, now) => this.#claimNow(sessionId, owner, ttlMs, now),
    // One step as it is: nothing runs between the read and the claim in one process.
    claimAndLoad: (sessionId, owner, ttlMs, now) => {
      checkClaim(sessionId, owner, ttlMs, now);
      const data = this.#loadNow(sessionId);
      return data === undefined
        ? undefined
        : { data, claim: this.#claimNow(sessionId, owner, ttlMs, now) };
    },
    renew: (leases, owner, ttlMs, now) => this.#renewNow(leases, owner, ttlMs, now),
  };

  #claimNow(sessionId: string, owner: StoreOwner, ttlMs: number, now: number): ClaimResult {
    checkClaim(sessionId, owner, ttlMs, now);
    const row = this.#claims.get(sessionId);
    const decision = decideClaim(row, owner, now, signalAlive);
    if (decision === 'refuse' && row !== undefined)
      return { ok: false, owner: row.owner, expiresAt: row.expiresAt };
    const token = decision === 'keep' && row !== undefined ? row.token : ++this.#lastToken;
    this.#claims.set(sessionId, { owner: ownerOf(owner), token, expiresAt: now + ttlMs });
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

  /** Renews each lease still ours; returns the session ids whose claim was lost. */
  #renewNow(
    leases: readonly SessionLease[],
    owner: StoreOwner,
    ttlMs: number,
    now: number,
  ): string[] {
    return checkRenewal(leases, owner, ttlMs, now).flatMap(({ sessionId, token }) => {
      const row = this.#claims.get(sessionId);
      if (!writeAllowed(row, token, now) || row?.owner.ownerId !== owner.ownerId)
        return [sessionId];
      this.#claims.set(sessionId, { ...row, expiresAt: now + ttlMs });
      return [];
    });
  }

  async release(leases: readonly SessionLease[]): Promise<void> {
    for (const lease of checkLeases(leases))
      if (this.#claims.get(lease.sessionId)?.token === lease.token)
        this.#claims.delete(lease.sessionId);
  }

  async setWakeUps(
    entries: readonly WakeUp[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    checkWakeUps(entries);
    const refused = this.#refused(
      entries.map((entry) => entry.sessionId),
      leases,
      options,
    );
    this.#setWakeUps(entries, refused);
    return { refused: [...refused] };
  }

  async clearWakeUps(
    sessionIds: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    checkIds(sessionIds, 'sessionIds');
    const refused = this.#refused(sessionIds, leases, options);
    for (const id of sessionIds) if (!refused.has(id)) this.#wakeUps.delete(id);
    return { refused: [...refused] };
  }

  async loadWakeUps(options?: LoadWakeUpsOptions): Promise<WakeUp[]> {
    const dueBy = wakeUpsDueBy(options);
    const all = [...this.#wakeUps.values()];
    if (dueBy === undefined) return all.sort((a, b) => compare(a.sessionId, b.sessionId));
    return all
      .filter((entry) => entry.at !== undefined && entry.at <= dueBy)
      .sort((a, b) => (a.at as number) - (b.at as number) || compare(a.sessionId, b.sessionId));
  }

  /** Checks every argument before anything is written: a bad one changes nothing. */
  #refused(
    ids: readonly string[],
    leases: unknown,
    options: unknown,
    known: readonly string[] = FENCE_OPTION_NAMES,
  ): Set<string> {
    const tokens = leaseTokens(leases);
    const now = fenceTime(options, known);
    const refused = new Set<string>();
    for (const id of ids)
      if (!writeAllowed(this.#claims.get(id), tokens.get(id), now)) refused.add(id);
    return refused;
  }

  #setWakeUps(entries: readonly WakeUp[], refused: ReadonlySet<string>): void {
    for (const entry of entries) {
      if (refused.has(entry.sessionId)) continue;
      if (entry.at === undefined && entry.taskId === undefined)
        this.#wakeUps.delete(entry.sessionId);
      else this.#wakeUps.set(entry.sessionId, wakeUpOf(entry.sessionId, entry.at, entry.taskId));
    }
  }
}

/** A copy with only the three fields, so a caller's object is never kept or mutated. */
function ownerOf(owner: StoreOwner): StoreOwner {
  return { ownerId: owner.ownerId, pid: owner.pid, host: owner.host };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
