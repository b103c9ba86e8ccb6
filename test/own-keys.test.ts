import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { copyOwn, withOwn } from '../src/base/own-keys.js';

const run = promisify(execFile);

/** Records with the keys that trip plain assignment: prototype names, indexes, odd text. */
const key = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '0', '10', '-1'),
  fc.string(),
);
const record = fc
  .array(fc.tuple(key, fc.jsonValue()), { maxLength: 8 })
  .map(
    (entries) => JSON.parse(JSON.stringify(Object.fromEntries(entries))) as Record<string, unknown>,
  );

describe('copies made key by key (copyOwn, withOwn)', () => {
  it('hold what a spread holds, in its order, with own properties only, and leave the source alone', () => {
    fc.assert(
      fc.property(record, key, fc.jsonValue(), (source, name, value) => {
        const before = JSON.stringify(source);
        const copy = copyOwn(source);
        const spread = { ...source };
        expect(copy).not.toBe(source);
        expect(Reflect.ownKeys(copy)).toEqual(Reflect.ownKeys(spread));
        expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
        for (const own of Object.keys(spread)) expect(copy[own]).toBe(spread[own]);

        const withKey = withOwn<unknown>(source, name, value);
        const spreadWithKey = { ...source, [name]: value };
        expect(Reflect.ownKeys(withKey)).toEqual(Reflect.ownKeys(spreadWithKey));
        expect(Object.getPrototypeOf(withKey)).toBe(Object.prototype);
        expect(Object.getOwnPropertyDescriptor(withKey, name)).toEqual({
          value,
          writable: true,
          enumerable: true,
          configurable: true,
        });
        expect(JSON.stringify(source)).toBe(before);
      }),
      { numRuns: 2_000 },
    );
  });

  it('keep `__proto__` an own key, never the prototype', () => {
    const source = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    const copy = withOwn<unknown>(copyOwn(source), '__proto__', { still: 'own' });
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"still":"own"},"a":1}');
  });

  it('give ledgers, approval requests, finished loops and effects one hidden class for all, where a spread that added a key made one each', {
    timeout: 60_000,
  }, async () => {
    // V8 decides this, so it is asked in a child with its natives: on Node 20 a spread that
    // adds a key makes a map per copy (kept by every function's kv while it lives).
    const child = join(import.meta.dirname, 'fixtures', 'hidden-classes.ts');
    const { stdout } = await run(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', '--conditions=rolebox-source', child],
      { cwd: join(import.meta.dirname, '..') },
    );
    const shared = JSON.parse(stdout) as Record<string, boolean>;
    expect(shared).toMatchObject({
      ledgers: true,
      kvs: true,
      resolvedRequests: true,
      loopStates: true,
      effects: true,
      effectEntries: true,
      copies: true,
    });
    // The control: on Node 20's V8 the shape this guards against still makes a map per copy.
    if (process.versions.v8.startsWith('11.')) expect(shared.spreadCopiesShare).toBe(false);
  });
});
