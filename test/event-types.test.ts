import { describe, expect, it } from 'vitest';
import type { AnyStateNode, InspectionEvent } from 'xstate';
import {
  createFunctionMachine,
  createLoopMachine,
  createSessionMachine,
  FunctionCatalog,
  resolveLimits,
} from '../machines/index.js';
import {
  createRolebox,
  defaultConditionRegistry,
  defineFunction,
  MemorySnapshotStore,
} from '../src/index.js';
import { ScriptedDispatcher, SimulatedClock, settle } from '../src/testing/index.js';

// XState 5.33 memoizes transition candidates per state node and event type in a
// module-level WeakMap (`StateNode.next`), so every distinct event type a machine receives is
// kept for as long as the machine lives (DESIGN §3). The event types the machines receive
// must be a finite catalogue, never named after a session, loop or generated id.

/** A session id that no event type could hold by chance. */
const idOf = (index: number) => `sess-${String(index).padStart(6, '0')}`;

/** The machine an actor runs, by its systemId (child ids are local and say less). */
function machineOf(systemId: string | undefined): string | undefined {
  if (systemId === 'rolebox') return 'system';
  const prefix = systemId?.split(':')[0];
  return prefix === 'shard' || prefix === 'session' || prefix === 'loop' || prefix === 'artifacts'
    ? prefix
    : prefix === 'fn'
      ? 'function'
      : undefined;
}

/**
 * Runs `sessions` sessions through everything that spawns, ends and stops children: a gated
 * function answered until it completes (its actor ends), another deactivated, a two-round
 * loop that completes (through its inter-round deadline) and one cancelled; with a store and
 * a small live cap, so sessions also passivate and activate before they close. Returns the event types each machine received
 * and every session and loop id used.
 */
async function eventTypesOver(sessions: number) {
  const received = new Map<string, Set<string>>();
  const inspect = (event: InspectionEvent) => {
    if (event.type !== '@xstate.event') return;
    const machine = machineOf((event.actorRef as { systemId?: string }).systemId);
    if (!machine) return;
    const types = received.get(machine) ?? new Set<string>();
    types.add(event.event.type);
    received.set(machine, types);
  };
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    clock,
    store: new MemorySnapshotStore(),
    maxLiveSessions: 20,
    dispatcher: new ScriptedDispatcher(() => 'done'),
    functions: [
      defineFunction({
        name: 'approval',
        gate: 'signal_observed(answer)',
        continue_until: 'signal_observed(answer)',
      }),
      defineFunction({ name: 'notes' }),
    ],
    limits: { interRoundDelayMs: 10 },
  });
  const ids = new Set<string>();
  rb.on('loop_started', (event) => ids.add(event.loopId));
  await rb.start();
  // The actor system's own inspection: the `inspect` option's hides the shards.
  rb.system.system.inspect(inspect);
  for (let index = 0; index < sessions; index++) {
    const id = idOf(index);
    ids.add(id);
    const session = await rb.openSession({ id });
    session.activate('approval');
    session.activate('notes');
    // The artifact store is spawned with the first artifact: written here, and reviewed.
    const draft = session.artifacts.write({ name: 'summary', content: 'draft' });
    session.artifacts.setStatus(draft.id, 'under_review');
    session.signal({ type: 'need_approval', payload: { reason: 'deploy' } });
    session.idle();
    session.signal({ type: 'answer', payload: { approved: true } });
    session.idle();
    session.deactivate('notes');
    session.startLoop('|loop:2| summarise');
    await settle();
    // The inter-round delay's deadline, then the second round.
    clock.advance(10);
    await settle();
    if (index % 2 === 0) {
      // A loop stopped while its worker runs (its actor ends cancelled).
      session.startLoop('|loop:2| again');
      session.stopLoop({ now: true });
      await settle();
    }
    // Sessions stay open a while: past the live cap the oldest passivate; reading one
    // activates it again; then it closes.
    if (index >= 25) rb.session(idOf(index - 25)).view();
    if (index >= 30) rb.session(idOf(index - 30)).close();
  }
  for (let index = Math.max(0, sessions - 30); index < sessions; index++)
    rb.session(idOf(index)).close();
  await rb.flush();
  await rb.stop();
  return { received, ids };
}

describe('the event types machines receive are a finite catalogue', () => {
  it('the same for 100 and 1 000 sessions with functions and loops, and none names an id', async () => {
    const small = await eventTypesOver(100);
    const large = await eventTypesOver(1_000);
    const summary = (received: Map<string, Set<string>>) =>
      Object.fromEntries([...received].map(([machine, types]) => [machine, [...types].sort()]));
    // Every machine took part: the workload reached each of them.
    expect(Object.keys(summary(large.received)).sort()).toEqual([
      'artifacts',
      'function',
      'loop',
      'session',
      'shard',
      'system',
    ]);
    // Functions and loops ended (their ends are events their session receives).
    const sessionTypes = large.received.get('session') ?? new Set();
    expect(
      [...sessionTypes].filter((type) => type.startsWith('xstate.done.actor.')).sort(),
    ).toEqual(['xstate.done.actor.fn:approval', 'xstate.done.actor.loop']);
    expect(summary(large.received)).toEqual(summary(small.received));
    for (const [machine, types] of large.received)
      for (const type of types)
        for (const id of large.ids)
          if (type.includes(id))
            expect.fail(`the ${machine} machine received ${type}, naming ${id}`);
    expect(large.ids.size).toBeGreaterThan(2_000);
  }, 300_000);
});

describe('which children end', () => {
  /** The kinds of every state node of a machine. */
  const kindsOf = (node: AnyStateNode): string[] => [
    node.type,
    ...Object.values(node.states).flatMap((child) => kindsOf(child as AnyStateNode)),
  ];

  it('a session never ends (no final state): its shard receives no done event naming it', () => {
    const env = {
      catalog: new FunctionCatalog([]),
      conditions: defaultConditionRegistry,
      limits: resolveLimits({}),
      clock: new SimulatedClock(0),
    };
    expect(kindsOf(createSessionMachine(env).root)).not.toContain('final');
    // Functions and loops do end: that is why their child ids are local (`fn:<name>`, `loop`).
    expect(kindsOf(createFunctionMachine(env).root)).toContain('final');
    expect(kindsOf(createLoopMachine(env).root)).toContain('final');
  });
});
