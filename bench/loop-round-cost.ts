// P2: the loop machinery's own cost per round, as a ratio to the nine-phase loop machine of
// `rolebox/machines` driven bare, in the same run, with the answers the runtime sends (goal
// ≤ 1.5×, issue 26 decision 4: what rolebox adds around the SPEC's phases must stay small);
// and, as before, to a bare XState machine doing one event per phase (goal ≤ 3×). Delays are zero and the worker answers at once, so what
// is measured is rolebox: the loop's transitions, the effects it asks for and the runtime
// performing them, the relays of effects and notes through session, shard and root.
// Run: npm run bench:loop
import { assign, createActor, setup } from 'xstate';
import {
  createLoopMachine,
  FunctionCatalog,
  LOOP_OUTBOUND_ACTIONS,
  type LoopInput,
} from '../machines/index.js';
import { createRolebox, DEFAULT_LIMITS, defaultConditionRegistry } from '../src/index.js';
import type { LoopEffect } from '../src/loop/effect-types.js';
import { ScriptedDispatcher, SimulatedClock } from '../src/testing/index.js';
import { atMost, median, timeNs, writeResult } from './measure.js';

const ROUNDS_PER_LOOP = 50;
const LOOPS = 40;
const SAMPLES = 7;

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

// The loop machine as the runtime runs it (zero delays), its outbound actions but its own
// `loop_effects` emits made no-ops: each effect it asks for is answered at once with the
// event the runtime answers it with, so what is left is the machine's own work per round.
const loopMachine = createLoopMachine({
  catalog: new FunctionCatalog([]),
  conditions: defaultConditionRegistry,
  limits: { ...DEFAULT_LIMITS, interRoundDelayMs: 0 },
  clock: new SimulatedClock(0),
}).provide({
  actions: Object.fromEntries(
    LOOP_OUTBOUND_ACTIONS.filter((name) => name !== 'emitLoopNeeds').map((name) => [
      name,
      () => {},
    ]),
  ),
});

/** The runtime's answer to a loop effect, with a dispatcher that finishes every task at once. */
function answerOf(effect: LoopEffect, at: number) {
  switch (effect.kind) {
    case 'prepare':
      return { type: 'loop.prepared', at } as const;
    case 'dispatch_round':
      return {
        type: 'loop.round_dispatched',
        key: effect.key,
        taskId: `task-${effect.key}`,
        workerSessionId: `worker-${effect.key}`,
        at,
      } as const;
    case 'watch_task':
      return {
        type: 'loop.worker_terminated',
        taskId: effect.taskId,
        status: 'completed',
        at,
      } as const;
    case 'collect_result':
      return {
        type: 'loop.result_collected',
        taskId: effect.taskId,
        result: { text: 'ok', hadError: false },
        at,
      } as const;
    case 'arm_deadline':
      // The round timeout never fires here (the task finishes first); the zero delay at once.
      return effect.deadline === 'inter_round_delay'
        ? ({ type: 'loop.deadline_reached', deadline: effect.deadline, at: effect.at } as const)
        : undefined;
    case 'cancel_round':
      return { type: 'loop.worker_cancelled', taskId: effect.taskId, at } as const;
  }
}

function runLoopMachine(): void {
  for (let loop = 0; loop < LOOPS; loop++) {
    const input: LoopInput = {
      loopId: `L${loop}`,
      originSessionId: 'S',
      agent: 'default',
      basePrompt: `task ${loop}`,
      mode: 'inherit',
      total: ROUNDS_PER_LOOP,
      requested: ROUNDS_PER_LOOP,
      clamped: false,
      promptFingerprint: 'fp',
      at: 0,
    };
    const actor = createActor(loopMachine, { input });
    actor.on('loop_effects', ({ effects }) => {
      for (const effect of effects as readonly LoopEffect[]) {
        const answer = answerOf(effect, 0);
        if (answer) actor.send(answer);
      }
    });
    actor.start();
    actor.send({ type: 'loop.prepared', at: 0 });
    if (actor.getSnapshot().status !== 'done') throw new Error('loop machine did not finish');
  }
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
await runRolebox();
const bare: number[] = [];
const machine: number[] = [];
const rolebox: number[] = [];
for (let sample = 0; sample < SAMPLES; sample++) {
  bare.push((await timeNs(runBare)) / rounds);
  machine.push((await timeNs(runLoopMachine)) / rounds);
  rolebox.push((await timeNs(runRolebox)) / rounds);
}
const spread = (values: number[]) => {
  const ratios = values.map((value, index) => value / (machine[index] as number));
  return [Math.min(...ratios), Math.max(...ratios)].map((ratio) => Math.round(ratio * 100) / 100);
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
  machineOverOneEventPerPhase: Math.round((median(machine) / median(bare)) * 100) / 100,
  ratioToOneEventPerPhase: atMost(median(rolebox) / median(bare), 3, '×'),
});
