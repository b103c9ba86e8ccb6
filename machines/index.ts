/**
 * `rolebox/machines`: the statecharts themselves, for hosts and tests that build, drive or
 * replace a machine directly (model-based tests, replays on changed machines, inspection). A
 * host that only runs sessions needs the root `rolebox` instead.
 *
 * @module rolebox/machines
 */

export {
  functionActorId,
  loopActorId,
  SYSTEM_ACTOR_ID,
  sessionActorId,
} from '../src/base/actor-ids.js';
export { FunctionCatalog } from '../src/function/catalog.js';
export type {
  FunctionContext,
  FunctionEvent,
  FunctionIdleOutcome,
  FunctionInput,
  FunctionToSessionEvent,
} from '../src/function/machine-types.js';
export type { SessionFacts } from '../src/function/session-facts.js';
export type {
  LoopContext,
  LoopEvent,
  LoopInput,
  LoopOutcome,
  LoopToSessionEvent,
} from '../src/loop/machine-types.js';
export type { SessionCommand } from '../src/session/commands.js';
export type { EmittedEvent } from '../src/session/emitted.js';
export type {
  IdleCycle,
  RetiredFunction,
  SessionContext,
  SessionEvent,
  SessionInput,
} from '../src/session/machine-types.js';
export type { TimedRuntimeEvent } from '../src/session/runtime-types.js';
export { DEFAULT_LIMITS, type RoleboxLimits, resolveLimits } from '../src/system/limits.js';
export type { MachineEnv } from '../src/system/machine-env.js';
export type { SystemContext, SystemEvent } from '../src/system/machine-types.js';
export {
  createFunctionMachine,
  FUNCTION_MACHINE_VERSION,
  FUNCTION_OUTBOUND_ACTIONS,
  type FunctionMachine,
} from './function.machine.js';
export {
  createLoopMachine,
  LOOP_MACHINE_VERSION,
  LOOP_OUTBOUND_ACTIONS,
  type LoopMachine,
  loopStateOf,
} from './loop.machine.js';
export {
  ARTIFACTS_CHILD_ID,
  artifactsOf,
  createSessionMachine,
  SESSION_MACHINE_VERSION,
  type SessionMachine,
  type SessionMachineEnv,
  type SessionMachineFactories,
} from './session.machine.js';
export {
  createSystemMachine,
  type MachineFactories,
  SYSTEM_MACHINE_VERSION,
  type SystemMachine,
} from './system.machine.js';
