import { describe, expect, it } from 'vitest';
import { type AnyMachineSnapshot, transition } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import type { FunctionEvent, TimedRuntimeEvent } from '../machines/index.js';
import {
  createRolebox,
  defineFunction,
  type FunctionSpec,
  MemorySnapshotStore,
  type Rolebox,
  type SessionHandle,
} from '../src/index.js';
import { decodeEnvelope } from '../src/persistence/envelope.js';
import { comparableSnapshot } from '../src/persistence/journal.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import {
  functionIdleEvent,
  functionModelInput,
  functionModelMachine,
  functionSignalEvent,
  serializeFunctionEvent,
  serializeFunctionState,
} from './support/function-model.js';
import { GatedDispatcher } from './support/gated-dispatcher.js';
import {
  LOOP_LIMITS,
  label,
  loopModelEvents,
  loopModelMachine,
  loopModelPaths,
  type ModelEvent,
  performLoopEvent,
} from './support/loop-model.js';
import { sendModelEvent, sessionModelEvents, sessionModelPaths } from './support/session-model.js';

// Every machine in every state (the states generated with xstate/graph): persisted, round-
// tripped through JSON, restored into a new system, and then behaving exactly like the
// original on the next events.

async function open(
  store: MemorySnapshotStore,
  functions: FunctionSpec[],
  extra: { dispatcher?: GatedDispatcher; at?: number } = {},
) {
  const clock = new SimulatedClock(extra.at ?? 0);
  const rb = createRolebox({
    store,
    clock,
    ids: seededIdSource(9),
    functions: functions.map((spec) => defineFunction(spec)),
    limits: LOOP_LIMITS,
    ...(extra.dispatcher ? { dispatcher: extra.dispatcher } : {}),
    // The original stays live once saved: its live snapshot is what the restore is compared with.
    passivateWhenWaiting: false,
  });
  await rb.start();
  return { rb, clock };
}

/** Persists, checks the stored JSON holds exactly the live snapshot, and restores into a new system. */
async function persistAndRestore(
  rb: Rolebox,
  store: MemorySnapshotStore,
  functions: FunctionSpec[],
  sessionId: string,
) {
  await rb.flush();
  const live = JSON.parse(
    JSON.stringify(rb.system.system.get(`session:${sessionId}`)?.getPersistedSnapshot()),
  );
  const stored = decodeEnvelope(sessionId, store.records.get(sessionId) as string).snapshot;
  expect(stored).toEqual(live);
  const copy = new MemorySnapshotStore();
  for (const [id, data] of store.records) copy.records.set(id, data);
  const restored = await open(copy, functions);
  // Nothing is live until it is used: the first call activates the stored session.
  expect(restored.rb.sessions()).toEqual([]);
  restored.rb.session(sessionId);
  expect(restored.rb.sessions()).toEqual([sessionId]);
  return restored.rb;
}

const sessionSnapshot = (rb: Rolebox, id: string) =>
  comparableSnapshot(rb.system.system.get(`session:${id}`)?.getPersistedSnapshot());

describe('function machine: every state round-trips', () => {
  const specs: FunctionSpec[] = [
    {
      name: 'gated-approval',
      gate: 'signal_observed(answer)',
      continue_until: 'signal_observed(answer)',
    },
    { name: 'pausable', continue_until: 'signal_observed(answer)' },
  ];
  for (const spec of specs) {
    const paths = getShortestPaths(functionModelMachine(spec), {
      input: functionModelInput(spec, 'S'),
      events: ((snapshot: AnyMachineSnapshot) => [
        functionSignalEvent(snapshot, 'need_approval'),
        functionSignalEvent(snapshot, 'answer'),
        functionSignalEvent(snapshot, 'progress'),
        functionIdleEvent(snapshot),
      ]) as never,
      serializeState: serializeFunctionState,
      serializeEvent: serializeFunctionEvent as never,
    });

    for (const path of paths) {
      const steps = path.steps.slice(1).map(({ event }) => event as FunctionEvent);
      const route =
        steps
          .map((event) => (event.type === 'fn.signal' ? event.signal.type : 'idle'))
          .join(' → ') || '(activated)';
      it(`${spec.name}: ${route} ⇒ ${String(path.state.value)}`, async () => {
        const store = new MemorySnapshotStore();
        const original = await open(store, [spec]);
        const a = await original.rb.openSession({ id: 'S' });
        a.activate(spec.name);
        const apply = (session: SessionHandle, event: FunctionEvent) =>
          event.type === 'fn.signal' ? session.signal(event.signal) : session.idle();
        for (const event of steps) apply(a, event);
        const restored = await persistAndRestore(original.rb, store, [spec], 'S');
        const b = restored.session('S');
        expect(b.view()).toEqual(a.view());
        for (const next of [
          { type: 'need_approval' },
          { type: 'answer' },
          'idle',
          { type: 'progress' },
          'idle',
        ] as const) {
          if (next === 'idle') expect(b.idle()).toEqual(a.idle());
          else expect(b.signal(next)).toEqual(a.signal(next));
          expect(b.view()).toEqual(a.view());
        }
      });
    }
  }
});

