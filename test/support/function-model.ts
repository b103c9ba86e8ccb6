import type { AnyMachineSnapshot } from 'xstate';
import {
  createFunctionMachine,
  FUNCTION_OUTBOUND_ACTIONS,
  FunctionCatalog,
  type FunctionEvent,
} from '../../machines/index.js';
import {
  DEFAULT_LIMITS,
  defaultConditionRegistry,
  defineFunction,
  type FunctionSpec,
} from '../../src/index.js';
import { readLedgerRecord } from '../../src/signal/ledger.js';
import { SimulatedClock } from '../../src/testing/index.js';

// The function machine as a model: traversed alone, with no parent, so its outbound
// messages (to the session) are no-ops.

/** The function machine for one definition, its outbound actions stubbed. */
export function functionModelMachine(spec: FunctionSpec) {
  return createFunctionMachine({
    catalog: new FunctionCatalog([defineFunction(spec)]),
    conditions: defaultConditionRegistry,
    limits: DEFAULT_LIMITS,
    clock: new SimulatedClock(),
  }).provide({
    actions: Object.fromEntries(FUNCTION_OUTBOUND_ACTIONS.map((name) => [name, () => {}])),
  });
}

/** The input of a model traversal: a fresh activation in session `sessionId`. */
export function functionModelInput(spec: FunctionSpec, sessionId: string) {
  const facts = { turn: 0, userMessageInTurn: false, artifacts: [] as string[] };
  return { sessionId, name: spec.name, facts, at: 0 };
}

/** A model signal event with the facts of `snapshot`. */
export function functionSignalEvent(
  snapshot: AnyMachineSnapshot,
  type: 'need_approval' | 'answer' | 'progress',
): FunctionEvent {
  return { type: 'fn.signal', signal: { type }, facts: snapshot.context.facts, at: 0 };
}

/** A model idle event ending the snapshot's turn. */
export function functionIdleEvent(snapshot: AnyMachineSnapshot): FunctionEvent {
  const turn = snapshot.context.facts.turn + 1;
  return { type: 'fn.idle', cycle: turn, facts: { ...snapshot.context.facts, turn }, at: 0 };
}

/** A function state for the traversal: its phase and which signals its ledger holds. */
export function serializeFunctionState(snapshot: AnyMachineSnapshot): string {
  return JSON.stringify([
    snapshot.value,
    Object.keys(readLedgerRecord(snapshot.context.kv)).sort(),
  ]);
}

/** A model event for the traversal: `signal:<type>`, or the event type. */
export function serializeFunctionEvent(event: FunctionEvent): string {
  return event.type === 'fn.signal' ? `signal:${event.signal.type}` : event.type;
}
