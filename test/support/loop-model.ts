import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import {
  createLoopMachine,
  FunctionCatalog,
  LOOP_OUTBOUND_ACTIONS,
  type LoopContext,
} from '../../machines/index.js';
import { DEFAULT_LIMITS, defaultConditionRegistry, type SessionHandle } from '../../src/index.js';
import { SimulatedClock, settle } from '../../src/testing/index.js';
import type { GatedDispatcher } from './gated-dispatcher.js';

// The loop machine as a model. In a traversal its invoked actors never run: their
// done/error events are model events, performed on a real system by releasing a gated
// dispatcher step by step.
export const LOOP_LIMITS = { interRoundDelayMs: 2_000, roundTimeoutMs: 60_000 };

export const loopModelMachine = createLoopMachine({
  catalog: new FunctionCatalog([]),
  conditions: defaultConditionRegistry,
  limits: { ...DEFAULT_LIMITS, ...LOOP_LIMITS },
  clock: new SimulatedClock(),
}).provide({ actions: Object.fromEntries(LOOP_OUTBOUND_ACTIONS.map((name) => [name, () => {}])) });

/** A model event. */
export type ModelEvent = EventObject & Record<string, unknown> & { status?: string };

/** A short name for a model event: `dispatched`, `terminated:completed`, `loop.cancel_now`. */
export function label(event: ModelEvent): string {
  if (event.type === 'loop.worker_terminated') return `terminated:${event.status}`;
  if (event.type === 'loop.deadline_reached') return `deadline:${event.deadline}`;
  return event.type;
}

/** Every event the model offers in a state: the runtime's answers and the session's stops. */
export function loopModelEvents(snapshot: AnyMachineSnapshot): ModelEvent[] {
  const context = snapshot.context as LoopContext;
  const taskId = context.activeWorkerTaskId ?? 'none';
  return [
    { type: 'loop.prepared', at: 0 },
    {
      type: 'loop.round_dispatched',
      key: `${context.id}:${context.current}`,
      taskId: `task-${context.current}`,
      workerSessionId: `worker-${context.current}`,
      at: 0,
    },
    { type: 'loop.worker_terminated', taskId, status: 'completed', at: 0 },
    { type: 'loop.worker_terminated', taskId, status: 'cancelled', at: 0 },
    {
      type: 'loop.result_collected',
      taskId,
      result: { text: `summary ${context.current}`, hadError: false },
      at: 0,
    },
    { type: 'loop.collect_failed', taskId, reason: 'worker failed', at: 0 },
    { type: 'loop.worker_cancelled', taskId: context.cancelWorkerTaskId ?? 'none', at: 0 },
    {
      type: 'loop.deadline_reached',
      deadline: 'inter_round_delay',
      at: context.nextDispatchAt ?? 0,
    },
    { type: 'loop.deadline_reached', deadline: 'round_timeout', at: context.roundDeadlineAt ?? 0 },
    { type: 'loop.request_cancel', at: 0 },
    { type: 'loop.cancel_now', at: 0 },
  ];
}

/** The loop's input in the model (a `|loop:2| task` started at 0). */
export const LOOP_MODEL_INPUT = {
  loopId: 'L',
  originSessionId: 'S',
  agent: 'default',
  basePrompt: 'task',
  mode: 'inherit' as const,
  total: 2,
  requested: 2,
  clamped: false,
  promptFingerprint: 'fp',
  at: 0,
};

/** One shortest path to every distinct loop state the model reaches. */
export function loopModelPaths() {
  return getShortestPaths(loopModelMachine, {
    input: LOOP_MODEL_INPUT,
    events: loopModelEvents as never,
    serializeState: (snapshot) => {
      const context = snapshot.context as LoopContext;
      return JSON.stringify([
        snapshot.value,
        context.current,
        context.cancelRequested,
        context.stopNowRequested,
        context.cancelWorkerTaskId ?? null,
      ]);
    },
    serializeEvent: (event) => label(event as ModelEvent),
  });
}

/** The phase of a state value (`{ dispatching: 'sending' }` → `dispatching`). */
export const phaseOf = (value: unknown) =>
  typeof value === 'string' ? value : Object.keys(value as object)[0];

/** Performs a model event on a real system: releases the gated dispatcher, advances the clock, stops the loop. */
export async function performLoopEvent(
  event: ModelEvent,
  sut: { dispatcher: GatedDispatcher; clock: SimulatedClock; session: SessionHandle },
): Promise<void> {
  const { dispatcher, clock, session } = sut;
  switch (label(event)) {
    case 'loop.prepared':
      break;
    case 'loop.round_dispatched':
      dispatcher.releaseDispatch();
      break;
    case 'terminated:completed':
      dispatcher.complete(undefined, 'summary');
      break;
    case 'terminated:cancelled':
      dispatcher.cancelExternally();
      break;
    case 'loop.result_collected':
      dispatcher.releaseResult();
      break;
    case 'loop.collect_failed':
      dispatcher.releaseResult(new Error('worker failed'));
      break;
    case 'loop.worker_cancelled':
      dispatcher.releaseCancel();
      break;
    case 'deadline:inter_round_delay':
      clock.advance(LOOP_LIMITS.interRoundDelayMs);
      break;
    case 'deadline:round_timeout':
      clock.advance(LOOP_LIMITS.roundTimeoutMs);
      break;
    case 'loop.request_cancel':
      session.stopLoop();
      break;
    case 'loop.cancel_now':
      session.stopLoop({ now: true });
      break;
    default:
      throw new Error(`no way to perform ${label(event)}`);
  }
  await settle();
}
