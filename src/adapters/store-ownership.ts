import { currentPid } from '../base/host-process.js';
import { isOwnerStopped } from '../base/local-owners.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import type {
  FenceOptions,
  LoadWakeUpsOptions,
  SaveOptions,
  SessionLease,
  StoredRecord,
  StoreOwner,
  WakeUp,
} from '../ports/snapshot-store.js';

/** A session's claim as both stores keep it. */
export interface ClaimRow {
  readonly owner: StoreOwner;
  readonly token: number;
  readonly expiresAt: number;
}

/**
 * What `claim` does with the current row: keep it (ours and live: same token, new expiry),
 * take it (free, expired, or its owner died on this host: a new token), or refuse.
 */
export type ClaimDecision = 'keep' | 'take' | 'refuse';

/**
 * The claim rule both stores share. A dead owner is only recognised on the claimant's own
 * host: a pid means nothing on another machine, so there only the TTL frees a claim. In
 * this process, a rolebox that stopped counts as dead ({@link isOwnerStopped}). `alive` is the
 * store's liveness check: the SQLite store's also sees zombies (it reads /proc), the memory
 * store's needs no Node built-in.
 */
export function decideClaim(
  row: ClaimRow | undefined,
  owner: StoreOwner,
  now: number,
  alive: (pid: number) => boolean,
): ClaimDecision {
  if (row === undefined || row.expiresAt <= now) return 'take';
  if (row.owner.ownerId === owner.ownerId) return 'keep';
  if (row.owner.host === owner.host && !alive(row.owner.pid)) return 'take';
  // A rolebox of this very process that stopped without letting go (its pid lives on).
  if (
    row.owner.host === owner.host &&
    row.owner.pid === currentPid() &&
    isOwnerStopped(row.owner.ownerId)
  )
    return 'take';
  return 'refuse';
}

/**
 * Whether a write of session `sessionId` may happen: with a lease, while that lease holds
 * (same token, not expired; a released claim has no row); without one, while no live claim
 * exists.
 */
export function writeAllowed(
  row: ClaimRow | undefined,
  token: number | undefined,
  now: number,
): boolean {
  if (token === undefined) return row === undefined || row.expiresAt <= now;
  return row !== undefined && row.token === token && row.expiresAt > now;
}

function fail(message: string, details: Record<string, unknown> = {}): never {
  throw new RoleboxError('invalid_argument', message, details);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Throws `invalid_argument` unless `value` is a non-empty string. */
export function checkSessionId(value: unknown, what = 'sessionId'): string {
  if (typeof value !== 'string' || value.length === 0)
    fail(`${what} must be a non-empty string, got ${describeValue(value)}`, { [what]: value });
  return value;
}

/** Throws `invalid_argument` unless `value` is a string (the empty prefix matches every id). */
export function checkPrefix(value: unknown): string {
  if (typeof value !== 'string') fail(`prefix must be a string, got ${describeValue(value)}`);
  return value;
}

/** Throws `invalid_argument` unless `value` is a {@link StoreOwner}. */
export function checkOwner(value: unknown): StoreOwner {
  if (!isObject(value)) fail(`owner must be an object, got ${describeValue(value)}`);
  checkSessionId(value.ownerId, 'owner.ownerId');
  if (!Number.isSafeInteger(value.pid) || (value.pid as number) <= 0)
    fail(`owner.pid must be a positive integer, got ${describeValue(value.pid)}`);
  checkSessionId(value.host, 'owner.host');
  return value as unknown as StoreOwner;
}

/** Throws `invalid_argument` unless `value` is a positive finite number of milliseconds. */
export function checkTtl(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    fail(`ttlMs must be a positive number, got ${describeValue(value)}`, { ttlMs: value });
  return value;
}

/** Throws `invalid_argument` unless `value` is a finite time in epoch ms. */
export function checkTime(value: unknown, what = 'now'): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    fail(`${what} must be a finite number (epoch ms), got ${describeValue(value)}`, {
      [what]: value,
    });
  return value;
}

/** Throws `invalid_argument` unless `value` is a {@link SessionLease}. */
export function checkLease(value: unknown): SessionLease {
  if (!isObject(value)) fail(`a lease must be an object, got ${describeValue(value)}`);
  checkSessionId(value.sessionId, 'lease.sessionId');
  if (!Number.isSafeInteger(value.token) || (value.token as number) <= 0)
    fail(
      `the token of the lease on ${describeValue(value.sessionId)} must be a positive integer, got ${describeValue(value.token)}`,
      { sessionId: value.sessionId, token: value.token },
    );
  return value as unknown as SessionLease;
}

function checkArray(value: unknown, what: string): readonly unknown[] {
  if (!Array.isArray(value)) fail(`${what} must be an array, got ${describeValue(value)}`);
  return value;
}

/**
 * The tokens of `leases` by session id (empty when omitted). Two leases on one session with
 * different tokens are a caller's mistake: refused rather than guessing which holds.
 */
