/**
 * How many cases a property test runs: `defaultRuns`, unless `ROLEBOX_FUZZ_RUNS` says
 * otherwise (CI on a slow machine may run fewer; a long local run more).
 */
export function fuzzRuns(defaultRuns: number): number {
  const fromEnv = Number(process.env.ROLEBOX_FUZZ_RUNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : defaultRuns;
}
