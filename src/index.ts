// The public API of rolebox. Everything a host needs is re-exported here; nothing inside
// the package imports this file.

export {
  createFunctionMachine,
  FUNCTION_MACHINE_VERSION,
  FUNCTION_OUTBOUND_ACTIONS,
  type FunctionMachine,
} from '../machines/function.machine.js';
export {
  createLoopMachine,
  LOOP_MACHINE_VERSION,
  LOOP_OUTBOUND_ACTIONS,
  type LoopMachine,
  loopStateOf,
} from '../machines/loop.machine.js';
export {
  ARTIFACTS_CHILD_ID,
  artifactsOf,
  createSessionMachine,
  SESSION_MACHINE_VERSION,
  type SessionMachine,
} from '../machines/session.machine.js';
export type { MachineFactories } from '../machines/system.machine.js';
export {
  createSystemMachine,
  SYSTEM_MACHINE_VERSION,
  type SystemMachine,
} from '../machines/system.machine.js';
export {
  CommandDispatcher,
  type CommandDispatcherOptions,
  DEFAULT_MAX_OUTPUT_BYTES,
  type DispatchPoint,
} from './adapters/command-dispatcher.js';
export { nanoidIdSource, seededIdSource } from './adapters/id-sources.js';
export { MemorySnapshotStore } from './adapters/memory-snapshot-store.js';
export { realClock } from './adapters/real-clock.js';
export { DEFAULT_SQLITE_PATH, SqliteSnapshotStore } from './adapters/sqlite-snapshot-store.js';
export { functionActorId, loopActorId, SYSTEM_ACTOR_ID, sessionActorId } from './base/actor-ids.js';
export {
  ARTIFACT_NAME_PATTERN,
  ARTIFACT_NAME_RULE,
  MAX_ARTIFACT_NAME_LENGTH,
  MAX_CONDITION_DEPTH,
  MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
} from './base/input-limits.js';
export { parseToolCallText, type ToolCallText } from './base/tool-call.js';
export { BUILTIN_CONDITIONS } from './condition/builtins.js';
export { evaluateCondition } from './condition/evaluate.js';
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
export { checkCatalog, FunctionCatalog } from './function/catalog.js';
export { functionConditionEnv } from './function/condition-env.js';
export {
  type ContinuationBlock,
  type ContinuationLimits,
  DEFAULT_CONTINUATION_LIMITS,
  functionContinuationBlock,
  grantContinuation,
} from './function/continuation.js';
export {
  checkFunctionSpec,
  DEFAULT_CONTINUE_MAX,
  type DefineFunctionOptions,
  type DefinitionIssue,
  defineFunction,
  FUNCTION_NAME_PATTERN,
  type FunctionDefinition,
  type FunctionObserve,
  type FunctionSpec,
  type FunctionTransition,
  functionSpecSchema,
} from './function/definition.js';
export {
  checkFunctionMarkdown,
  type FunctionMarkdownOptions,
  type LoadFunctionsOptions,
  loadFunctions,
  parseFunctionMarkdown,
  splitFrontmatter,
} from './function/load.js';
export type {
  FunctionContext,
  FunctionEvent,
  FunctionIdleOutcome,
  FunctionPhase,
} from './function/machine-types.js';
export type { SessionFacts } from './function/session-facts.js';
export { expandStopLoopCommand, shouldCancelLoop } from './loop/cancellation.js';
export * from './loop/constants.js';
export { normalizePrompt, promptFingerprint } from './loop/fingerprint.js';
export type { LoopContext, LoopEvent, LoopInput, LoopOutcome } from './loop/machine-types.js';
export {
  formatDuration,
  loopEndedNote,
  loopErrorNote,
  loopStartedNote,
  roundCompletedNote,
  roundsLine,
} from './loop/notes.js';
export { type LoopCommand, parseLoopCommand } from './loop/parse-loop-command.js';
export {
  addWorkerSession,
  checkLoopRegistration,
  finishLoop,
  type LoopRegistration,
  type LoopRegistrationCheck,
  type LoopRegistry,
} from './loop/registry.js';
export { buildRoundPrompt, lastChars, summarizeRound } from './loop/round-prompt.js';
export {
  isTerminalLoopPhase,
  LOOP_PHASES,
  type LoopMode,
  type LoopPhase,
  type LoopState,
  ORIGIN_OWNED_LOOP_PHASES,
  type RoundRecord,
  TERMINAL_LOOP_PHASES,
} from './loop/types.js';
export { checkSessionSnapshot, type SnapshotMachines } from './persistence/check-snapshot.js';
export {
  CURRENT_MACHINE_VERSIONS,
  decodeEnvelope,
  type MachineVersions,
  makeEnvelope,
  SNAPSHOT_FORMAT,
  SNAPSHOT_SCHEMA_VERSION,
  type SnapshotEnvelope,
  SYSTEM_RECORD_ID,
  snapshotEnvelopeSchema,
} from './persistence/envelope.js';
export {
  comparableSnapshot,
  type JournalEntry,
  JournalRecorder,
  parseRecordedRun,
  type RecordedRun,
  RUN_FORMAT,
  recordedRunSchema,
  reviveEvent,
} from './persistence/journal.js';
export { type Migration, MigrationRegistry, noMigrations } from './persistence/migrations.js';
export { Persister, type PersisterHost } from './persistence/persister.js';
export type { StartReport } from './persistence/restore.js';
export {
  createAction,
  createResultSignal,
  createSignal,
  createSource,
  type PipelineActionInput,
  type PipelineSignalInput,
  type PipelineSourceInput,
} from './pipeline/builders.js';
export * from './pipeline/catalogue.js';
export type {
  GuardAccess,
  HandlerContext,
  SourceWindow,
} from './pipeline/context.js';
export {
  DEFAULT_GUARD_TTL_MS,
  type GuardBackend,
  type GuardState,
  InMemoryGuardBackend,
} from './pipeline/guard-backend.js';
export {
  debounce,
  type GuardOptions,
  type GuardWait,
  guardLane,
  outerTimeout,
  throttle,
} from './pipeline/guards.js';
export {
  type ActionHandler,
  type ActionOf,
  type ActionReturn,
  defineActionHandler,
  definePipelineTypes,
  definePolicy,
  defineSignalHandler,
  defineSourceHandler,
  type PayloadCatalogue,
  type PipelineHandler,
  type PipelinePolicy,
  type PipelineTypes,
  type ProcessorReturn,
  type SignalHandler,
  type SignalOf,
  type SourceHandler,
  type SourceOf,
} from './pipeline/handlers.js';
export { applyOnce, hasApplied, idempotencyLane, markApplied } from './pipeline/idempotency.js';
export {
  type DedupedEvent,
  normalizeSourceEvent,
  type SourceEventInput,
  sourceEventId,
} from './pipeline/ingress.js';
export { DEFAULT_PIPELINE_LIMITS, type PipelineLimits } from './pipeline/limits.js';
export * from './pipeline/nodes.js';
export { PENDING_EVENT_PREFIX } from './pipeline/pending-events.js';
export {
  createPipeline,
  type EnqueueReceipt,
  type ExecuteBackends,
  Pipeline,
  type PipelineOptions,
  type PipelineStartReport,
} from './pipeline/pipeline.js';
export {
  domainOutcomeOf,
  type HandlerRun,
  projectRun,
  type TelemetryRecord,
  type TraceEdge,
  type TraceProjection,
  telemetryRecordOf,
} from './pipeline/projection.js';
export { HandlerRegistry, type InstalledHandler } from './pipeline/registry.js';
export * from './pipeline/results.js';
export {
  ROLEBOX_SEND_POLICY_ID,
  roleboxSendPolicy,
  type SystemTarget,
} from './pipeline/rolebox-send.js';
export type {
  ActionResultRecord,
  ChainTrace,
  HandlerCall,
  PipelineRun,
  RunError,
} from './pipeline/scheduler.js';
export { runChain, type SchedulerDeps } from './pipeline/scheduler.js';
export { FALLBACK_SCOPE_KEY, scopeKeyOf } from './pipeline/scope-key.js';
export { InMemorySourceEventStore, type SourceEventStore } from './pipeline/source-event-store.js';
export { PIPELINE_METRICS, PIPELINE_SPANS, type TelemetryOptions } from './pipeline/telemetry.js';
export type { Clock, TimerHandle } from './ports/clock.js';
export {
  type DispatchedTask,
  type Dispatcher,
  type RoundInput,
  type RoundOutput,
  type RoundResult,
  type TaskStatus,
  TERMINAL_TASK_STATUSES,
} from './ports/dispatcher.js';
export type { IdSource } from './ports/ids.js';
export type { SnapshotStore, StoredRecord } from './ports/snapshot-store.js';
export { ArtifactsHandle } from './rolebox/artifacts-handle.js';
export type { HostEvent, HostEventOf, HostEventType, IdleReport } from './rolebox/host-events.js';
export { applyRemoteCommand } from './rolebox/remote-command.js';
export {
  createRolebox,
  type HostEventHandler,
  type InspectOption,
  Rolebox,
  type RoleboxOptions,
} from './rolebox/rolebox.js';
export type { MessageReceipt, StartLoopResult } from './rolebox/session-handle.js';
export {
  runtimeEventProblem,
  type SendResult,
  SessionHandle,
  type SessionSnapshotView,
  type SignalInput,
  type ToolCallResult,
  type ToolReceipt,
} from './rolebox/session-handle.js';
export type { FunctionView, SessionView } from './rolebox/views.js';
export { runtimePhaseOf } from './rolebox/views.js';
export type { ArtifactRecord, ArtifactStatus } from './session/artifact.js';
export {
  ARTIFACT_STATUSES,
  ARTIFACT_TRANSITIONS,
  assertArtifactStatusChange,
  canChangeArtifactStatus,
} from './session/artifact-lifecycle.js';
export {
  type ArtifactStoreContext,
  type ArtifactStoreEvent,
  type ArtifactWrite,
  applyArtifactStatus,
  applyArtifactWrite,
  artifactStoreLogic,
  currentArtifact,
} from './session/artifact-store.js';
export type { RemoteCommand, SessionCommand } from './session/commands.js';
export type { SessionContext } from './session/machine-types.js';
export {
  parseRuntimeEvent,
  RUNTIME_EVENT_SCHEMAS,
  RUNTIME_EVENT_TYPES,
} from './session/runtime-event-schema.js';
export {
  type AcceptanceMode,
  HARD_USER_EVENTS,
  type HistoryEntry,
  type MainAgentDecision,
  type ResumeContext,
  RUNTIME_PHASES,
  type RuntimeEvent,
  type RuntimeEventType,
  type RuntimePhase,
  type SessionEffect,
  type SkillIndexEntry,
  type TimedRuntimeEvent,
  WAITING_REASON_KINDS,
  type WaitingReason,
  type WaitingReasonKind,
} from './session/runtime-types.js';
export * from './signal/catalogue.js';
export * from './signal/ledger.js';
export { parseSignalArguments, parseSignalText } from './signal/parse-signal-text.js';
export {
  formatSignalReply,
  handoffTarget,
  makeSignalReceipt,
  type SignalReceipt,
  signalEffectText,
} from './signal/reply.js';
export {
  parseSignalArgs,
  type SignalArgs,
  type SignalPayload,
  signalArgsSchema,
} from './signal/schema.js';
export { DEFAULT_LIMITS, type RoleboxLimits, resolveLimits } from './system/limits.js';
export type { MachineEnv } from './system/machine-env.js';
