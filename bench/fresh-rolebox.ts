// A fresh rolebox per request (issue 26, decision 2: shards cost nothing until used):
//   createRolebox → start() → openSession (one session) → stop(), without a store and with a
//   MemorySnapshotStore, each phase timed; goal: the whole well under a millisecond (≤ 0.5 ms).
// Baseline in the same run: the one session's own actor, created from the session machine,
// started and stopped bare (what XState itself costs for it). The batches of both alternate,
// so drift in machine load hits both alike; the figure is the median batch, per lifecycle.
// Run: npm run bench:fresh-rolebox (ROLEBOX_BENCH_QUICK=1: fewer, smaller batches, for code
// so slow that the full run takes too long, e.g. before issue 26's lazy shards).
import { createActor } from 'xstate';
import { createSessionMachine, FunctionCatalog, resolveLimits } from '../machines/index.js';
import {
  createRolebox,
  defaultConditionRegistry,
  defineFunction,
  MemorySnapshotStore,
} from '../src/index.js';
import { SimulatedClock } from '../src/testing/index.js';
import { median, rounded, writeResult } from './measure.js';

const SETTINGS = process.env.ROLEBOX_BENCH_QUICK
  ? { warmUp: 30, batches: 5, perBatch: 20 }
  : { warmUp: 300, batches: 9, perBatch: 200 };
const GOAL_MS = 0.5;
const answered = 'signal_observed(answer)';
const functions = [defineFunction({ name: 'approval', gate: answered, continue_until: answered })];

type Phase = 'create' | 'start' | 'open' | 'stop';
type Times = Record<Phase, number>;

/** One lifecycle of a fresh rolebox with one session: ns per phase. */
async function lifecycle(index: number, withStore: boolean): Promise<Times> {
  const t0 = process.hrtime.bigint();
  const rb = createRolebox({
    functions,
    ...(withStore ? { store: new MemorySnapshotStore(), saveDebounceMs: 0 } : {}),
  });
  const t1 = process.hrtime.bigint();
  await rb.start();
  const t2 = process.hrtime.bigint();
  await rb.openSession({ id: `request-${index}` });
  const t3 = process.hrtime.bigint();
  await rb.stop();
  const t4 = process.hrtime.bigint();
  return {
    create: Number(t1 - t0),
    start: Number(t2 - t1),
    open: Number(t3 - t2),
    stop: Number(t4 - t3),
  };
}

const sessionMachine = createSessionMachine({
  catalog: new FunctionCatalog(functions),
  conditions: defaultConditionRegistry,
  limits: resolveLimits({}),
  clock: new SimulatedClock(0),
});

/** The baseline: the session's own actor, created, started and stopped bare (ns). */
function bareSession(index: number): number {
  const t0 = process.hrtime.bigint();
  const actor = createActor(sessionMachine, { input: { sessionId: `bare-${index}`, at: 0 } });
  actor.start();
  actor.stop();
  return Number(process.hrtime.bigint() - t0);
}

/** µs per lifecycle in one batch: the total and each phase. */
async function roleboxBatch(first: number, withStore: boolean): Promise<Times & { total: number }> {
  const sums: Times = { create: 0, start: 0, open: 0, stop: 0 };
  for (let index = first; index < first + SETTINGS.perBatch; index++) {
    const times = await lifecycle(index, withStore);
    for (const phase of Object.keys(sums) as Phase[]) sums[phase] += times[phase];
  }
  const us = (ns: number) => ns / SETTINGS.perBatch / 1000;
  return {
    create: us(sums.create),
    start: us(sums.start),
    open: us(sums.open),
    stop: us(sums.stop),
    total: us(sums.create + sums.start + sums.open + sums.stop),
  };
}

function bareBatch(first: number): number {
  let ns = 0;
  for (let index = first; index < first + SETTINGS.perBatch; index++) ns += bareSession(index);
  return ns / SETTINGS.perBatch / 1000;
}

/** Median, min and max of a list of µs figures. */
function spread(values: readonly number[]) {
  return {
    median: rounded(median(values)),
    min: rounded(Math.min(...values)),
    max: rounded(Math.max(...values)),
  };
}

/** The figures of one medium: each phase, the total against its goal and the baseline. */
async function measure(withStore: boolean) {
  for (let index = 0; index < SETTINGS.warmUp; index++) {
    await lifecycle(-index - 1, withStore);
    bareSession(-index - 1);
  }
  const rolebox: (Times & { total: number })[] = [];
  const bare: number[] = [];
  for (let batch = 0; batch < SETTINGS.batches; batch++) {
    const first = batch * SETTINGS.perBatch;
    if (batch % 2) bare.push(bareBatch(first));
    rolebox.push(await roleboxBatch(first, withStore));
    if (!(batch % 2)) bare.push(bareBatch(first));
  }
  const phase = (key: Phase | 'total') => spread(rolebox.map((one) => one[key]));
  const total = phase('total');
  const ratios = rolebox.map((one, batch) => one.total / (bare[batch] as number));
  return {
    totalUs: total,
    meetsGoal: total.median / 1000 <= GOAL_MS,
    phasesUs: {
      create: phase('create'),
      start: phase('start'),
      open: phase('open'),
      stop: phase('stop'),
    },
    bareSessionActorUs: spread(bare),
    againstBareSessionActor: spread(ratios),
  };
}

await writeResult('fresh-rolebox', {
  description: `createRolebox → start() → openSession (one session) → stop(), µs per lifecycle (median batch of ${SETTINGS.batches} × ${SETTINGS.perBatch}, min–max over batches); goal: total ≤ ${GOAL_MS} ms; baseline: the session's own actor created, started and stopped bare with XState, in alternating batches (ratio = rolebox / bare, per batch)`,
  settings: SETTINGS,
  noStore: await measure(false),
  memoryStore: await measure(true),
});
