import { describe, expect, it } from 'vitest';
import { createTestModel } from 'xstate/graph';
import {
  createFunctionMachine,
  DEFAULT_LIMITS,
  defaultConditionRegistry,
  defineFunction,
  FunctionCatalog,
  type FunctionEvent,
  type FunctionSpec,
  readLedgerRecord,
  type SessionHandle,
  SimulatedClock,
} from '../src/index.js';
import { phaseOf, startWith } from './support/rolebox.js';

// The function machine is the model; a real rolebox driven through the facade is the
// system under test. Outbound messages (to the session) are no-ops in the model: it is
// traversed alone, with no parent.
const definitions: Record<string, FunctionSpec> = {
  'gated-approval': {
    name: 'gated-approval',
    gate: 'signal_observed(answer)',
    continue_until: 'signal_observed(answer)',
  },
  pausable: { name: 'pausable', continue_until: 'signal_observed(answer)' },
};

const MODELLED = new Set(['fn.signal', 'fn.idle', 'fn.resume', 'fn.tool']);

function modelFor(spec: FunctionSpec) {
  const catalog = new FunctionCatalog([defineFunction(spec)]);
  const machine = createFunctionMachine({
    catalog,
    conditions: defaultConditionRegistry,
    limits: DEFAULT_LIMITS,
    clock: new SimulatedClock(),
  }).provide({
    actions: {
      capturePayloads: () => {},
      reportIdle: () => {},
      notifyTransitionEdges: () => {},
      reportCompleted: () => {},
    },
  });
  const facts = { turn: 0, userMessageInTurn: false, artifacts: [] as string[] };
  return createTestModel(machine, {
    input: { sessionId: 'S1', name: spec.name, facts, at: 0 },
    events: (snapshot) => {
      const turn = snapshot.context.facts.turn;
      const signal = (type: 'need_approval' | 'answer' | 'progress'): FunctionEvent => ({
        type: 'fn.signal',
        signal: { type },
        facts: snapshot.context.facts,
        at: 0,
      });
      const events: FunctionEvent[] = [
        signal('need_approval'),
        signal('answer'),
        signal('progress'),
        {
          type: 'fn.idle',
          cycle: turn + 1,
          facts: { ...snapshot.context.facts, turn: turn + 1 },
          at: 0,
        },
        { type: 'fn.tool', tool: 'write_file', facts: snapshot.context.facts, at: 0 },
      ];
      if (spec.gate === undefined)
        events.push({ type: 'fn.resume', facts: snapshot.context.facts, at: 0 });
      return events;
    },
    // Resuming is only offered (by the facade) to gated functions. The session-internal
    // events (facts, kv, continuation grants) are covered by the behaviour tests; left to
    // itself createTestModel would send them bare, without their data.
    filterEvents: (snapshot, event) =>
      MODELLED.has(event.type) && (event.type !== 'fn.resume' || snapshot.value === 'gated'),
    serializeState: (snapshot) =>
      JSON.stringify([snapshot.value, Object.keys(readLedgerRecord(snapshot.context.kv)).sort()]),
    serializeEvent: (event) =>
      event.type === 'fn.signal' ? `signal:${event.signal.type}` : event.type,
  });
}

async function execute(session: SessionHandle, name: string, event: FunctionEvent) {
  if (event.type === 'fn.signal') session.signal(event.signal);
  else if (event.type === 'fn.idle') session.idle();
  else if (event.type === 'fn.resume') session.resume(name);
  else if (event.type === 'fn.tool') session.observeTool(event.tool);
}

describe.each(Object.entries(definitions))('function machine model: %s', (name, spec) => {
  const model = modelFor(spec);
  // One shortest path to every distinct (phase, ledger) state, prefixes included.
  const paths = model.getShortestPaths({ allowDuplicatePaths: true });

  it('reaches every phase', () => {
    const reached = new Set(paths.map((path) => path.state.value as string));
    expect([...reached].sort()).toEqual(['active', 'complete', 'gated']);
  });

  for (const path of paths) {
    const route = path.steps
      .slice(1)
      .map(({ event }) => (event.type === 'fn.signal' ? event.signal.type : event.type.slice(3)))
      .join(' → ');
    it(`${route || '(activation)'} ⇒ ${String(path.state.value)}`, async () => {
      const { session } = await startWith([spec]);
      session.activate(name);
      // xstate/graph types the executed event as `{ type }` only; it is the full event.
      const run = ({ event }: { event: unknown }) => execute(session, name, event as FunctionEvent);
      const expectPhase = (phase: string) => () => expect(phaseOf(session, name)).toBe(phase);
      await model.testPath(path, {
        states: {
          active: expectPhase('active'),
          gated: expectPhase('gated'),
          complete: expectPhase('complete(completed)'),
        },
        events: {
          'fn.signal': run,
          'fn.idle': run,
          'fn.resume': run,
          'fn.tool': run,
        },
      });
    });
  }
});
