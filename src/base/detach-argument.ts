/**
 * Reading a caller's argument once, up front, so that nothing after it reads the caller's
 * object again. A Proxy, a getter, a revoked proxy or a `toJSON` that throws then throws
 * here, where the command guard turns it into `invalid_argument`, instead of halfway
 * through a command (or inside a machine); and a getter that answers differently on each
 * read cannot pass validation with one value and be applied with another.
 */

/**
 * A copy of `value` that reads nothing of the caller's any more: plain objects (prototype
 * `Object.prototype` or `null`, the prototype kept) and arrays are copied, own enumerable
 * keys only (`__proto__` and symbols included, as own properties), getters read once;
 * primitives are returned as they are. Any other object (a `Date`, a `Map`, a class
 * instance) and a function is returned as it is, after its own enumerable properties and
 * its `toJSON` (called, as `JSON.stringify` would) have been read once, so that one that
 * throws is caught here too. Cycles are kept as cycles.
 *
 * Throws: whatever reading the value throws (a trap, a getter, a revoked proxy, a `toJSON`,
 * a nesting too deep for the stack).
 */
export function detachArgument(value: unknown): unknown {
  return detach(value, new Map());
}

function detach(value: unknown, seen: Map<object, unknown>): unknown {
  if ((typeof value !== 'object' || value === null) && typeof value !== 'function') return value;
  const source = value as object;
  if (seen.has(source)) return seen.get(source);
  // Array.isArray throws for a revoked proxy; getPrototypeOf runs a proxy's trap.
  if (Array.isArray(source)) {
    const copy: unknown[] = [];
    seen.set(source, copy);
    // Only the indices present: a sparse array of length 2³² costs what it holds.
    copy.length = source.length;
    copyOwn(source, copy, seen);
    return copy;
  }
  const prototype = Object.getPrototypeOf(source) as object | null;
  const plain =
    typeof source === 'object' && (prototype === Object.prototype || prototype === null);
  // Not plain data: handed on as it is (a Date's meaning is its toJSON), but read once.
  const copy = plain ? (Object.create(prototype) as object) : source;
  seen.set(source, copy);
  copyOwn(source, plain ? copy : undefined, seen);
  readToJSON(source, seen);
  return copy;
}

/** Calls a `toJSON` once, as `JSON.stringify` will when the value is stored. */
function readToJSON(source: object, seen: Map<object, unknown>): void {
  const toJSON = (source as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') detach(toJSON.call(source, ''), seen);
}

/** Reads every own enumerable property of `source`, copying it into `target` when given. */
function copyOwn(source: object, target: object | undefined, seen: Map<object, unknown>): void {
  for (const key of Reflect.ownKeys(source)) {
    const descriptor = Reflect.getOwnPropertyDescriptor(source, key);
    if (!descriptor?.enumerable) continue;
    // Read through the object (a getter runs with it as `this`), once.
    const item = detach((source as Record<PropertyKey, unknown>)[key], seen);
    if (target !== undefined)
      Object.defineProperty(target, key, {
        value: item,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
}
