import { describeValue } from '../errors.js';

/** Bounds of {@link plainJsonProblem}. */
export interface PlainJsonBounds {
  /** Deepest nesting of objects and arrays; the value itself is level 1. */
  readonly maxDepth: number;
  /** Most values visited before giving up (each costs at least a byte of JSON text). */
  readonly maxValues: number;
}

/** What a value that is not plain JSON is, for a message: `a Date`, `a function`, `NaN`. */
function kindOf(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'bigint') return `a bigint (${value}n)`;
  if (typeof value === 'number') return String(value);
  if (value === undefined) return 'undefined';
  try {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return typeof name === 'string' && name !== '' ? `a ${name}` : 'an exotic object';
  } catch {
    return 'an exotic object';
  }
}

/** A member's step in a path: `.name` for a short identifier, else `["any text"]`, truncated. */
function keyPath(key: string): string {
  return /^[A-Za-z_$][\w$]{0,39}$/.test(key) ? `.${key}` : `[${describeValue(key)}]`;
}

/**
 * Why `value` is not plain JSON data, naming where (`payload.a[2]`) and what it is; undefined
 * when it is. Plain JSON: null, booleans, finite numbers, strings, arrays and objects with
 * the plain (or a null) prototype, string keys only, within the bounds. An object member
 * that is `undefined` is allowed (JSON leaves it out); an `undefined` array item is not.
 * Never throws, never recurses past `maxDepth`.
 */
export function plainJsonProblem(
  value: unknown,
  where: string,
  bounds: PlainJsonBounds,
): string | undefined {
  let visited = 0;
  const check = (item: unknown, path: string, depth: number): string | undefined => {
    if (++visited > bounds.maxValues) return `${where} has more than ${bounds.maxValues} values`;
    if (item === null || typeof item === 'string' || typeof item === 'boolean') return undefined;
    if (typeof item === 'number')
      return Number.isFinite(item) ? undefined : `${path} is ${item}, not a JSON number`;
    if (typeof item !== 'object') return `${path} is ${kindOf(item)}, not a JSON value`;
    if (depth > bounds.maxDepth)
      return `${where} is nested deeper than ${bounds.maxDepth} levels (at ${path})`;
    try {
      if (Array.isArray(item)) {
        if (Object.getPrototypeOf(item) !== Array.prototype)
          return `${path} is ${kindOf(item)}, not a plain array`;
        for (let index = 0; index < item.length; index++) {
          const element: unknown = item[index];
          const at = `${path}[${index}]`;
          if (element === undefined) return `${at} is undefined, not a JSON value`;
          const problem = check(element, at, depth + 1);
          if (problem) return problem;
        }
        return undefined;
      }
      const prototype = Object.getPrototypeOf(item);
      if (prototype !== Object.prototype && prototype !== null)
        return `${path} is ${kindOf(item)}, not a plain object`;
      if (Object.getOwnPropertySymbols(item).length > 0)
        return `${path} has symbol keys; JSON keys are strings`;
      for (const key of Object.keys(item)) {
        const member: unknown = (item as Record<string, unknown>)[key];
        if (member === undefined) continue;
        const problem = check(member, `${path}${keyPath(key)}`, depth + 1);
        if (problem) return problem;
      }
      return undefined;
    } catch (error) {
      return `${path} cannot be read (${describeValue((error as Error)?.message ?? error)})`;
    }
  };
  return check(value, where, 1);
}
