// The machines a rolebox with `functions` runs (rolebox/machines, built by the same
// buildMachines a rolebox calls: default conditions and limits), for the benches that drive
// them bare as a baseline in the same run.
import { FunctionCatalog, type RoleboxLimits, resolveLimits } from '../../machines/index.js';
import { type Clock, defaultConditionRegistry, type FunctionDefinition } from '../../src/index.js';
import { buildMachines, type RoleboxMachines } from '../../src/rolebox/build-machines.js';

/**
 * The system, session, function and loop machines of a rolebox defining `functions`, with
 * the default limits but for `limits` (as `createRolebox({ limits })` overrides them).
 */
export function roleboxMachines(
  functions: readonly FunctionDefinition[],
  clock: Clock,
  limits: Partial<RoleboxLimits> = {},
): RoleboxMachines {
  return buildMachines({
    catalog: new FunctionCatalog(functions),
    conditions: defaultConditionRegistry,
    limits: resolveLimits(limits),
    clock,
  });
}
