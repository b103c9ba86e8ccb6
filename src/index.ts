/**
 * The public API of rolebox: what a host needs to create a rolebox, define its functions and
 * drive its sessions. Nothing inside the package imports this file. The machines are
 * `rolebox/machines`, the pipeline `rolebox/pipeline` (the names a host wires it with are here
 * too), test helpers `rolebox/testing`, the inspector `rolebox/inspector`.
 *
 * @module rolebox
 */

export { MemorySnapshotStore } from './adapters/memory-snapshot-store.js';
export {
  ARTIFACT_NAME_PATTERN,
  MAX_ARTIFACT_NAME_LENGTH,
  MAX_CONDITION_DEPTH,
  MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
} from './base/input-limits.js';
export { formatCondition, parseCondition } from './condition/parse.js';
export {
  ConditionRegistry,
  defaultConditionRegistry,
  registerCondition,
} from './condition/registry.js';
export type {
  Condition,
  ConditionArgumentRule,
  ConditionAst,
  ConditionEnv,
  ConditionImplementation,
  NamedCondition,
} from './condition/types.js';
export { ERROR_CODES, type ErrorCode, isRoleboxError, RoleboxError } from './errors.js';
export {
  checkFunctionSpec,
  type DefineFunctionOptions,
  type DefinitionIssue,
  defineFunction,
  type FunctionDefinition,
  type FunctionSpec,
} from './function/definition.js';
export type { FunctionPhase } from './function/machine-types.js';
export { type FunctionMarkdownOptions, parseFunctionMarkdown } from './function/markdown.js';
export { STOP_LOOP_SIGNAL } from './loop/constants.js';
export {
  LOOP_PHASES,
  type LoopMode,
  type LoopPhase,
  type LoopState,
  type RoundRecord,
} from './loop/types.js';
export { type Migration, MigrationRegistry } from './persistence/migrations.js';
export type { StartReport } from './persistence/restore.js';
export { PIPELINE_ACTION_TYPES, PIPELINE_SOURCE_TYPES } from './pipeline/catalogue.js';
export { definePipelineTypes, definePolicy, type PipelinePolicy } from './pipeline/handlers.js';
export { createPipeline, Pipeline } from './pipeline/pipeline.js';
export { telemetryRecordOf } from './pipeline/projection.js';
export type { Clock, TimerHandle } from './ports/clock.js';
export type {
  DispatchedTask,
  Dispatcher,
  RoundInput,
  RoundOutput,
  RoundResult,
  TaskStatus,
} from './ports/dispatcher.js';
export type { IdSource } from './ports/ids.js';
export type { SnapshotStore, StoredRecord } from './ports/snapshot-store.js';
export { ArtifactsHandle } from './rolebox/artifacts-handle.js';
export type {
  EffectHandler,
  EffectHandlerContext,
  EffectHandlers,
  EffectRetryOptions,
} from './rolebox/effect-handlers.js';
export type { HostEvent, HostEventOf, HostEventType, IdleReport } from './rolebox/host-events.js';
export {
  createRolebox,
  type ForkOptions,
  type HostEventHandler,
  type InspectOption,
  type OpenSessionOptions,
  Rolebox,
  type RoleboxOptions,
  type StatelyInspectOptions,
} from './rolebox/rolebox.js';
export {
  type MessageReceipt,
  type SendResult,
  SessionHandle,
  type SessionSnapshotView,
  type SignalInput,
  type StartLoopResult,
  type ToolCallResult,
  type ToolReceipt,
} from './rolebox/session-handle.js';
export type { FunctionView, SessionView } from './rolebox/views.js';
export type { ArtifactRecord, ArtifactStatus } from './session/artifact.js';
export { ARTIFACT_STATUSES } from './session/artifact-lifecycle.js';
export type { ArtifactWrite } from './session/artifact-store.js';
export type { SessionContext } from './session/machine-types.js';
export { RUNTIME_EVENT_TYPES } from './session/runtime-event-schema.js';
export {
  ACCEPTANCE_MODES,
  type AcceptanceMode,
  type MainAgentDecision,
  type PendingEffect,
  RUNTIME_PHASES,
  type RuntimeEvent,
  type RuntimeEventType,
  type RuntimePhase,
  type SessionEffect,
  type SessionEffectType,
  type SkillIndexEntry,
  WAITING_REASON_KINDS,
  type WaitingReason,
  type WaitingReasonKind,
} from './session/runtime-types.js';
export type { ApprovalRequest, ApprovalStatus } from './signal/approval-requests.js';
export {
  highestPriorityPausing,
  isSignalType,
  mostSevereTerminating,
  SIGNAL_CATEGORIES,
  SIGNAL_TYPES,
  type SignalCategory,
  type SignalType,
  signalCategory,
} from './signal/catalogue.js';
export type { SignalReceipt } from './signal/reply.js';
export type { SignalPayload } from './signal/schema.js';
export { DEFAULT_LIMITS, type RoleboxLimits } from './system/limits.js';
