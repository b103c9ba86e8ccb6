import {
  type Attributes,
  type Counter,
  context,
  type Histogram,
  type MeterProvider,
  metrics,
  type Span,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';

/** The names of the pipeline's OpenTelemetry instruments. */
export const PIPELINE_METRICS = {
  sources: 'rolebox_pipeline_sources_total',
  signals: 'rolebox_pipeline_signals_total',
  actions: 'rolebox_pipeline_actions_total',
  actionResults: 'rolebox_pipeline_action_results_total',
  chains: 'rolebox_pipeline_chains_total',
  handlerRuns: 'rolebox_pipeline_handler_runs_total',
  terminalResults: 'rolebox_pipeline_terminal_results_total',
  chainDuration: 'rolebox_pipeline_chain_duration_ms',
  handlerDuration: 'rolebox_pipeline_handler_duration_ms',
  actionDuration: 'rolebox_pipeline_action_duration_ms',
} as const;

/** The spans the pipeline opens: one per run, one per handler run inside it. */
export const PIPELINE_SPANS = {
  chain: 'rolebox.pipeline.chain',
  handler: 'rolebox.pipeline.handler.run',
} as const;

/** Where telemetry goes; the global OpenTelemetry providers (no-ops until a host registers an SDK) by default. */
export interface TelemetryOptions {
  readonly meterProvider?: MeterProvider;
  readonly tracerProvider?: TracerProvider;
}

const SCOPE = 'rolebox.pipeline';

/**
 * The pipeline's counters, histograms and spans through `@opentelemetry/api`. With no SDK
 * registered every call is a no-op, so telemetry costs next to nothing when off.
 */
export class PipelineTelemetry {
  readonly #tracer: Tracer;
  readonly #counters: Record<
    | 'sources'
    | 'signals'
    | 'actions'
    | 'actionResults'
    | 'chains'
    | 'handlerRuns'
    | 'terminalResults',
    Counter
  >;
  readonly #histograms: Record<'chainDuration' | 'handlerDuration' | 'actionDuration', Histogram>;

  constructor(options: TelemetryOptions = {}) {
    const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
    this.#tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
    const counter = (name: string, description: string) =>
      meter.createCounter(name, { description });
    const histogram = (name: string, description: string) =>
      meter.createHistogram(name, { description, unit: 'ms' });
    this.#counters = {
      sources: counter(PIPELINE_METRICS.sources, 'Source events processed'),
      signals: counter(PIPELINE_METRICS.signals, 'Signals processed'),
      actions: counter(PIPELINE_METRICS.actions, 'Actions processed'),
      actionResults: counter(PIPELINE_METRICS.actionResults, 'Action results by status'),
      chains: counter(PIPELINE_METRICS.chains, 'Runs by final status'),
      handlerRuns: counter(PIPELINE_METRICS.handlerRuns, 'Handler runs by handler and status'),
      terminalResults: counter(PIPELINE_METRICS.terminalResults, 'Terminal results by reason'),
    };
    this.#histograms = {
      chainDuration: histogram(PIPELINE_METRICS.chainDuration, 'Duration of a run'),
      handlerDuration: histogram(PIPELINE_METRICS.handlerDuration, 'Duration of a handler run'),
      actionDuration: histogram(
        PIPELINE_METRICS.actionDuration,
        'Duration of an action handler run',
      ),
    };
  }

  /** Counts a processed node. */
  node(kind: 'source' | 'signal' | 'action', type: string): void {
    if (kind === 'source') this.#counters.sources.add(1, { source_type: type });
    else if (kind === 'signal') this.#counters.signals.add(1, { signal_type: type });
    else this.#counters.actions.add(1, { action_type: type });
  }

  /** Counts an action's result and times its handler. */
  actionResult(actionType: string, status: string, durationMs: number): void {
    this.#counters.actionResults.add(1, { action_type: actionType, result_status: status });
    this.#histograms.actionDuration.record(durationMs, {
      action_type: actionType,
      result_status: status,
    });
  }

  /** Counts and times a handler run (`status`: ok or error). */
  handlerRun(handlerId: string, kind: string, status: 'ok' | 'error', durationMs: number): void {
    this.#counters.handlerRuns.add(1, { handler_id: handlerId, handler_kind: kind, status });
    this.#histograms.handlerDuration.record(durationMs, { handler_id: handlerId, status });
  }

  /** Counts a terminal result by reason (`wait`, `schedule`, `conclude`, or the concluded reason). */
  terminal(reason: string): void {
    this.#counters.terminalResults.add(1, { reason });
  }

  /** Counts and times a finished run. */
  chain(finalStatus: string, durationMs: number): void {
    this.#counters.chains.add(1, { final_status: finalStatus });
    this.#histograms.chainDuration.record(durationMs, { final_status: finalStatus });
  }

  /** Opens the span of a run. */
  startChain(attributes: Attributes): Span {
    return this.#tracer.startSpan(PIPELINE_SPANS.chain, { attributes });
  }

  /** Opens the span of a handler run, as a child of its run's span. */
  startHandler(parent: Span, attributes: Attributes): Span {
    return this.#tracer.startSpan(
      PIPELINE_SPANS.handler,
      { attributes },
      trace.setSpan(context.active(), parent),
    );
  }

  /** Ends a span, marking it as an error when `error` is given. */
  endSpan(span: Span, error?: string): void {
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.end();
  }
}
