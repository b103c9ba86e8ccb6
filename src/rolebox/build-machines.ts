import { createFunctionMachine, type FunctionMachine } from '../../machines/function.machine.js';
import { createLoopMachine, type LoopMachine } from '../../machines/loop.machine.js';
import { createSessionMachine, type SessionMachine } from '../../machines/session.machine.js';
import {
  createSystemMachine,
  type MachineFactories,
  type SystemMachine,
} from '../../machines/system.machine.js';
import { realClock } from '../adapters/real-clock.js';
import type { MachineEnv } from '../system/machine-env.js';
import { MachineCache, type MachineInputs } from './machine-cache.js';
import type { ResolvedOptions } from './options.js';

/** The machines of one rolebox, each built once: the root, and the ones stored records are checked against. */
export interface RoleboxMachines {
  readonly system: SystemMachine;
  readonly session: SessionMachine;
  readonly function: FunctionMachine;
  readonly loop: LoopMachine;
}

/**
 * Builds the function and loop machines, the session machine around them and the system
 * machine around that: the very machines that run are the ones stored records are checked
 * against. `factories` (a replay on changed machines) replace the built-in ones.
 */
export function buildMachines(
  env: MachineEnv & { readonly shards?: number },
  factories: MachineFactories = {},
): RoleboxMachines {
  const fn = (factories.function ?? createFunctionMachine)(env);
  const loop = (factories.loop ?? createLoopMachine)(env);
  const session = (factories.session ?? createSessionMachine)({
    ...env,
    factories: { function: () => fn, loop: () => loop },
  });
  const system = createSystemMachine({ ...env, factories: { session: () => session } });
  return { system, session, function: fn, loop };
}

/** The machines built in this process, by the inputs they depend on (see {@link MachineCache}). */
const built = new MachineCache((inputs: MachineInputs) =>
  buildMachines({
    catalog: inputs.catalog,
    conditions: inputs.conditions,
    limits: inputs.limits,
    shards: inputs.shards,
    // The machines never read the clock (they do no I/O: deadlines live in context, the
    // runtime arms the timers); a rolebox's own clock or dispatcher kept here would outlive it.
    clock: realClock,
  }),
);

/**
 * The machines of a rolebox with these (resolved) options: built once per process for
 * equal functions, conditions, limits and shards, and shared by every rolebox created with
 * them (a fresh rolebox per request builds none).
 */
export function machinesFor(resolved: ResolvedOptions): RoleboxMachines {
  return built.machinesFor({
    catalog: resolved.catalog,
    conditions: resolved.conditions,
    limits: resolved.limits,
    shards: resolved.shards,
  });
}
