import { createFunctionMachine, type FunctionMachine } from '../../machines/function.machine.js';
import { createLoopMachine, type LoopMachine } from '../../machines/loop.machine.js';
import { createSessionMachine, type SessionMachine } from '../../machines/session.machine.js';
import {
  createSystemMachine,
  type MachineFactories,
  type SystemMachine,
} from '../../machines/system.machine.js';
import type { MachineEnv } from '../system/machine-env.js';
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

/** The machines of a rolebox with these (resolved) options. */
export function machinesFor(resolved: ResolvedOptions): RoleboxMachines {
  return buildMachines({
    catalog: resolved.catalog,
    conditions: resolved.conditions,
    limits: resolved.limits,
    clock: resolved.clock,
    shards: resolved.shards,
    ...(resolved.dispatcher ? { dispatcher: resolved.dispatcher } : {}),
  });
}
