import { describe, expect, it } from 'vitest';
import { type AnyStateMachine, transition } from 'xstate';
import { createRolebox } from '../src/index.js';
import { pureTransition } from '../src/runtime/pure-transition.js';
import { SimulatedClock } from '../src/testing/index.js';
import { UNTIL_POET_APPROVAL } from './support/poem-flow.js';

// The effect runner checks a handler's result event by event on pure transitions of the
// session (src/session/runtime-event-problem.ts). Ours must answer what XState's own
// `transition` answers, without building an inert actor of the machine per call.

/** A live session snapshot after intake, waiting for the main agent's decision. */
async function liveSession() {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({ clock });
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  for (const event of UNTIL_POET_APPROVAL.slice(0, 2)) session.send(event);
  const actor = (
    rb.system as unknown as { system: { get(id: string): { getSnapshot(): never } } }
  ).system.get('session:S');
  return { rb, snapshot: actor.getSnapshot() as { machine: AnyStateMachine; value: unknown } };
}

const events = [
  {
    type: 'main_agent_decision_created',
    decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
    at: 2_000,
  },
  { type: 'main_agent_decision_created', decision: { id: 'd2', kind: 'finish' }, at: 2_000 },
  { type: 'worker_started', workerId: 'poet', acceptanceMode: 'user_confirmed', at: 2_000 },
  { type: 'user_approved_next_step', decisionId: 'nope', at: 2_000 },
];

describe('pureTransition', () => {
  it('answers the snapshot XState’s transition answers, for events taken and refused', async () => {
    const { rb, snapshot } = await liveSession();
    for (const event of events) {
      const ours = pureTransition(snapshot.machine, snapshot as never, event as never);
      const theirs = transition(snapshot.machine, snapshot as never, event as never)[0];
      expect(ours.value, event.type).toEqual(theirs.value);
      expect(ours.context, event.type).toEqual(theirs.context);
    }
    // The first event moves the session on: the comparison is not between two no-ops.
    const moved = pureTransition(snapshot.machine, snapshot as never, events[0] as never);
    expect(moved.value).not.toEqual(snapshot.value);
    await rb.stop();
  });

  it('leaves the live session as it was', async () => {
    const { rb, snapshot } = await liveSession();
    const before = JSON.stringify(rb.session('S').view());
    for (const event of events) pureTransition(snapshot.machine, snapshot as never, event as never);
    expect(JSON.stringify(rb.session('S').view())).toBe(before);
    await rb.stop();
  });
});
