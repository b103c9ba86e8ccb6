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
