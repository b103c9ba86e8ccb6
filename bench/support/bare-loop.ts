// The nine-phase loop machine of rolebox/machines driven bare, as the runtime runs it with
// zero delays and a worker that answers at once: its outbound actions made no-ops but its
// `loop_effects` emits, each effect it asks for answered at once with the event the runtime
// answers it with. What is left is the machine's own work per round: the baseline P2 judges
// a loop round against (issue 26 decision 4). Beside it, the same loop in the tree a rolebox
// runs it in, driven bare (bareLoopTree): the floor W4 sets in the LangGraph bench.
import { type AnyActorRef, createActor, type InspectionEvent } from 'xstate';
import {
  createLoopMachine,
  FunctionCatalog,
  LOOP_OUTBOUND_ACTIONS,
  type LoopInput,
} from '../../machines/index.js';
import { realClock } from '../../src/adapters/real-clock.js';
import { loopActorId, sessionActorId } from '../../src/base/actor-ids.js';
import { DEFAULT_LIMITS, defaultConditionRegistry } from '../../src/index.js';
import type { LoopEffect } from '../../src/loop/effect-types.js';
import { SimulatedClock } from '../../src/testing/index.js';
import { roleboxMachines } from './rolebox-machines.js';

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

/** The loop's input as `session.startLoop('|loop:N| task …')` builds it, in session `sessionId`. */
function loopInput(loopId: string, sessionId: string, rounds: number): LoopInput {
  return {
    loopId,
    originSessionId: sessionId,
    agent: 'default',
    basePrompt: `task ${loopId}`,
    mode: 'inherit',
    total: rounds,
    requested: rounds,
    clamped: false,
    promptFingerprint: 'fp',
    at: 0,
  };
}

/** Answers every effect `effects` asks for at once, on `loop`. */
function answerAtOnce(loop: AnyActorRef, effects: readonly LoopEffect[]): void {
  for (const effect of effects) {
    const answer = answerOf(effect, 0);
    if (answer) loop.send(answer);
  }
}

/**
 * Runs loop `loopId` of `rounds` rounds to its end on the bare loop machine. Returns what a
 * store would keep of it once done: its persisted snapshot. Throws when the loop does not
 * finish.
 */
export function runBareLoop(loopId: string, rounds: number): { persisted(): unknown } {
  const actor = createActor(loopMachine, { input: loopInput(loopId, 'S', rounds) });
  actor.on('loop_effects', ({ effects }) => answerAtOnce(actor, effects as readonly LoopEffect[]));
  actor.start();
  actor.send({ type: 'loop.prepared', at: 0 });
  if (actor.getSnapshot().status !== 'done')
    throw new Error(`loop machine ${loopId} did not finish`);
  return { persisted: () => actor.getPersistedSnapshot() };
}

/** Loops run in their session tree under one system actor (see {@link bareLoopTree}). */
export interface BareLoopTree {
  /**
   * Opens session `sessionId`, runs loop `loopId` of `rounds` rounds in it to its end and
   * leaves the session open. Returns what a store would keep of the session once the loop is
   * done: its persisted snapshot. Throws when the loop does not complete.
   */
  run(sessionId: string, loopId: string, rounds: number): { persisted(): unknown };
  stop(): void;
}

/** The system machine of a rolebox with no functions and no delay between rounds. */
const loopTreeSystem = roleboxMachines([], realClock, { interRoundDelayMs: 0 }).system;

/**
 * The loop machine in the tree a rolebox runs it in (root → shard → session → loop), driven
 * bare: the session opened and the loop started with the commands the runtime sends
 * (`system.open_session`, `system.start_loop` through the root), the new loop's first need
 * (`prepare`) answered as the runtime's reconcile answers it, every effect after answered at
 * once on the loop actor, each round's worker session reported to the root's loop registry
 * (`system.loop_worker`), the loop's end reaching the session and the registry through the
 * machines themselves. Every outbound action is the machines' own (notes included); no
 * runtime: no command path, effect runner, dispatcher, timers, saves or host events. The
 * floor a loop through rolebox hits with this tree, beside {@link runBareLoop}'s machine alone.
 * `inspect` sees every XState step (to count them against a rolebox's).
 */
export function bareLoopTree(inspect?: (event: InspectionEvent) => void): BareLoopTree {
  const root = createActor(loopTreeSystem, inspect ? { inspect } : {});
  root.start();
  return {
    run(sessionId, loopId, rounds) {
      root.send({ type: 'system.open_session', sessionId, at: 0, nonce: sessionId });
      root.send({
        type: 'system.start_loop',
        sessionId,
        rootLoopId: loopId,
        loop: loopInput(loopId, sessionId, rounds),
      });
      const loop = root.system.get(loopActorId(loopId)) as AnyActorRef | undefined;
      if (!loop) throw new Error(`loop ${loopId} was not spawned in session ${sessionId}`);
      loop.on('loop_effects', ({ effects }) =>
        answerAtOnce(loop, effects as readonly LoopEffect[]),
      );
      loop.on('round_started', ({ workerSessionId }) =>
        root.send({ type: 'system.loop_worker', loopId, workerSessionId }),
      );
      loop.send({ type: 'loop.prepared', at: 0 });
      const session = root.system.get(sessionActorId(sessionId)) as AnyActorRef;
      const { activeLoopId, lastLoop } = session.getSnapshot().context as {
        activeLoopId: string | null;
        lastLoop?: { phase: string };
      };
      if (activeLoopId !== null || lastLoop?.phase !== 'complete')
        throw new Error(`loop ${loopId} in its session tree did not complete`);
      return { persisted: () => session.getPersistedSnapshot() };
    },
    stop: () => root.stop(),
  };
}
