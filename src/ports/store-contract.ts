import { listed } from '../base/listed.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { ClaimedRecord, ClaimResult, SnapshotStore } from './snapshot-store.js';

/**
 * The shape a host's {@link SnapshotStore} must have, checked where rolebox meets it: its
 * methods once, when a rolebox is created with it, and the answer of a write the first
 * time one is read. A store written against an older port then gets `invalid_argument`
 * saying what changed and how to update it, instead of a bare TypeError deep in a save.
 */

/** Every method a SnapshotStore must have (the port as it is now). */
export const SNAPSHOT_STORE_METHODS = [
  'loadAll',
  'loadByPrefix',
  'load',
  'save',
  'delete',
  'claim',
  'renew',
  'release',
  'setWakeUps',
  'clearWakeUps',
  'loadWakeUps',
] as const;

/** The methods of `store.immediate`, when a store has it. */
const IMMEDIATE_ACCESS_METHODS = ['load', 'claim', 'claimAndLoad', 'renew'] as const;

/** The port of rolebox 0.1 had these only (its save and delete answered nothing). */
const PORT_0_1_METHODS = ['loadAll', 'load', 'save', 'delete'] as const;

/** Where the contract is written down for a host. */
const SEE = 'see "Writing your own store" in the README';

/** What a 0.1 store has to change, said once for both checks. */
const SINCE_0_1 =
  'the port changed after 0.1: a store now also keeps claims (claim, renew, release: which process drives a session) and a wake-up index (setWakeUps, clearWakeUps, loadWakeUps), reads by prefix (loadByPrefix), and its save and delete take leases and answer { refused: string[] } (the sessions they did not write; [] when they wrote everything)';

/**
 * Checks a store's shape, once (createRolebox's `store` option): every port method is a
 * function, `close` when present too, and `immediate` when present has its methods.
 * Reading the store runs no method.
 * Throws: `invalid_argument` naming the option, the missing or wrong methods, and — for a
 * store that has exactly what the 0.1 port had — what changed since and where to read how.
 */
export function checkSnapshotStore(store: unknown, option = 'store'): void {
  if (typeof store !== 'object' || store === null)
    throw new RoleboxError(
      'invalid_argument',
      `${option} must be a SnapshotStore (an object with ${listed(SNAPSHOT_STORE_METHODS)}), got ${describeValue(store)}; ${SEE}`,
      { option },
    );
  const missing = missingMethods(store, SNAPSHOT_STORE_METHODS, option);
  if (missing.length > 0) {
    // Exactly what the 0.1 port had, and nothing of what came after it.
    const looks01 = SNAPSHOT_STORE_METHODS.every(
      (method) =>
        missing.includes(method) !== (PORT_0_1_METHODS as readonly string[]).includes(method),
    );
    throw new RoleboxError(
      'invalid_argument',
      `${option} must implement ${listed(SNAPSHOT_STORE_METHODS)}; it has no ${listed(missing)}${looks01 ? `. It looks written for the 0.1 store port: ${SINCE_0_1}` : ''}; ${SEE}`,
      { option, missing },
    );
  }
  const close = read(store, 'close', option);
  if (close !== undefined && typeof close !== 'function')
    throw new RoleboxError(
      'invalid_argument',
      `${option}.close must be a function when present, got ${describeValue(close)}`,
      { option, missing: ['close'] },
    );
  const immediate = read(store, 'immediate', option);
  if (immediate === undefined) return;
  const missingNow =
    typeof immediate === 'object' && immediate !== null
      ? missingMethods(immediate, IMMEDIATE_ACCESS_METHODS, `${option}.immediate`)
      : [...IMMEDIATE_ACCESS_METHODS];
  if (missingNow.length > 0)
    throw new RoleboxError(
      'invalid_argument',
      `${option}.immediate, when present, must implement ${listed(IMMEDIATE_ACCESS_METHODS)}; it has no ${listed(missingNow)}; ${SEE}`,
      { option, missing: missingNow.map((method) => `immediate.${method}`) },
    );
}

/**
 * The sessions a store's `save` or `delete` did not write, read from its answer.
 * Throws: `invalid_argument` when the answer is not `{ refused: string[] }` (a store
 * written for the 0.1 port answers nothing), saying what to return instead.
 */
