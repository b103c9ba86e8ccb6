// P2: the loop machinery's own cost per round, as a ratio to the nine-phase loop machine of
// `rolebox/machines` driven bare, in the same run, with the answers the runtime sends (goal
// ≤ 1.5×, issue 26 decision 4: what rolebox adds around the SPEC's phases must stay small);
// and, as before, to a bare XState machine doing one event per phase (goal ≤ 3×). Delays are zero and the worker answers at once, so what
// is measured is rolebox: the loop's transitions, the effects it asks for and the runtime
// performing them, the relays of effects and notes through session, shard and root.
// Run: npm run bench:loop
import { assign, createActor, setup } from 'xstate';
import { createRolebox } from '../src/index.js';
import { ScriptedDispatcher } from '../src/testing/index.js';
import { atMost, median, timeNs, writeResult } from './measure.js';
import { bareLoopTree, runBareLoop } from './support/bare-loop.js';

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
  const dispatcher = new ScriptedDispatcher(() => 'ok');
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

const rounds = LOOPS * ROUNDS_PER_LOOP;
// Warm up both, then alternate samples so drift in machine load hits both alike.
runBare();
runLoopMachine();
runLoopTree();
await runRolebox();
const bare: number[] = [];
const machine: number[] = [];
const tree: number[] = [];
const rolebox: number[] = [];
for (let sample = 0; sample < SAMPLES; sample++) {
  bare.push((await timeNs(runBare)) / rounds);
  machine.push((await timeNs(runLoopMachine)) / rounds);
  tree.push((await timeNs(runLoopTree)) / rounds);
  rolebox.push((await timeNs(runRolebox)) / rounds);
}
const round2 = (value: number) => Math.round(value * 100) / 100;
/** The min–max of `values` over `baseline`, paired per sample. */
const spread = (values: number[], baseline: number[] = machine) => {
  const ratios = values.map((value, index) => value / (baseline[index] as number));
  return [Math.min(...ratios), Math.max(...ratios)].map(round2);
};
await writeResult('loop-round-cost', {
  description:
    'P2: rolebox cost per loop round (zero delays, instant worker) / the loop machine of rolebox/machines driven bare with the runtime’s answers (goal ≤ 1.5×); and / a bare XState machine doing one event per phase (goal ≤ 3×)',
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
});
