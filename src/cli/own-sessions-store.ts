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

/**
 * The store as `rolebox loop` uses it: all of it, except that the stored wake-ups of
 * sessions this process does not drive are not read. A rolebox arms every stored wake-up
 * it reads, and a woken session's loop would run its next round here, with this
 * process's worker; another stored loop belongs to `rolebox resume`, which runs it with its
 * own. Reads and writes of records, claims and this process's own wake-ups go through
 * unchanged.
 */
export class OwnSessionsStore implements SnapshotStore {
  readonly #store: SnapshotStore;
  readonly #driven = new Set<string>();

  constructor(store: SnapshotStore) {
    this.#store = store;
  }

  /** Says that this process drives session `sessionId`: its wake-ups are read from now on. */
  drive(sessionId: string): void {
    this.#driven.add(sessionId);
  }

  get immediate(): ImmediateSessionAccess | undefined {
    return this.#store.immediate;
  }

  async loadWakeUps(options?: LoadWakeUpsOptions): Promise<WakeUp[]> {
    const wakeUps = await this.#store.loadWakeUps(options);
    return wakeUps.filter((wakeUp) => this.#driven.has(wakeUp.sessionId));
  }

  loadAll(): Promise<StoredRecord[]> {
    return this.#store.loadAll();
  }

  loadByPrefix(prefix: string): Promise<StoredRecord[]> {
    return this.#store.loadByPrefix(prefix);
  }

  load(id: string): Promise<string | undefined> {
    return this.#store.load(id);
  }

  save(
    records: readonly StoredRecord[],
    leases?: readonly SessionLease[],
    options?: SaveOptions,
  ): Promise<StoreWriteResult> {
    return this.#store.save(records, leases, options);
  }

  delete(
    ids: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    return this.#store.delete(ids, leases, options);
  }

  claim(sessionId: string, owner: StoreOwner, ttlMs: number, now: number): Promise<ClaimResult> {
    return this.#store.claim(sessionId, owner, ttlMs, now);
  }

  renew(lease: SessionLease, owner: StoreOwner, ttlMs: number, now: number): Promise<boolean> {
    return this.#store.renew(lease, owner, ttlMs, now);
  }

  release(leases: readonly SessionLease[]): Promise<void> {
    return this.#store.release(leases);
  }

  setWakeUps(
    entries: readonly WakeUp[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    return this.#store.setWakeUps(entries, leases, options);
  }

  clearWakeUps(
    sessionIds: readonly string[],
    leases?: readonly SessionLease[],
    options?: FenceOptions,
  ): Promise<StoreWriteResult> {
    return this.#store.clearWakeUps(sessionIds, leases, options);
  }

  async close(): Promise<void> {
    await this.#store.close?.();
  }
}
