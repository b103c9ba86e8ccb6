// P2: the loop machinery's own cost per round, as a ratio to the nine-phase loop machine of
// `rolebox/machines` driven bare, in the same run, with the answers the runtime sends (goal
// ≤ 1.5×, issue 26 decision 4: what rolebox adds around the SPEC's phases must stay small);
// and, as before, to a bare XState machine doing one event per phase (goal ≤ 3×). Beside
// them, the floor: the same loops in the tree a rolebox runs them in (root → shard → session
// → loop) driven bare, and rolebox's time over it (the runtime's share). Delays are zero and
// the worker answers at once, so what is measured is rolebox: the loop's transitions, the
// effects it asks for and the runtime performing them, the loop registry told of each
// round's worker, the session told of the loop's end. Last, a round's cost with 100 and with
// 1 000 loops running at once (it must not grow with them).
// Run: npm run bench:loop
import { assign, createActor, type InspectionEvent, setup } from 'xstate';
import { createRolebox, type SessionHandle } from '../src/index.js';
import { atMost, median, timeNs, writeResult } from './measure.js';
import { bareLoopTree, runBareLoop } from './support/bare-loop.js';
import { InstantDispatcher } from './support/instant-dispatcher.js';

const ROUNDS_PER_LOOP = 50;
const LOOPS = 40;
// Each sample is short (2 000 rounds, well under a second): enough of them that the medians hold.
const SAMPLES = 15;

/** The baseline: the same phases as plain states, one event per phase, a guard and an assign. */
const bareLoop = setup({
  types: { context: {} as { current: number; total: number } },
  guards: { lastRound: ({ context }) => context.current >= context.total },
}).createMachine({
  context: { current: 1, total: ROUNDS_PER_LOOP },
  initial: 'activating',
  states: {
    activating: { on: { START: 'dispatching' } },
    dispatching: { on: { DISPATCHED: 'awaiting_worker' } },
    awaiting_worker: { on: { TERMINATED: 'summarizing' } },
    summarizing: {
      on: {
        SUMMARIZED: [
          { guard: 'lastRound', target: 'complete' },
          {
            target: 'dispatching',
            actions: assign({ current: ({ context }) => context.current + 1 }),
          },
        ],
      },
    },
    complete: { type: 'final' },
  },
});

function runBare(): void {
  for (let loop = 0; loop < LOOPS; loop++) {
    const actor = createActor(bareLoop).start();
    actor.send({ type: 'START' });
    for (let round = 0; round < ROUNDS_PER_LOOP; round++) {
      actor.send({ type: 'DISPATCHED' });
      actor.send({ type: 'TERMINATED' });
      actor.send({ type: 'SUMMARIZED' });
    }
    if (actor.getSnapshot().status !== 'done') throw new Error('bare loop did not finish');
  }
}

function runLoopMachine(): void {
  for (let loop = 0; loop < LOOPS; loop++) runBareLoop(`L${loop}`, ROUNDS_PER_LOOP);
}

/** The same loops in the tree a rolebox runs them in (root → shard → session → loop), bare. */
function runLoopTree(): void {
  const tree = bareLoopTree();
  for (let loop = 0; loop < LOOPS; loop++) tree.run(`S${loop}`, `L${loop}`, ROUNDS_PER_LOOP);
  tree.stop();
}

async function runRolebox(): Promise<void> {
  // Its workers answer at once and keep nothing: a round's time is the engine's.
  const dispatcher = new InstantDispatcher('ok');
  const rb = createRolebox({ dispatcher, limits: { interRoundDelayMs: 0 } });
  await rb.start();
  let finished = 0;
  const done = new Promise<void>((resolve) =>
    rb.on('loop_finished', (event) => {
      if (event.phase !== 'complete') throw new Error(`loop ended ${event.phase}`);
      if (++finished === LOOPS) resolve();
    }),
  );
  for (let loop = 0; loop < LOOPS; loop++) {
    const session = await rb.openSession();
    const started = session.startLoop(`|loop:${ROUNDS_PER_LOOP}| task ${loop}`);
    if (!started.ok) throw new Error(started.reason);
  }
  await done;
  await rb.stop();
}

/**
 * Many loops at once: rolebox's time per round with `loops` loops running together (each
 * 20 rounds). Each round reports its worker to the root's loop registry, so this shows
 * whether a round's cost grows with the loops running (it did while the registry was copied
 * whole on each report).
 */
async function roleboxRoundWithLoopsRunning(loops: number): Promise<number> {
  const roundsEach = 20;
  const rb = createRolebox({
    dispatcher: new InstantDispatcher('ok'),
    limits: { interRoundDelayMs: 0 },
  });
  await rb.start();
  const sessions: SessionHandle[] = [];
  for (let loop = 0; loop < loops; loop++) sessions.push(await rb.openSession());
  let finished = 0;
  const done = new Promise<void>((resolve) =>
    rb.on('loop_finished', () => {
      if (++finished === loops) resolve();
    }),
  );
  globalThis.gc?.();
  const ns = await timeNs(async () => {
    for (const [loop, session] of sessions.entries()) {
      const started = session.startLoop(`|loop:${roundsEach}| task ${loop}`);
      if (!started.ok) throw new Error(started.reason);
    }
    await done;
  });
  await rb.stop();
  return ns / (loops * roundsEach);
}

/**
 * How many times each event type reaches an actor, from XState's inspection; a shard's own
 * steps left out, as a rolebox's inspection leaves them out (shards only route).
 */
