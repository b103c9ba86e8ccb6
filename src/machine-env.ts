import type { ConditionRegistry } from './condition/registry.js';
import type { FunctionCatalog } from './function/catalog.js';
import type { RoleboxLimits } from './limits.js';
import type { Clock } from './ports/clock.js';
import type { Dispatcher } from './ports/dispatcher.js';

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
  /** Time for the invoked timer actors (deadlines live in context; timers are armed here). */
  readonly clock: Clock;
  /** Runs loop rounds; absent when the rolebox was created without one. */
  readonly dispatcher?: Dispatcher;
}