export function refusedIn(answer: unknown, method: 'save' | 'delete'): readonly string[] {
  const refused = safeGet(answer, 'refused');
  if (Array.isArray(refused) && refused.every((id) => typeof id === 'string')) return refused;
  throw new RoleboxError(
    'invalid_argument',
    `store.${method} answered ${describeValue(answer)}, not { refused: string[] }: ${
      answer === undefined
        ? `a store written for the 0.1 port answers nothing, and ${SINCE_0_1}. Return { refused: [] } when every record was written`
        : `it must list the ids of the sessions it did not write (their lease no longer holds, or another process holds a live claim on them), [] when it wrote everything`
    }; ${SEE}`,
    { method, answer: describeValue(answer) },
  );
}

/**
 * A store's answer to `claim`, checked.
 * Throws: `invalid_argument` unless it is `{ ok: true, token }` or
 * `{ ok: false, owner: { ownerId, pid, host }, expiresAt }`.
 */
export function claimResultIn(answer: unknown, method = 'claim'): ClaimResult {
  if (isClaimResult(answer)) return answer;
  throw new RoleboxError(
    'invalid_argument',
    `store.${method} answered ${describeValue(answer)}; a claim answers { ok: true, token } (a number, higher than every token issued when the session changes hands) or { ok: false, owner: { ownerId, pid, host }, expiresAt }; ${SEE}`,
    { method, answer: describeValue(answer) },
  );
}

/**
 * A store's answer to `immediate.claimAndLoad`, checked: undefined (no such record) or
 * the record's text with its claim. Throws: `invalid_argument` saying what it must be.
 */
export function claimedRecordIn(answer: unknown): ClaimedRecord | undefined {
  if (answer === undefined) return undefined;
  const data = safeGet(answer, 'data');
  const claim = safeGet(answer, 'claim');
  if (typeof data === 'string' && isClaimResult(claim)) return { data, claim };
  throw new RoleboxError(
    'invalid_argument',
    `store.immediate.claimAndLoad answered ${describeValue(answer)}; it answers undefined when there is no record, else { data, claim } with the record's text and the claim's result; ${SEE}`,
    { method: 'immediate.claimAndLoad', answer: describeValue(answer) },
  );
}

/**
 * A store's answer to `renew` (true: the claim was extended; false: the lease no longer
 * holds). Throws: `invalid_argument` for anything else: taken as false, it would drop
 * every session at the first renewal.
 */
export function renewedIn(answer: unknown): boolean {
  if (typeof answer === 'boolean') return answer;
  throw new RoleboxError(
    'invalid_argument',
    `store.renew answered ${describeValue(answer)}; it answers true when the claim was extended, false when the lease no longer holds; ${SEE}`,
    { method: 'renew', answer: describeValue(answer) },
  );
}

/** A store's answer to `immediate.renew`: the sessions whose claim was lost. Throws: `invalid_argument`. */
export function lostIn(answer: unknown): string[] {
  if (Array.isArray(answer) && answer.every((id) => typeof id === 'string')) return answer;
  throw new RoleboxError(
    'invalid_argument',
    `store.immediate.renew answered ${describeValue(answer)}; it answers the ids of the sessions whose claim could not be renewed ([] when all were); ${SEE}`,
    { method: 'immediate.renew', answer: describeValue(answer) },
  );
}

function isClaimResult(answer: unknown): answer is ClaimResult {
  const ok = safeGet(answer, 'ok');
  if (ok === true) return Number.isSafeInteger(safeGet(answer, 'token'));
  if (ok !== false) return false;
  const owner = safeGet(answer, 'owner');
  return (
    typeof safeGet(owner, 'ownerId') === 'string' &&
    typeof safeGet(owner, 'pid') === 'number' &&
    typeof safeGet(owner, 'host') === 'string' &&
    typeof safeGet(answer, 'expiresAt') === 'number'
  );
}

/** A property of a store's answer; undefined when it is not an object or reading throws. */
function safeGet(value: unknown, key: string): unknown {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    return Reflect.get(value, key);
  } catch {
    return undefined;
  }
}

/** The methods of `value` that are not functions. Throws: `invalid_argument` when reading one throws. */
function missingMethods(value: object, methods: readonly string[], where: string): string[] {
  return methods.filter((method) => typeof read(value, method, where) !== 'function');
}

/** One property of a host's object. Throws: `invalid_argument` when reading it throws. */
function read(value: object, key: string, where: string): unknown {
  try {
    return Reflect.get(value, key);
  } catch {
    throw new RoleboxError(
      'invalid_argument',
      `${where}.${key} cannot be read: reading it threw (a Proxy or a getter); pass the store object itself`,
      { option: where, key },
    );
  }
}