function eventCounter(): { inspect(event: InspectionEvent): void; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  return {
    inspect(event) {
      if (event.type !== '@xstate.event') return;
      const step = event as unknown as { actorRef: { id: string }; event: { type: string } };
      if (step.actorRef.id.startsWith('shard:')) return;
      const { type } = step.event;
      counts.set(type, (counts.get(type) ?? 0) + 1);
    },
    counts,
  };
}

/**
 * The floor must take the XState steps rolebox takes for the same loop, no fewer: one
 * 5-round loop through each, every event type counted (rolebox's `rb.stop()` aside).
 */
async function checkTreeTakesRoleboxSteps(): Promise<void> {
  const inTree = eventCounter();
  const tree = bareLoopTree(inTree.inspect);
  tree.run('S', 'L', 5);
  tree.stop();
  const inRolebox = eventCounter();
  const rb = createRolebox({
    dispatcher: new InstantDispatcher('ok'),
    limits: { interRoundDelayMs: 0 },
    inspect: inRolebox.inspect,
  });
  await rb.start();
  const finished = new Promise<void>((resolve) => rb.on('loop_finished', () => resolve()));
  (await rb.openSession()).startLoop('|loop:5| task');
  await finished;
  await rb.stop();
  inRolebox.counts.delete('system.stop_sessions');
  const describe = (counts: Map<string, number>) =>
    JSON.stringify([...counts].sort(([a], [b]) => a.localeCompare(b)));
  if (describe(inTree.counts) !== describe(inRolebox.counts))
    throw new Error(
      `the loop tree floor takes other steps than rolebox: ${describe(inTree.counts)} against ${describe(inRolebox.counts)}`,
    );
}

await checkTreeTakesRoleboxSteps();
const rounds = LOOPS * ROUNDS_PER_LOOP;
// Warm up each, then interleave them in every sample so drift in machine load hits all alike.
runBare();
runLoopMachine();
runLoopTree();
await runRolebox();
const bare: number[] = [];
const machine: number[] = [];
const tree: number[] = [];
const rolebox: number[] = [];
const contenders: [() => unknown, number[]][] = [
  [runBare, bare],
  [runLoopMachine, machine],
  [runLoopTree, tree],
  [runRolebox, rolebox],
];
for (let sample = 0; sample < SAMPLES; sample++) {
  // Each sample starts with the next contender, and each run starts with a full collection
  // (npm run bench:loop exposes gc): the garbage one contender leaves is not timed in another's.
  const first = sample % contenders.length;
  for (const [run, times] of [...contenders.slice(first), ...contenders.slice(0, first)]) {
    globalThis.gc?.();
    times.push((await timeNs(run)) / rounds);
  }
}
// Many loops at once, 100 and 1 000 alternating (after one of each to warm up).
await roleboxRoundWithLoopsRunning(100);
await roleboxRoundWithLoopsRunning(1_000);
const atHundred: number[] = [];
const atThousand: number[] = [];
for (let sample = 0; sample < 3; sample++) {
  atHundred.push(await roleboxRoundWithLoopsRunning(100));
  atThousand.push(await roleboxRoundWithLoopsRunning(1_000));
}
const round2 = (value: number) => Math.round(value * 100) / 100;
/** The min–max of `values` over `baseline`, paired per sample. */
const spread = (values: number[], baseline: number[] = machine) => {
  const ratios = values.map((value, index) => value / (baseline[index] as number));
  return [Math.min(...ratios), Math.max(...ratios)].map(round2);
};
await writeResult('loop-round-cost', {
  description:
    'P2: rolebox cost per loop round (zero delays, instant worker) / the loop machine of rolebox/machines driven bare with the runtime’s answers (goal ≤ 1.5×); and / a bare XState machine doing one event per phase (goal ≤ 3×); tree = the loop machine in its session tree (root → shard → session → loop) driven bare, the floor; roleboxOverTree = the runtime’s share; spreads paired per sample, the contenders’ order rotated each sample, a full gc before each run; manyLoops = a round with 1 000 loops running at once / with 100 (20 rounds each, goal ≤ 1.5×: flat)',
  roundsPerSample: rounds,
  samples: SAMPLES,
  bareNsPerRound: Math.round(median(bare)),
  loopMachineNsPerRound: Math.round(median(machine)),
  roleboxNsPerRound: Math.round(median(rolebox)),
  ratio: atMost(median(rolebox) / median(machine), 1.5, '×'),
  ratioSpread: spread(rolebox),
  // The floor: the loop machine in its session tree driven bare (bare-loop.ts, bareLoopTree),
  // and what the runtime adds over it.
  treeNsPerRound: Math.round(median(tree)),
  treeOverMachine: round2(median(tree) / median(machine)),
  treeOverMachineSpread: spread(tree),
  roleboxOverTree: round2(median(rolebox) / median(tree)),
  roleboxOverTreeSpread: spread(rolebox, tree),
  machineOverOneEventPerPhase: round2(median(machine) / median(bare)),
  ratioToOneEventPerPhase: atMost(median(rolebox) / median(bare), 3, '×'),
  // Many loops at once (20 rounds each, all started together): a round's cost should not
  // grow with the loops running (goal ≤ 1.5×: a round at 1 000 loops / at 100).
  manyLoops: {
    nsPerRoundAt100: Math.round(median(atHundred)),
    nsPerRoundAt1000: Math.round(median(atThousand)),
    ratio: atMost(median(atThousand) / median(atHundred), 1.5, '×'),
    ratioSpread: spread(atThousand, atHundred),
  },
});
