import { describe, expect, it } from 'vitest';
import { createTestModel } from 'xstate/graph';
import type { FunctionEvent } from '../machines/index.js';
import type { FunctionSpec, SessionHandle } from '../src/index.js';
import {
  functionIdleEvent,
  functionModelInput,
  functionModelMachine,
  functionSignalEvent,
  serializeFunctionEvent,
  serializeFunctionState,
} from './support/function-model.js';
import { phaseOf, startWith } from './support/rolebox.js';

// The function machine is the model (test/support/function-model.ts); a real rolebox
// driven through the facade is the system under test.
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
  return createTestModel(functionModelMachine(spec), {
    input: functionModelInput(spec, 'S1'),
    events: (snapshot) => {
      const events: FunctionEvent[] = [
        functionSignalEvent(snapshot, 'need_approval'),
        functionSignalEvent(snapshot, 'answer'),
        functionSignalEvent(snapshot, 'progress'),
        functionIdleEvent(snapshot),
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
    serializeState: serializeFunctionState,
    serializeEvent: serializeFunctionEvent,
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
