/**
 * `rolebox/pipeline`: the background pipeline (source → signal → action) for hosts that write
 * policies. The names a host needs to wire one into a rolebox are also exported by the root
 * `rolebox`.
 *
 * @module rolebox/pipeline
 */

export {
  createAction,
  createResultSignal,
  createSignal,
  createSource,
  type PipelineActionInput,
  type PipelineSignalInput,
  type PipelineSourceInput,
} from './builders.js';
export * from './catalogue.js';
export type { GuardAccess, HandlerContext, SourceWindow } from './context.js';
export {
  DEFAULT_GUARD_TTL_MS,
  DEFAULT_MAX_GUARD_LANES,
  type GuardBackend,
  type GuardState,
  InMemoryGuardBackend,
} from './guard-backend.js';
export {
  debounce,
  type GuardOptions,
  type GuardWait,
  guardLane,
  outerTimeout,
  throttle,
} from './guards.js';
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
} from './handlers.js';
export { applyOnce, hasApplied, idempotencyLane, markApplied } from './idempotency.js';
export {
  type DedupedEvent,
  normalizeSourceEvent,
  type SourceEventInput,
  sourceEventId,
} from './ingress.js';
export { DEFAULT_PIPELINE_LIMITS, type PipelineLimits } from './limits.js';
export {
  type BotThread,
  type ChainRef,
  nodeIdOf,
  nodeKindOf,
  nodeTypeOf,
  type PipelineAction,
  type PipelineNode,
  type PipelineNodeKind,
  type PipelinePayload,
  type PipelineScope,
  type PipelineSignal,
  type PipelineSource,
  type SourceRef,
} from './nodes.js';
export { PENDING_EVENT_PREFIX } from './pending-events.js';
export {
  createPipeline,
  type EnqueueReceipt,
  type ExecuteBackends,
  Pipeline,
  type PipelineOptions,
  type PipelineStartReport,
} from './pipeline.js';
export {
  domainOutcomeOf,
  type HandlerRun,
  projectRun,
  type TelemetryRecord,
  type TraceEdge,
  type TraceProjection,
  telemetryRecordOf,
} from './projection.js';
export {
  type ConcludedResult,
  type ExecutionAttempt,
  type ExecutorError,
  type ExecutorResult,
  isExecutorResult,
  isTerminalResult,
  type RuntimeProcessorResult,
  type TerminalResult,
} from './results.js';
export { ROLEBOX_SEND_POLICY_ID } from './rolebox-send.js';
export type {
  ActionResultRecord,
  ChainTrace,
  HandlerCall,
  PipelineRun,
  RunError,
} from './scheduler.js';
export { FALLBACK_SCOPE_KEY, scopeKeyOf } from './scope-key.js';
export {
  DEFAULT_SOURCE_EVENT_BOUNDS,
  InMemorySourceEventStore,
  type SourceEventStore,
  type SourceEventStoreBounds,
} from './source-event-store.js';
export { GUARD_LANE_PREFIX, StoreGuardBackend } from './store-guard-backend.js';
export {
  DEDUPE_PREFIX,
  StoreSourceEventStore,
  WINDOW_PREFIX,
} from './store-source-event-store.js';
export { PIPELINE_STATE_FORMAT } from './stored-expiring-records.js';
export { PIPELINE_METRICS, PIPELINE_SPANS, type TelemetryOptions } from './telemetry.js';