export function leaseTokens(leases: unknown): ReadonlyMap<string, number> {
  const tokens = new Map<string, number>();
  if (leases === undefined) return tokens;
  for (const item of checkArray(leases, 'leases')) {
    const lease = checkLease(item);
    const known = tokens.get(lease.sessionId);
    if (known !== undefined && known !== lease.token)
      fail(
        `two leases on ${describeValue(lease.sessionId)} with different tokens (${known} and ${lease.token})`,
        { sessionId: lease.sessionId },
      );
    tokens.set(lease.sessionId, lease.token);
  }
  return tokens;
}

/** The leases of a `release` call, checked. */
export function checkLeases(leases: unknown): readonly SessionLease[] {
  return checkArray(leases, 'leases').map(checkLease);
}

/** The arguments of a claim (`claim`, `claimAndLoad`), checked. */
export function checkClaim(sessionId: unknown, owner: unknown, ttlMs: unknown, now: unknown): void {
  checkSessionId(sessionId);
  checkOwner(owner);
  checkTtl(ttlMs);
  checkTime(now);
}

/** The arguments of a `renew` (one lease or many), checked: the leases. */
export function checkRenewal(
  leases: unknown,
  owner: unknown,
  ttlMs: unknown,
  now: unknown,
): readonly SessionLease[] {
  const checked = checkLeases(leases);
  checkOwner(owner);
  checkTtl(ttlMs);
  checkTime(now);
  return checked;
}

/** Throws `invalid_argument` unless `records` is an array of records with string fields. */
export function checkRecords(records: unknown): readonly StoredRecord[] {
  for (const record of checkArray(records, 'records')) {
    if (!isObject(record)) fail(`a record must be an object, got ${describeValue(record)}`);
    checkSessionId(record.id, 'record id');
    if (typeof record.data !== 'string')
      fail(
        `the data of record ${describeValue(record.id)} must be a string, got ${describeValue(record.data)}`,
        { id: record.id },
      );
  }
  return records as readonly StoredRecord[];
}

/** Throws `invalid_argument` unless `ids` is an array of non-empty strings. */
export function checkIds(ids: unknown, what: string): readonly string[] {
  for (const id of checkArray(ids, what)) checkSessionId(id, `an id of ${what}`);
  return ids as readonly string[];
}

/** Throws `invalid_argument` unless `entries` are wake-ups (`at` finite, `taskId` non-empty). */
export function checkWakeUps(entries: unknown): readonly WakeUp[] {
  const seen = new Set<string>();
  for (const entry of checkArray(entries, 'wakeUps')) {
    if (!isObject(entry)) fail(`a wake-up must be an object, got ${describeValue(entry)}`);
    const sessionId = checkSessionId(entry.sessionId, 'wake-up sessionId');
    if (seen.has(sessionId))
      fail(`two wake-ups for ${describeValue(sessionId)}: one row per session`, { sessionId });
    seen.add(sessionId);
    if (entry.at !== undefined) checkTime(entry.at, `the wake-up time of ${sessionId}`);
    if (entry.taskId !== undefined && (typeof entry.taskId !== 'string' || entry.taskId === ''))
      fail(
        `the wake-up taskId of ${describeValue(sessionId)} must be a non-empty string, got ${describeValue(entry.taskId)}`,
        { sessionId },
      );
  }
  return entries as readonly WakeUp[];
}

/** The option names of a fenced write ({@link FenceOptions}). */
export const FENCE_OPTION_NAMES = Object.keys({ now: true } satisfies Record<
  keyof FenceOptions,
  true
>);
/** The option names of `save` ({@link SaveOptions}). */
export const SAVE_OPTION_NAMES = Object.keys({ now: true, wakeUps: true } satisfies Record<
  keyof SaveOptions,
  true
>);

/**
 * Throws `invalid_argument` unless `options` is undefined or an object with only `known`
 * names (see checkOptionNames); returns its `now`.
 */
export function fenceTime(options: unknown, known: readonly string[] = FENCE_OPTION_NAMES): number {
  if (options === undefined) return Date.now();
  checkOptionNames(options, known, 'options');
  const { now } = options as FenceOptions;
  return now === undefined ? Date.now() : checkTime(now);
}

/** The `dueBy` of `loadWakeUps` options, checked. Throws `invalid_argument`. */
export function wakeUpsDueBy(options: unknown): number | undefined {
  if (options === undefined) return undefined;
  checkOptionNames(
    options,
    Object.keys({ dueBy: true } satisfies Record<keyof LoadWakeUpsOptions, true>),
    'loadWakeUps options',
  );
  const { dueBy } = options as LoadWakeUpsOptions;
  return dueBy === undefined ? undefined : checkTime(dueBy, 'dueBy');
}

/** A wake-up as returned by `loadWakeUps`: only the fields that are set. */
export function wakeUpOf(
  sessionId: string,
  at: number | null | undefined,
  taskId: string | null | undefined,
): WakeUp {
  return {
    sessionId,
    ...(at === null || at === undefined ? {} : { at }),
    ...(taskId === null || taskId === undefined ? {} : { taskId }),
  };
}
