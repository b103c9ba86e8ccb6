import { PIPELINE_RESULT_SIGNAL_TYPES } from './catalogue.js';
import type { PipelineAction, PipelineSignal, PipelineSource } from './nodes.js';
import type { ActionResultRecord, PipelineRun, RunError } from './scheduler.js';

/** An edge of a run's graph. */
export interface TraceEdge {
  readonly from: string;
  readonly to: string;
  /** `produced`: source/signal → signal; `triggered`: signal → action; `resulted-in`: action → its result signal. */
  readonly kind: 'produced' | 'triggered' | 'resulted-in';
}

/** One executed action, as a handler run: `<actionId>:attempt:<n>`. */
export interface HandlerRun {
  readonly id: string;
  readonly actionId: string;
  readonly actionType: string;
  readonly handlerId: string;
  readonly status: 'ok' | 'skipped' | 'failed';
  readonly durationMs: number;
}

/** A run as one compact, JSON-able trace: what to store, show and compare. */
export interface TraceProjection {
  readonly version: 1;
  readonly chainId: string;
  readonly rootSourceId: string;
  readonly source: PipelineSource;
  readonly signals: readonly PipelineSignal[];
  readonly actions: readonly PipelineAction[];
  readonly results: readonly ActionResultRecord[];
  readonly edges: readonly TraceEdge[];
  readonly handlerRuns: readonly HandlerRun[];
  readonly metadata: {
    readonly runId: string;
    readonly scopeKey: string;
    readonly status: PipelineRun['status'];
    readonly reason?: string;
    readonly steps: number;
    readonly loopedType?: string;
    readonly errors: readonly RunError[];
    readonly startedAt: number;
    readonly completedAt: number;
    readonly durationMs: number;
  };
}

const RESULT_TYPES = new Set<string>(Object.values(PIPELINE_RESULT_SIGNAL_TYPES));

/** Projects a run into its trace: nodes, edges, one handler run per executed action, metadata. */
export function projectRun(run: PipelineRun): TraceProjection {
  const { trace } = run;
  const edges: TraceEdge[] = [];
  for (const signal of trace.signals) {
    const from = signal.chain.parentNodeId ?? trace.source.sourceId;
    edges.push({
      from,
      to: signal.signalId,
      kind:
        RESULT_TYPES.has(signal.signalType) && signal.chain.parentActionId
          ? 'resulted-in'
          : 'produced',
    });
  }
  for (const action of trace.actions)
    edges.push({ from: action.signal.signalId, to: action.actionId, kind: 'triggered' });
  const handlerRuns = trace.results.map(
    (record): HandlerRun => ({
      id: `${record.actionId}:attempt:${record.result.attempt.current}`,
      actionId: record.actionId,
      actionType: record.actionType,
      handlerId: record.handlerId,
      status: record.result.status === 'applied' ? 'ok' : record.result.status,
      durationMs: record.durationMs,
    }),
  );
  return {
    version: 1,
    chainId: trace.chainId,
    rootSourceId: trace.rootSourceId,
    source: trace.source,
    signals: trace.signals,
    actions: trace.actions,
    results: trace.results,
    edges,
    handlerRuns,
    metadata: {
      runId: run.runId,
      scopeKey: run.scopeKey,
      status: run.status,
      ...(run.reason === undefined ? {} : { reason: run.reason }),
      steps: trace.steps,
      ...(trace.loopedType === undefined ? {} : { loopedType: trace.loopedType }),
      errors: trace.errors,
      startedAt: trace.startedAt,
      completedAt: trace.completedAt,
      durationMs: trace.completedAt - trace.startedAt,
    },
  };
}

/** The compact telemetry record of a run. */
export interface TelemetryRecord {
  readonly chainId: string;
  /** `[sourceType, …signalTypes, lastActionType]` along the chain to the last action (or last signal). */
  readonly dominantPath: readonly string[];
  /** Per domain, outcome counts over every node: a type `a.b.c` has domain `b`, outcome `c`. */
  readonly domains: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Action results by status. */
  readonly statusBreakdown: Readonly<Record<string, number>>;
  /** Action results by attempt number. */
  readonly attemptBreakdown: Readonly<Record<string, number>>;
  readonly finalStatus: PipelineRun['status'];
  readonly reason?: string;
}

/** The domain and outcome of a type: `agent.signal.emitted` → `signal`, `emitted`. */
export function domainOutcomeOf(type: string): { domain: string; outcome: string } {
  const parts = type.split('.');
  return {
    domain: parts.length >= 3 ? (parts[1] as string) : (parts[0] as string),
    outcome: parts.at(-1) as string,
  };
}

/** Builds the telemetry record of a run. */
export function telemetryRecordOf(run: PipelineRun): TelemetryRecord {
  const { trace } = run;
  const types = new Map<string, string>([[trace.source.sourceId, trace.source.sourceType]]);
  const parents = new Map<string, string | undefined>();
  for (const signal of trace.signals) {
    types.set(signal.signalId, signal.signalType);
    parents.set(signal.signalId, signal.chain.parentNodeId);
  }
  for (const action of trace.actions) {
    types.set(action.actionId, action.actionType);
    parents.set(action.actionId, action.signal.signalId);
  }
  // The path walks back from the last action (the chain's point) to the source.
  const end =
    trace.actions.at(-1)?.actionId ??
    trace.signals.filter((signal) => !RESULT_TYPES.has(signal.signalType)).at(-1)?.signalId;
  const path: string[] = [];
  for (let id = end; id !== undefined; id = parents.get(id)) path.unshift(types.get(id) as string);
  if (path[0] !== trace.source.sourceType) path.unshift(trace.source.sourceType);

  // Counted in Maps: types are the host's text, and `signal.__proto__.x` must count, not
  // write into Object.prototype. Object.fromEntries makes own keys whatever the name.
  const domains = new Map<string, Map<string, number>>();
  for (const type of [
    trace.source.sourceType,
    ...trace.signals.map((signal) => signal.signalType),
    ...trace.actions.map((action) => action.actionType),
  ]) {
    const { domain, outcome } = domainOutcomeOf(type);
    const counts = domains.get(domain) ?? new Map<string, number>();
    counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    domains.set(domain, counts);
  }
  const statusBreakdown = new Map<string, number>();
  const attemptBreakdown = new Map<string, number>();
  for (const record of trace.results) {
    const status = record.result.status;
    statusBreakdown.set(status, (statusBreakdown.get(status) ?? 0) + 1);
    const attempt = String(record.result.attempt.current);
    attemptBreakdown.set(attempt, (attemptBreakdown.get(attempt) ?? 0) + 1);
  }
  return {
    chainId: trace.chainId,
    dominantPath: path,
    domains: Object.fromEntries(
      [...domains].map(([domain, counts]) => [domain, Object.fromEntries(counts)]),
    ),
    statusBreakdown: Object.fromEntries(statusBreakdown),
    attemptBreakdown: Object.fromEntries(attemptBreakdown),
    finalStatus: run.status,
    ...(run.reason === undefined ? {} : { reason: run.reason }),
  };
}
