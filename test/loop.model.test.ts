import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import {
  createLoopMachine,
  createRolebox,
  DEFAULT_LIMITS,
  defaultConditionRegistry,
  FunctionCatalog,
  LOOP_OUTBOUND_ACTIONS,
  LOOP_PHASES,
  type LoopContext,
  SimulatedClock,
  seededIdSource,
} from '../src/index.js';
import { settle } from '../src/testing/index.js';
import { GatedDispatcher } from './support/gated-dispatcher.js';

// The loop machine is the model. In the traversal its invoked actors never run: their
// done/error events are model events. The system under test is a real rolebox whose
// dispatcher holds every dispatch, result read and cancel until the step releases it, so
// the real loop stops exactly where the model does. xstate/graph's createTestModel does
// not accept machines with invocations, so the paths are run here.
const limits = { ...DEFAULT_LIMITS, interRoundDelayMs: 2_000, roundTimeoutMs: 60_000 };
const machine = createLoopMachine({
  catalog: new FunctionCatalog([]),
  conditions: defaultConditionRegistry,
  limits,
  clock: new SimulatedClock(),
}).provide({ actions: Object.fromEntries(LOOP_OUTBOUND_ACTIONS.map((name) => [name, () => {}])) });

type ModelEvent = EventObject & Record<string, unknown> & { status?: string };

/** A short name for a model event: `done:dispatch`, `terminated:completed`, `loop.cancel_now`. */
function label(event: ModelEvent): string {
  if (event.type.startsWith('xstate.done.actor.')) return `done:${event.type.slice(18)}`;
  if (event.type.startsWith('xstate.error.actor.')) return `error:${event.type.slice(19)}`;
  if (event.type === 'worker.terminated') return `terminated:${event.status}`;
  return event.type;
}

function modelEvents(snapshot: AnyMachineSnapshot): ModelEvent[] {
  const context = snapshot.context as LoopContext;
  const taskId = context.activeWorkerTaskId ?? 'none';
  return [
    { type: 'xstate.done.actor.prepare' },
    {
      type: 'xstate.done.actor.dispatch',
      output: {
        taskId: `task-${context.current}`,
        workerSessionId: `worker-${context.current}`,
        at: 0,
      },
    },
    { type: 'worker.terminated', taskId, status: 'completed', at: 0 },
    { type: 'worker.terminated', taskId, status: 'cancelled', at: 0 },
    {
      type: 'xstate.done.actor.collect',
      output: { text: `summary ${context.current}`, hadError: false, at: 0 },
    },
    { type: 'xstate.error.actor.collect', error: new Error('worker failed') },
    { type: 'xstate.done.actor.cancelWorker', output: { at: 0 } },
    { type: 'delay.elapsed', at: 0 },
    { type: 'round.timeout', at: 0 },
    { type: 'loop.request_cancel', at: 0 },
    { type: 'loop.cancel_now', at: 0 },
  ];
}

const paths = getShortestPaths(machine, {
  input: {
    loopId: 'L',
    originSessionId: 'S',
    agent: 'default',
    basePrompt: 'task',
    mode: 'inherit',
    total: 2,
    requested: 2,
    clamped: false,
    promptFingerprint: 'fp',
    at: 0,
  },
  events: modelEvents as never,
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

const phaseOf = (value: unknown) =>
  typeof value === 'string' ? value : Object.keys(value as object)[0];

async function systemUnderTest() {
  const clock = new SimulatedClock(0);
  const dispatcher = new GatedDispatcher();
  const rb = createRolebox({
    clock,
    dispatcher,
    ids: seededIdSource(1),
    limits: { interRoundDelayMs: 2_000, roundTimeoutMs: 60_000 },
  });
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  const started = session.startLoop('|loop:2| task');
  if (!started.ok) throw new Error(started.reason);
  /** The loop's state value: live from its actor, or its final phase once it has stopped. */
  const value = () =>
    (
      rb.system.system.get(`loop:${started.loopId}`)?.getSnapshot() as
        | AnyMachineSnapshot
        | undefined
    )?.value ?? session.view().loop?.phase;
  // Read before anything awaits: `activating` lasts until the first microtask.
  const initialValue = value();
  const perform = async (event: ModelEvent) => {
    switch (label(event)) {
      case 'done:prepare':
        break;
      case 'done:dispatch':
        dispatcher.releaseDispatch();
        break;
      case 'terminated:completed':
        dispatcher.complete(undefined, 'summary');
        break;
      case 'terminated:cancelled':
        dispatcher.cancelExternally();
        break;
      case 'done:collect':
        dispatcher.releaseResult();
        break;
      case 'error:collect':
        dispatcher.releaseResult(new Error('worker failed'));
        break;
      case 'done:cancelWorker':
        dispatcher.releaseCancel();
        break;
      case 'delay.elapsed':
        clock.advance(2_000);
        break;
      case 'round.timeout':
        clock.advance(60_000);
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
  };
  return { value, perform, initialValue };
}

describe('loop machine model', () => {
  it('reaches all nine phases at rest', () => {
    const reached = new Set(paths.map((path) => phaseOf(path.state.value)));
    expect([...reached].sort()).toEqual([...LOOP_PHASES].sort());
  });

  for (const path of paths) {
    const steps = path.steps.slice(1);
    const route = steps.map(({ event }) => label(event as ModelEvent)).join(' → ');
    it(`${route || '(start)'} ⇒ ${JSON.stringify(path.state.value)}`, async () => {
      const sut = await systemUnderTest();
      expect(sut.initialValue).toEqual(path.steps[0]?.state.value);
      for (const step of steps) {
        await sut.perform(step.event as ModelEvent);
        expect(sut.value(), `after ${label(step.event as ModelEvent)}`).toEqual(step.state.value);
      }
    });
  }
});
