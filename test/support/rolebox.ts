import {
  createRolebox,
  defineFunction,
  type FunctionSpec,
  type RoleboxOptions,
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
