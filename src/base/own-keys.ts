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

/**
 * A shallow copy of `record`'s own enumerable properties, as `{ ...record }` makes, built
 * key by key. Where the copy is then given a key `record` lacks, a spread made a hidden class
 * of its own for each copy on Node 20's V8 (~1.5 µs, and a map kept with the copy for as
 * long as it lives); copies made key by key share one.
 */
export function copyOwn<T extends object>(record: T): T {
  const copy: Record<string, unknown> = {};
  for (const key in record)
    if (Object.hasOwn(record, key)) putOwn(copy, key, (record as Record<string, unknown>)[key]);
  return copy as T;
}

/** A copy of `record` with its own property `key` set to `value` (`{ ...record, [key]: value }`; see {@link copyOwn}). */
export function withOwn<T>(
  record: Readonly<Record<string, T>>,
  key: string,
  value: T,
): Record<string, T> {
  const copy = copyOwn(record) as Record<string, T>;
  putOwn(copy, key, value);
  return copy;
}

/** `record[key] = value` as an own property, `__proto__` included (see {@link setOwn}). */
function putOwn<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') setOwn(record, key, value);
  else record[key] = value;
}
