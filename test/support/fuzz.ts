/**
 * How many cases a property test runs: `defaultRuns`, unless `ROLEBOX_FUZZ_RUNS` says
 * otherwise (CI on a slow machine may run fewer; a long local run more).
 */
export function fuzzRuns(defaultRuns: number): number {
  const fromEnv = Number(process.env.ROLEBOX_FUZZ_RUNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : defaultRuns;
}

/**
 * fast-check settings: {@link fuzzRuns} cases, and the seed of `ROLEBOX_FUZZ_SEED` when set,
 * so a failure reported with its seed can be run again exactly.
 */
export function fuzzSettings(defaultRuns: number): { numRuns: number; seed?: number } {
  const seed = Number(process.env.ROLEBOX_FUZZ_SEED);
  return {
    numRuns: fuzzRuns(defaultRuns),
    ...(process.env.ROLEBOX_FUZZ_SEED && Number.isInteger(seed) ? { seed } : {}),
  };
}
