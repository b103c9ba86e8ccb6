import { describe, expect, it } from 'vitest';
import { checkOptionNames, closestName } from '../src/base/option-names.js';
import { errorOf } from './support/errors.js';

const KNOWN = ['functions', 'conditions', 'idleMs', 'saveDebounceMs', 'ids', 'store'];

describe('closestName', () => {
  it.each([
    ['functons', 'functions'],
    ['Functions', 'functions'],
    ['save_debounce_ms', 'saveDebounceMs'],
    ['idle', 'idleMs'],
    ['condtions', 'conditions'],
    ['sotre', 'store'],
    ['id', 'ids'],
    ['conditionsRegistry', 'conditions'],
    ['storePath', 'store'],
  ])('%j → %j', (name, meant) => {
    expect(closestName(name, KNOWN)).toBe(meant);
  });

  it.each(['constructor', 'toString', '__proto__', 'x', '', 'pipeline', 'a'.repeat(10_000)])(
    '%j suggests nothing',
    (name) => {
      expect(closestName(name, KNOWN)).toBeUndefined();
    },
  );
});

describe('checkOptionNames', () => {
  it('passes known names, absent ones and an empty object', () => {
    expect(() => checkOptionNames({}, KNOWN, 'f options')).not.toThrow();
    expect(() => checkOptionNames({ functions: [], ids: 1 }, KNOWN, 'f options')).not.toThrow();
  });

  it('names the unknown name, the likely meant one and the known ones', () => {
    const error = errorOf(() => checkOptionNames({ functons: [] }, KNOWN, 'f options'));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe(
      'f options: unknown option "functons" (did you mean "functions"?); known: functions, conditions, idleMs, saveDebounceMs, ids, store',
    );
    expect(error.details).toEqual({
      where: 'f options',
      unknown: ['functons'],
      suggestions: { functons: 'functions' },
      known: KNOWN,
    });
  });

  it('names every unknown name at once', () => {
    const error = errorOf(() => checkOptionNames({ a: 1, sotre: 2, store: 3 }, KNOWN, 'f'));
    expect(error.message).toBe(
      'f: unknown options "a", "sotre" (did you mean "store"?); known: functions, conditions, idleMs, saveDebounceMs, ids, store',
    );
  });

  it.each([
    ['constructor', { constructor: 1 }],
    ['toString', { toString: () => 'x' }],
    ['hasOwnProperty', { hasOwnProperty: 1 }],
    ['__proto__', JSON.parse('{"__proto__": {"functions": []}}')],
  ])('refuses %s as an option name, like any other unknown name', (name, options) => {
    const error = errorOf(() => checkOptionNames(options, KNOWN, 'f options'));
    expect(error.code).toBe('invalid_argument');
    expect(error.details.unknown).toEqual([name]);
    expect(error.message).toContain(`unknown option ${JSON.stringify(name)}; known:`);
  });

  it.each([null, undefined, 'functions', 5, [], [1]])(
    'refuses %j, which is not an object',
    (value) => {
      const error = errorOf(() => checkOptionNames(value, KNOWN, 'f options'));
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toMatch(/^f options must be an object, got /);
    },
  );

  it('ignores symbol keys and inherited names', () => {
    const options = Object.assign(Object.create({ inherited: 1 }), { [Symbol('s')]: 1, ids: 1 });
    expect(() => checkOptionNames(options, KNOWN, 'f')).not.toThrow();
  });
});
