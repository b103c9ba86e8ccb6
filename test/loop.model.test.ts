import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { createRolebox, LOOP_PHASES } from '../src/index.js';
import { SimulatedClock, seededIdSource } from '../src/testing/index.js';
import { GatedDispatcher } from './support/gated-dispatcher.js';
import {
  LOOP_LIMITS,
  label,
  loopModelPaths,
  type ModelEvent,
  performLoopEvent,
  phaseOf,
} from './support/loop-model.js';

// The loop machine is the model; a real rolebox whose dispatcher holds every dispatch,
// result read and cancel until the step releases it is the system under test, so the real
// loop stops exactly where the model does. (xstate/graph's createTestModel does not accept
// machines with invocations, so the paths are run here.)
const paths = loopModelPaths();

/** Stops that a path may take in `activating`, which lasts only until the first microtask. */
const SAME_TICK_STOPS = new Set(['loop.request_cancel', 'loop.cancel_now']);

async function systemUnderTest(sameTick?: ModelEvent) {
  const clock = new SimulatedClock(0);
  const dispatcher = new GatedDispatcher();
  const rb = createRolebox({ clock, dispatcher, ids: seededIdSource(1), limits: LOOP_LIMITS });
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  const started = session.startLoop('|loop:2| task');
  if (!started.ok) throw new Error(started.reason);
  // A stop in the same tick as the start reaches the loop while it is still activating.
  if (sameTick) session.stopLoop({ now: sameTick.type === 'loop.cancel_now' });
  /** The loop's state value: live from its actor, or its final phase once it has stopped. */
  const value = () =>
    (
      rb.system.system.get(`loop:${started.loopId}`)?.getSnapshot() as
        | AnyMachineSnapshot
        | undefined
    )?.value ?? session.view().loop?.phase;
  // Read before anything awaits: `activating` lasts until the first microtask.
  const initialValue = value();
  return {
    value,
    initialValue,
    perform: (event: ModelEvent) => performLoopEvent(event, { dispatcher, clock, session }),
  };
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
      const first = steps[0]?.event as ModelEvent | undefined;
      const sameTick = first && SAME_TICK_STOPS.has(first.type) ? first : undefined;
      const sut = await systemUnderTest(sameTick);
      if (sameTick) {
        expect(sut.initialValue).toEqual(steps[0]?.state.value);
      } else {
        expect(sut.initialValue).toEqual(path.steps[0]?.state.value);
      }
      for (const step of sameTick ? steps.slice(1) : steps) {
        await sut.perform(step.event as ModelEvent);
        expect(sut.value(), `after ${label(step.event as ModelEvent)}`).toEqual(step.state.value);
      }
    });
  }
});
