// The nine-phase loop machine of rolebox/machines driven bare, as the runtime runs it with
// zero delays and a worker that answers at once: its outbound actions made no-ops but its
// `loop_effects` emits, each effect it asks for answered at once with the event the runtime
// answers it with. What is left is the machine's own work per round: the baseline P2 judges
// a loop round against (issue 26 decision 4), and the floor W4 sets in the LangGraph bench.
import { createActor } from 'xstate';
import {
  createLoopMachine,
  FunctionCatalog,
  LOOP_OUTBOUND_ACTIONS,
  type LoopInput,
} from '../../machines/index.js';
import { DEFAULT_LIMITS, defaultConditionRegistry } from '../../src/index.js';
import type { LoopEffect } from '../../src/loop/effect-types.js';
import { SimulatedClock } from '../../src/testing/index.js';

/** The loop machine as the runtime builds it, every delay zero, its own emits kept. */
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

/**
 * Runs loop `loopId` of `rounds` rounds to its end on the bare loop machine. Returns what a
 * store would keep of it once done: its persisted snapshot. Throws when the loop does not
 * finish.
 */
export function runBareLoop(loopId: string, rounds: number): { persisted(): unknown } {
  const input: LoopInput = {
    loopId,
    originSessionId: 'S',
    agent: 'default',
    basePrompt: `task ${loopId}`,
    mode: 'inherit',
    total: rounds,
    requested: rounds,
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
  if (actor.getSnapshot().status !== 'done')
    throw new Error(`loop machine ${loopId} did not finish`);
  return { persisted: () => actor.getPersistedSnapshot() };
}
