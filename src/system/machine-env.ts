import type { ConditionRegistry } from '../condition/registry.js';
import type { FunctionCatalog } from '../function/catalog.js';
import type { Clock } from '../ports/clock.js';
import type { Dispatcher } from '../ports/dispatcher.js';
import type { RoleboxLimits } from './limits.js';

/**
 * What the machines of one rolebox are built with. Machines read it through closures in
 * their guards and actions; it never enters context (context is JSON). Replacement machine
 * factories are not here but beside the machines that spawn them (`SessionMachineFactories`,
 * `MachineFactories` in machines/): they are typed by the machines, which this room is below.
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
  /**
   * `recorded` (replay): the invoked actors that reach outside (dispatcher, timers) never
   * run; their results come from a recorded journal instead. Default `live`.
   */
  readonly externalActors?: 'live' | 'recorded';
}
