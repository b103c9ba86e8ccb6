// No function in src/, machines/ or inspector/ is longer than 150 lines, except statechart
// configurations (the machine factories). Measured with the TypeScript compiler's parser:
// every function with a body (declarations, methods, constructors, accessors, arrow
// functions, function expressions), from its first line to its last. A machine factory is
// a function in machines/ named `create…Machine` whose body calls `createMachine`; only
// the factory itself is exempt, not the functions inside it.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionLengths, type MeasuredFunction } from './support/function-lengths.js';

const REPO = join(import.meta.dirname, '..');
const SCANNED_DIRS = ['src', 'machines', 'inspector'];
const MAX_LINES = 150;

/**
 * Functions still over the limit, `file:name`, to be split. It may only shrink: the test
 * fails for one listed here that is now within the limit, or gone, so the list cannot go stale.
 */
const STILL_TOO_LONG: readonly string[] = [];

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(REPO, dir), { recursive: true, withFileTypes: true })
    .filter(
      (entry) => entry.isFile() && /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts'),
    )
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)))
    .sort();
}

const keyOf = (fn: MeasuredFunction) => `${fn.file}:${fn.name}`;
/** Over the limit and not a statechart configuration in machines/. */
const tooLong = (fn: MeasuredFunction) =>
  fn.lines > MAX_LINES && !(fn.machineFactory && fn.file.startsWith('machines/'));

describe('function length', () => {
  const measured = SCANNED_DIRS.flatMap(sourcesUnder).flatMap((file) =>
    functionLengths(file, readFileSync(join(REPO, file), 'utf8')),
  );

  it(`finds no function over ${MAX_LINES} lines outside the machine factories and the listed ones`, () => {
    // The scan sees the code: the files and the functions in them.
    expect(measured.length).toBeGreaterThan(1_000);
    expect(
      measured.some(
        (fn) => fn.file === 'inspector/server.ts' && fn.name === 'startInspectorServer',
      ),
    ).toBe(true);
    const over = measured
      .filter(tooLong)
      .map((fn) => `${keyOf(fn)} (line ${fn.line}, ${fn.lines} lines)`)
      .filter((entry) => !STILL_TOO_LONG.includes(entry.slice(0, entry.indexOf(' ('))));
    expect(over).toEqual([]);
  });

  it('lists only functions still over the limit (the list may only shrink)', () => {
    const stillOver = new Set(measured.filter(tooLong).map(keyOf));
    expect(STILL_TOO_LONG.filter((key) => !stillOver.has(key))).toEqual([]);
  });

  it('exempts exactly the machine factories, by name and by their createMachine call', () => {
    expect(
      measured
        .filter((fn) => fn.machineFactory)
        .map(keyOf)
        .sort(),
    ).toEqual([
      'machines/function.machine.ts:createFunctionMachine',
      'machines/loop.machine.ts:createLoopMachine',
      'machines/session.machine.ts:createSessionMachine',
      'machines/shard.machine.ts:createShardMachine',
      'machines/system.machine.ts:createSystemMachine',
    ]);
  });
});

describe('the measure', () => {
  const long = (lines: number) =>
    Array.from({ length: lines - 2 }, (_, n) => `  const v${n} = ${n};`).join('\n');

  it('measures declarations, methods, arrows and function expressions from first line to last', () => {
    const text = [
      `function declared() {\n${long(151)}\n}`,
      `class Store {\n  put() {\n${long(3)}\n  }\n  constructor() {}\n}`,
      `const arrow = () => {\n${long(10)}\n};`,
      `const table = { expressed: function () {\n${long(5)}\n} };`,
      `function outer() {\n  const inner = () => 1;\n  return inner;\n}`,
    ].join('\n');
    const found = functionLengths('sample.ts', text).map((fn) => [fn.name, fn.lines]);
    expect(found).toEqual([
      ['declared', 151],
      ['Store.put', 3],
      ['Store.constructor', 1],
      ['arrow', 10],
      ['expressed', 5],
      ['outer', 4],
      ['outer/inner', 1],
    ]);
  });

  it('fails a synthetic source with a 151-line function, and exempts only a real machine factory', () => {
    const body = long(151);
    const sample = [
      `export function createTooLong() {\n${body}\n}`,
      `export function createLongMachine() {\n${body}\n  return setup({}).createMachine({});\n}`,
      `export function createFakeMachine() {\n${body}\n}`,
    ].join('\n');
    const found = functionLengths('machines/sample.ts', sample);
    expect(found.filter(tooLong).map((fn) => fn.name)).toEqual([
      'createTooLong',
      'createFakeMachine',
    ]);
    // The same factory outside machines/ is not exempt.
    expect(functionLengths('src/sample.ts', sample).filter(tooLong)).toHaveLength(3);
  });
});
