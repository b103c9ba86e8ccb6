/**
 * Lookups and writes keyed by text that came from outside (a mode, a type, a slot key, a
 * condition name…). A plain object answers `obj['constructor']` and `'toString' in obj`
 * from Object.prototype, and `obj['__proto__'] = x` replaces its prototype instead of
 * storing `x`; these helpers only ever see and make own properties.
 */

/** `record[key]` when `record` has its own property `key`, else undefined. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Stores `value` as the own enumerable property `key` of `record`, `__proto__` included. */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, {
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}
