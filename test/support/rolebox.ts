import {
  type Clock,
  createRolebox,
  defineFunction,
  type FunctionSpec,
  type HostEvent,
  type RoleboxOptions,
  type SessionHandle,
  type SnapshotStore,
} from '../../src/index.js';
import { SimulatedClock, seededIdSource } from '../../src/testing/index.js';

/** A started rolebox on a simulated clock with seeded ids, plus one open session. */
export async function startWith(
  specs: FunctionSpec[],
  options: Omit<RoleboxOptions, 'functions'> = {},
) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    functions: specs.map((spec) => defineFunction(spec, { onWarning: () => {} })),
    clock,
    ids: seededIdSource(7),
    ...options,
  });
  await rb.start();
  const session = await rb.openSession({ id: 'S1' });
  return { rb, session, clock };
}

/** The phase of one function in a session view. */
export function phaseOf(
  session: { view(): { functions: readonly { name: string; phase: string; status: string }[] } },
  name: string,
) {
  const found = session.view().functions.find((fn) => fn.name === name);
  return found ? `${found.phase}${found.status === 'live' ? '' : `(${found.status})`}` : 'absent';
}

/** The approval requests of function `name` in a session's view (none: an empty list). */
export function requestsOf(session: SessionHandle, name: string) {
  return session.view().functions.find((fn) => fn.name === name)?.requests ?? [];
}

/**
 * A started rolebox with functions `specs` on `store` (none: in memory only) and `clock` (a
 * simulated clock at 1 000 by default), with seeded ids, recording every host event.
 */
export async function bootRecording(options: {
  specs: FunctionSpec[];
  store?: SnapshotStore;
  clock?: Clock;
}) {
  // Typed as the simulated clock the tests advance; a test that passes a real clock never does.
  const clock = (options.clock ?? new SimulatedClock(1_000)) as SimulatedClock;
  const rb = createRolebox({
    clock,
    ids: seededIdSource(11),
    ...(options.store ? { store: options.store } : {}),
    functions: options.specs.map((spec) => defineFunction(spec)),
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  const report = await rb.start();
  return { rb, clock, events, report };
}
