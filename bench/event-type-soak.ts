// Soak: memory stays flat under real load (issue 22, finite event types). XState 5.33 keeps
// every event type a machine receives for good (DESIGN §3), so a machine that receives a
// type named after a session or loop grows the heap with every one of them. This drives
// approval workflows (paused, passivated, activated by the answer, closed) and two-round
// loops (instant workers that keep nothing) through one rolebox with a memory store and
// a small live cap, and compares the heap after gc once the first tenth of the work is done
// with the heap once the last tenth is: goal ≤ 1.05×.
// Run: npm run bench:soak [-- --workflows N --loops M] (defaults 100 000 and 20 000).
import { createRolebox, defineFunction, MemorySnapshotStore } from '../src/index.js';
import { SimulatedClock, settle } from '../src/testing/index.js';
import { atMost, rounded, settledHeap, writeResult } from './measure.js';
import { InstantDispatcher } from './support/instant-dispatcher.js';

/** `--name value` from the command line, as a positive whole number. */
function countArg(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  if (index < 0) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isSafeInteger(value) || value < 10)
    throw new Error(`--${name} must be a whole number ≥ 10, got ${process.argv[index + 1]}`);
  return value;
}

const WORKFLOWS = countArg('workflows', 100_000);
const LOOPS = countArg('loops', 20_000);
const TENTHS = 10;
/** Approval workflows paused at once: twice the live cap, so the older half is passivated. */
const PAUSED_WINDOW = 400;
const MAX_LIVE = 200;
/** Loops run at once, each in its own session. */
const LOOP_BATCH = 50;
const INTER_ROUND_MS = 10;

async function soak() {
  const clock = new SimulatedClock(1_000_000);
  // Its workers end as soon as they start and it keeps nothing: the soak measures rolebox,
  // not a dispatcher's history.
  const dispatcher = new InstantDispatcher('round done');
  const store = new MemorySnapshotStore();
  const rb = createRolebox({
    clock,
    store,
    dispatcher,
    maxLiveSessions: MAX_LIVE,
    // Only the live cap passivates: idle passivation would depend on how far the simulated
    // clock is driven by the loops.
    idleMs: Number.POSITIVE_INFINITY,
    limits: { interRoundDelayMs: INTER_ROUND_MS },
    functions: [
      defineFunction({
        name: 'approval',
        gate: 'signal_observed(answer)',
        continue_until: 'signal_observed(answer)',
      }),
    ],
  });
  let loopsFinished = 0;
  let passivated = 0;
  let activated = 0;
  rb.on('loop_finished', () => {
    loopsFinished++;
  });
  rb.on('session_passivated', () => passivated++);
  rb.on('session_activated', () => activated++);
  await rb.start();

  let opened = 0;
  let answered = 0;
  /** Answers and closes the oldest paused workflow (activating it when passivated). */
  const finishOldest = async () => {
    const session = rb.session(`wf-${answered++}`);
    session.signal({ type: 'answer', payload: { approved: true } });
    session.idle();
    session.close();
  };
  /** One approval workflow: opened, paused on need_approval; the oldest beyond the window finishes. */
  const workflow = async () => {
    const session = await rb.openSession({ id: `wf-${opened++}` });
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { reason: 'refund over $500' } });
    session.idle();
    if (opened - answered > PAUSED_WINDOW) await finishOldest();
  };
  let loopSessions = 0;
  /** A batch of two-round loops, each in its own session, run to their end and closed. */
  const loopBatch = async (count: number) => {
    const target = loopsFinished + count;
    const ids: string[] = [];
    for (let index = 0; index < count; index++) {
      const session = await rb.openSession({ id: `lp-${loopSessions++}` });
      ids.push(session.id);
      const started = session.startLoop('|loop:2| summarise the findings');
      if (!started.ok) throw new Error(`loop not started: ${JSON.stringify(started)}`);
    }
    for (let step = 0; loopsFinished < target; step++) {
      if (step > 1_000) throw new Error(`loops stuck: ${target - loopsFinished} unfinished`);
      await settle();
      clock.advance(INTER_ROUND_MS);
    }
    for (const id of ids) rb.session(id).close();
  };

  const heapMiB: number[] = [];
  const tenthMs: number[] = [];
  for (let tenth = 0; tenth < TENTHS; tenth++) {
    const started = performance.now();
    const workflowsNow = Math.round(((tenth + 1) * WORKFLOWS) / TENTHS) - opened;
    const loopsNow = Math.round(((tenth + 1) * LOOPS) / TENTHS) - loopSessions;
    // Interleaved: a loop batch after every share of workflows.
    const batches = Math.ceil(loopsNow / LOOP_BATCH);
    let loopsLeft = loopsNow;
    for (let batch = 0; batch < Math.max(batches, 1); batch++) {
      const share = Math.round(((batch + 1) * workflowsNow) / Math.max(batches, 1));
      const before = Math.round((batch * workflowsNow) / Math.max(batches, 1));
      for (let index = before; index < share; index++) await workflow();
      if (loopsLeft > 0) {
        const count = Math.min(LOOP_BATCH, loopsLeft);
        await loopBatch(count);
        loopsLeft -= count;
      }
    }
    await rb.flush();
    await settle();
    tenthMs.push(performance.now() - started);
    heapMiB.push((await settledHeap()) / 2 ** 20);
    console.error(
      `tenth ${tenth + 1}: ${opened} workflows, ${loopSessions} loops, heap ${heapMiB.at(-1)?.toFixed(2)} MiB, ${rb.sessions().length} live, ${store.records.size} stored`,
    );
  }
  // Every tenth is measured with the same window of paused workflows open; then they finish.
  while (answered < opened) await finishOldest();
  await rb.flush();
  await settle();
  const drainedMiB = (await settledHeap()) / 2 ** 20;
  const live = rb.sessions().length;
  const stored = store.records.size;
  await rb.stop();
  return {
    heapMiB,
    drainedMiB,
    tenthMs,
    workflows: opened,
    loops: loopSessions,
    loopsFinished,
    passivated,
    activated,
    live,
    stored,
  };
}

const result = await soak();
const first = result.heapMiB[0] as number;
const last = result.heapMiB.at(-1) as number;
const perSessionBytes =
  ((last - first) * 2 ** 20) / ((result.workflows + result.loops) * (1 - 1 / TENTHS));
await writeResult('event-type-soak', {
  description:
    'approval workflows (paused on need_approval, passivated by the live cap, activated by the answer, closed) and two-round loops (instant workers, each in its own session, closed) through one rolebox with a memory store; JS heap after gc once each tenth of the work is done',
  workflows: result.workflows,
  loops: result.loops,
  ratio: {
    measure: 'heap after gc once the last tenth is done / once the first tenth is done',
    ...atMost(last / first, 1.05, '×'),
  },
  growthPerSessionBytes: rounded(perSessionBytes),
  heapMiBByTenth: result.heapMiB.map((value) => rounded(value)),
  heapMiBAllClosed: rounded(result.drainedMiB),
  secondsByTenth: result.tenthMs.map((value) => rounded(value / 1_000)),
  passivations: result.passivated,
  activations: result.activated,
  loopsFinished: result.loopsFinished,
  // Once every workflow finished: no session live or stored.
  leftLive: result.live,
  leftStored: result.stored,
});
