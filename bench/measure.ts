import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Median of a list of numbers. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Nanoseconds taken by `run` (which may be async). */
export async function timeNs(run: () => unknown): Promise<number> {
  const start = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - start);
}

/** `value` rounded to `digits` decimals (figures are read by people, not diffed to the ns). */
export function rounded(value: number, digits = 2): number {
  return Number(value.toFixed(digits));
}

/** A figure checked against its goal (`value ≤ max`), as it is written to the results. */
export interface GoalFigure {
  readonly value: number;
  readonly unit: string;
  readonly goal: string;
  readonly met: boolean;
}

/** Checks a figure against an upper bound: the form every goal of the benches takes. */
export function atMost(value: number, max: number, unit: string): GoalFigure {
  return { value: rounded(value), unit, goal: `<= ${max}`, met: value <= max };
}

/**
 * JS heap in use once garbage is collected, in bytes. Needs `node --expose-gc`: a heap
 * figure taken with garbage still in it says nothing per session. Collects several times,
 * yielding in between, so that finalizers and weak references settle.
 */
export async function settledHeap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('heap figures need node --expose-gc');
  for (let round = 0; round < 4; round++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

/**
 * Runs `file` again in a fresh Node process (with `--expose-gc` and tsx) and returns what
 * it printed as JSON. A part of a bench that builds 100 000 sessions, or measures heap,
 * must not share a heap or a JIT warm-up with the others.
 */
export function runPart<T>(file: string, args: readonly string[]): T {
  const output = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', '--conditions=rolebox-source', file, ...args],
    { encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return JSON.parse(output) as T;
}

/** A part of a bench: figures from an optional argument (run in a process of its own). */
export type BenchPart = (arg?: string) => Promise<Record<string, number>>;

/**
 * The entry of a bench split into parts that each run in a fresh process ({@link runPart}).
 * Started as `file --part <name> [arg]`, it runs that part, prints its figures and returns
 * undefined; started otherwise, it returns how the parent runs one part (`label` names the
 * bench in the progress lines).
 */
export async function benchParts<TParts extends Record<string, BenchPart>>(
  file: string,
  label: string,
  parts: TParts,
): Promise<(<T>(name: keyof TParts & string, extra?: string[]) => T) | undefined> {
  const [, , mode, part, arg] = process.argv;
  if (mode === '--part') {
    const run = parts[part as keyof TParts];
    if (!run) throw new Error(`no part ${part}`);
    process.stdout.write(JSON.stringify(await run(arg)));
    return undefined;
  }
  return <T>(name: keyof TParts & string, extra: string[] = []) => {
    console.error(`${label}: ${[name, ...extra].join(' ')}…`);
    return runPart<T>(file, ['--part', name, ...extra]);
  };
}

/**
 * Writes a benchmark's figures to bench/results/<name>.json (with the machine it ran on)
 * and prints them. Figures are ratios against a baseline measured in the same run: the
 * machines are shared and noisy, absolute times are not comparable across runs.
 */
export async function writeResult(name: string, figures: Record<string, unknown>): Promise<void> {
  const result = {
    benchmark: name,
    measuredAt: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    ...figures,
  };
  const dir = join(import.meta.dirname, 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
}
