import { copyOwn, setOwn, withOwn } from '../base/own-keys.js';
import type { SignalType } from './catalogue.js';

/** The key-value store of a function; the ledger and the last terminating type live in it. */
export type FunctionKv = Readonly<Record<string, unknown>>;

/** Where the ledger lives in a function's kv. */
export const LEDGER_KEY = '__signals_observed';

/** Where the last terminating signal type lives in a function's kv. */
export const SIGNAL_TYPE_KEY = '__signal_type';

/** The signal ledger: signal type → last payload (or null when it had none). */
export type SignalLedger = Record<string, unknown>;

/**
 * Reads the ledger of `kv`, accepting the legacy form (a `string[]` of types, read as
 * types without payloads). Returns a fresh object.
 */
export function readLedgerRecord(kv: FunctionKv): SignalLedger {
  const raw = kv[LEDGER_KEY];
  if (Array.isArray(raw)) {
    const ledger: SignalLedger = {};
    for (const type of raw) if (typeof type === 'string') setOwn<unknown>(ledger, type, null);
    return ledger;
  }
  if (typeof raw === 'object' && raw !== null) return copyOwn(raw as SignalLedger);
  return {};
}

/**
 * Records a signal: last write wins per type. Returns a new kv; `kv` is not changed.
 * A legacy array ledger is migrated to the record form on the way.
 */
export function recordSignal(
  kv: FunctionKv,
  type: SignalType | string,
  payload?: unknown,
): FunctionKv {
  const ledger = readLedgerRecord(kv);
  setOwn<unknown>(ledger, type, payload === undefined ? null : payload);
  return withOwn(kv, LEDGER_KEY, ledger);
}

/** True when the ledger holds `type` (in either the record or the legacy array form). */
export function hasSignal(kv: FunctionKv, type: SignalType | string): boolean {
  const raw = kv[LEDGER_KEY];
  if (Array.isArray(raw)) return raw.includes(type);
  if (typeof raw === 'object' && raw !== null) return Object.hasOwn(raw, type);
  return false;
}

/** The payload recorded for `type`: null when recorded without one, undefined when never recorded. */
export function getSignalPayload(kv: FunctionKv, type: SignalType | string): unknown {
  const ledger = readLedgerRecord(kv);
  return Object.hasOwn(ledger, type) ? ledger[type] : undefined;
}

/** Removes one type from the ledger. Returns a new kv. */
export function clearSignal(kv: FunctionKv, type: SignalType | string): FunctionKv {
  // Copied without it rather than deleted from a copy: an object that loses a key turns
  // into a dictionary (slower to read and copy) for as long as the kv keeps it.
  const ledger: SignalLedger = {};
  const raw = readLedgerRecord(kv);
  for (const key of Object.keys(raw)) if (key !== type) setOwn<unknown>(ledger, key, raw[key]);
  return withOwn(kv, LEDGER_KEY, ledger);
}

/** Empties the ledger. Returns a new kv. */
export function clearAllSignals(kv: FunctionKv): FunctionKv {
  return withOwn<unknown>(kv, LEDGER_KEY, {});
}