describe('session machine: every phase and waiting reason round-trips', () => {
  const paths = sessionModelPaths();
  const send = sendModelEvent;

  for (const path of paths) {
    const steps = path.steps.slice(1).map(({ event }) => event as TimedRuntimeEvent);
    it(`${steps.map((event) => event.type).join(' → ') || '(opened)'} ⇒ ${JSON.stringify(path.state.value)}`, async () => {
      const store = new MemorySnapshotStore();
      const original = await open(store, []);
      const a = await original.rb.openSession({ id: 'S' });
      for (const event of steps) send(a, event);
      const restored = await persistAndRestore(original.rb, store, [], 'S');
      const b = restored.session('S');
      expect(sessionSnapshot(restored, 'S')).toEqual(sessionSnapshot(original.rb, 'S'));
      // The next events: three in a row, each the first the model offers that the
      // original session accepts at that moment.
      for (let step = 0; step < 3; step++) {
        const live = original.rb.system.system
          .get('session:S')
          ?.getSnapshot() as AnyMachineSnapshot;
        const event = sessionModelEvents(live).find((candidate) => live.can(candidate));
        if (!event) break;
        expect(send(b, event)).toEqual(send(a, event));
        expect(sessionSnapshot(restored, 'S')).toEqual(sessionSnapshot(original.rb, 'S'));
      }
    });
  }
});

describe('loop machine: every phase round-trips', () => {
  const paths = loopModelPaths();

  // `activating` lasts until the first microtask, so no process is ever persisted in it:
  // the first path (nothing but the start) cannot be stopped there and is left out.
  for (const path of paths.filter((candidate) => candidate.steps.length > 1)) {
    const steps = path.steps.slice(1).map(({ event }) => event as ModelEvent);
    const route = steps.map(label).join(' → ');
    it(`${route} ⇒ ${JSON.stringify(path.state.value)}`, async () => {
      const store = new MemorySnapshotStore();
      const dispatcher = new GatedDispatcher();
      const original = await open(store, [], { dispatcher });
      const a = await original.rb.openSession({ id: 'S' });
      a.startLoop('|loop:2| task');
      for (const event of steps)
        await performLoopEvent(event, { dispatcher, clock: original.clock, session: a });
      await original.rb.flush();
      const loopId = original.rb.session('S').view().loop?.id as string;
      // The original process dies: its actors stop, its held dispatcher calls never land.
      original.rb.system.stop();
      dispatcher.forgetPending();
      const copy = new MemorySnapshotStore();
      for (const [id, data] of store.records) copy.records.set(id, data);
      const restored = await open(copy, [], { dispatcher, at: original.clock.now() });
      const b = restored.rb.session('S');
      const value = () =>
        (
          restored.rb.system.system.get(`loop:${loopId}`)?.getSnapshot() as
            | AnyMachineSnapshot
            | undefined
        )?.value ?? b.view().loop?.phase;
      await settle();
      expect(value()).toEqual(path.state.value);
      // The next event: every one that leaves this state, taken from the model.
      const from = loopModelMachine.resolveState({
        value: path.state.value as never,
        context: path.state.context as never,
      });
      const onward = loopModelEvents(path.state as AnyMachineSnapshot).find((event) => {
        const next = transition(loopModelMachine, from as never, event as never)[0];
        return JSON.stringify(next.value) !== JSON.stringify(path.state.value);
      });
      if (!onward) return; // terminal
      const expected = transition(loopModelMachine, from as never, onward as never)[0].value;
      await performLoopEvent(onward, { dispatcher, clock: restored.clock, session: b });
      expect(value(), `after ${label(onward)}`).toEqual(expected);
    });
  }
});
