import type { ConditionRegistry } from './condition/registry.js';
import type { FunctionCatalog } from './function/catalog.js';
import type { RoleboxLimits } from './limits.js';

/**
 * What the machines of one rolebox are built with. Machines read it through closures in
 * their guards and actions; it never enters context (context is JSON).
 */
export interface MachineEnv {
  /** The function definitions, by name. */
  readonly catalog: FunctionCatalog;
  /** The named conditions the definitions were parsed against. */
  readonly conditions: ConditionRegistry;
  /** The configured limits. */
  readonly limits: RoleboxLimits;
}
