/**
 * rolebox/restate: rolebox sessions as Restate virtual objects. Needs the optional peer
 * dependency @restatedev/restate-sdk 1.12.x: 1.14 and later call Promise.withResolvers, which
 * Node 20 does not have, and fail every invocation there.
 *
 * @module rolebox/restate
 */

export {
  createRestateRolebox,
  type RestateArtifactsHandle,
  type RestateEventHandler,
  RestateRolebox,
  type RestateRoleboxOptions,
  type RestateSessionHandle,
} from './client.js';
export {
  type RestateEffectAttempt,
  type RestateEffectHandler,
  type RestateEffectHandlers,
  roleboxEffectService,
} from './effect-service.js';
export type {
  EffectAttemptFailure,
  EffectAttemptStart,
  EffectReport,
  EffectRequest,
} from './effect-wire.js';
export {
  freePort,
  type LocalRestateServer,
  type LocalRestateServerOptions,
  type RestateServerPorts,
  registerDeployment,
  restateServerBinary,
  startLocalRestateServer,
} from './local-server.js';
export {
  type ListeningEndpoint,
  type RestateDefinition,
  type RoleboxOnRestate,
  type ServeRoleboxOptions,
  serveRoleboxOnRestate,
} from './serve.js';
export {
  type HostEventBatch,
  type RestateTarget,
  roleboxSessionObject,
  SESSION_COMMANDS,
  SESSION_OBJECT_NAME,
  SESSION_READS,
  type SessionObjectOptions,
  type StepAnswer,
} from './session-object.js';
export {
  SHELL_WORKER_NAME,
  type ShellCommandWorkerOptions,
  shellCommandWorker,
} from './shell-worker.js';
export type { WireError, WireHostEvent } from './wire.js';
export { type RoundRequest, type RoundRunner, roleboxWorker, type WorkerReport } from './worker.js';
