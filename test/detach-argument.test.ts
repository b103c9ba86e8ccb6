import { describe, expect, it } from 'vitest';
import { detachArgument } from '../src/base/detach-argument.js';

// What the command guard hands a method instead of the caller's argument: read once, plain
// data copied, nothing of the caller's object read again.

describe('detachArgument', () => {
  it('copies plain objects and arrays, keeping primitives, null prototypes and cycles', () => {
    const bare = Object.assign(Object.create(null) as object, { a: 1 });
    const value: Record<string, unknown> = { n: 1, s: 'x', list: [1, { b: 2 }], bare };
    value.self = value;
    const copy = detachArgument(value) as Record<string, unknown>;
    expect(copy).not.toBe(value);
    expect(copy.list).not.toBe(value.list);
    expect(copy.list).toEqual([1, { b: 2 }]);
    expect(Object.getPrototypeOf(copy.bare)).toBeNull();
    expect(copy.self).toBe(copy);
    for (const primitive of ['x', 1, 1n, true, null, undefined]) {
      expect(detachArgument(primitive)).toBe(primitive);
    }
  });

  it('an own __proto__ stays an own property and the copy keeps its prototype', () => {
    const value = JSON.parse('{"__proto__": {"polluted": 1}, "k": 2}') as object;
    const copy = detachArgument(value) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"polluted":1},"k":2}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads a getter once and keeps its value', () => {
    let reads = 0;
    const copy = detachArgument({
      get name() {
        reads++;
        return `read ${reads}`;
      },
    }) as { name: string };
    expect(copy.name).toBe('read 1');
    expect(copy.name).toBe('read 1');
    expect(reads).toBe(1);
  });

  it('hands other objects on as they are, after reading them and their toJSON', () => {
    const date = new Date(0);
    const map = new Map([['a', 1]]);
    expect(detachArgument(date)).toBe(date);
    expect(detachArgument(map)).toBe(map);
    const fn = () => 1;
    expect(detachArgument(fn)).toBe(fn);
    class Throws {
      toJSON() {
        throw new Error('toJSON');
      }
    }
    expect(() => detachArgument({ inner: new Throws() })).toThrow('toJSON');
  });

  it('a sparse array costs what it holds', () => {
    const sparse: unknown[] = [];
    sparse.length = 2 ** 32 - 1;
    sparse[7] = 'x';
    const copy = detachArgument(sparse) as unknown[];
    expect(copy.length).toBe(2 ** 32 - 1);
    expect(copy[7]).toBe('x');
    expect(Object.keys(copy)).toEqual(['7']);
  });

  it('throws what reading throws: traps, revoked proxies, getters', () => {
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    expect(() => detachArgument(revocable.proxy)).toThrow(TypeError);
    const trap = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('ownKeys');
        },
      },
    );
    expect(() => detachArgument([trap])).toThrow('ownKeys');
    const getter = Object.defineProperty({}, 'x', {
      enumerable: true,
      get() {
        throw new Error('getter');
      },
    });
    expect(() => detachArgument({ deep: { deeper: getter } })).toThrow('getter');
  });
});
