import { MeterProvider, type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import {
  createAction,
  createSignal,
  defineActionHandler,
  definePolicy,
  defineSignalHandler,
  defineSourceHandler,
  domainOutcomeOf,
  PIPELINE_METRICS,
  PIPELINE_SPANS,
  projectRun,
  telemetryRecordOf,
} from '../src/pipeline/index.js';
import { asRun, testPipeline } from './support/pipeline.js';

/** A metric reader that collects on demand: the test's in-memory view of the pipeline's metrics. */
class InMemoryMetricReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
  async metrics(): Promise<Map<string, MetricData>> {
    const { resourceMetrics } = await this.collect();
    return new Map(
      resourceMetrics.scopeMetrics
        .flatMap((scope) => scope.metrics)
        .map((metric) => [metric.descriptor.name, metric]),
    );
  }
}

/** source feedback.received → signal.feedback.negative → action.memory.write (applied) and action.prompt.revise (failed). */
function threeLevelPolicy() {
  return definePolicy('feedback', [
    defineSourceHandler('agent.feedback.received', 'agent.feedback.received:judge', (source) => ({
      status: 'dispatch',
      signals: [
        createSignal({
          source,
          signalType: 'signal.feedback.negative',
          payload: { text: source.payload.text },
        }),
      ],
    })),
    defineSignalHandler('signal.feedback.negative', 'signal.feedback.negative:plan', (signal) => ({
      status: 'dispatch',
      actions: [
        createAction({ signal, actionType: 'action.memory.write' }),
        createAction({ signal, actionType: 'action.prompt.revise' }),
      ],
    })),
    defineActionHandler('action.memory.write', 'action.memory.write:run', (action, ctx) => ({
      actionId: action.actionId,
      attempt: { current: 1, startedAt: ctx.now(), completedAt: ctx.now(), status: 'succeeded' },
      status: 'applied',
    })),
    defineActionHandler('action.prompt.revise', 'action.prompt.revise:run', (action, ctx) => ({
      actionId: action.actionId,
      attempt: {
        current: 2,
        max: 3,
        startedAt: ctx.now(),
        completedAt: ctx.now(),
        status: 'failed',
      },
      status: 'failed',
      error: { code: 'PROMPT_LOCKED', message: 'the prompt is being edited', retriable: true },
    })),
  ]);
}

describe('projection of a three-level chain', () => {
  it('nodes, edges, one handler run per executed action, metadata', async () => {
    const { pipeline } = testPipeline([threeLevelPolicy()]);
    const run = asRun(
      await pipeline.emit({
        sourceType: 'agent.feedback.received',
        sourceId: 'f1',
        scope: { sessionId: 's1' },
        payload: { text: 'too long' },
      }),
    );
    const trace = projectRun(run);
    const negative = 'signal:f1/signal.feedback.negative';
    const write = `action:f1/signal.feedback.negative/action.memory.write`;
    const revise = `action:f1/signal.feedback.negative/action.prompt.revise`;
    expect(trace.version).toBe(1);
    expect(trace.chainId).toBe('chain:source:f1');
    expect(trace.rootSourceId).toBe('source:f1');
    expect(trace.signals.map((signal) => signal.signalType)).toEqual([
      'signal.feedback.negative',
      'signal.action.applied',
      'signal.action.failed',
    ]);
    expect(trace.edges).toEqual([
      { from: 'source:f1', to: negative, kind: 'produced' },
      { from: write, to: `${write}:result`, kind: 'resulted-in' },
      { from: revise, to: `${revise}:result`, kind: 'resulted-in' },
      { from: negative, to: write, kind: 'triggered' },
      { from: negative, to: revise, kind: 'triggered' },
    ]);
    expect(trace.handlerRuns).toEqual([
      {
        id: `${write}:attempt:1`,
        actionId: write,
        actionType: 'action.memory.write',
        handlerId: 'action.memory.write:run',
        status: 'ok',
        durationMs: 0,
      },
      {
        id: `${revise}:attempt:2`,
        actionId: revise,
        actionType: 'action.prompt.revise',
        handlerId: 'action.prompt.revise:run',
        status: 'failed',
        durationMs: 0,
      },
    ]);
    expect(trace.metadata).toMatchObject({
      runId: run.runId,
      scopeKey: 'session:s1',
      status: 'completed',
      steps: 6,
      errors: [],
    });
    // Plain JSON: it can be stored and compared.
    expect(JSON.parse(JSON.stringify(trace))).toEqual(trace);
  });

  it('telemetry record: dominant path, domain outcomes, status and attempt breakdowns', async () => {
    const { pipeline } = testPipeline([threeLevelPolicy()]);
    const record = telemetryRecordOf(
      asRun(await pipeline.emit({ sourceType: 'agent.feedback.received', payload: { text: 'x' } })),
    );
    expect(record.dominantPath).toEqual([
      'agent.feedback.received',
      'signal.feedback.negative',
      'action.prompt.revise',
    ]);
    expect(record.domains).toEqual({
      feedback: { received: 1, negative: 1 },
      action: { applied: 1, failed: 1 },
      memory: { write: 1 },
      prompt: { revise: 1 },
    });
    expect(record.statusBreakdown).toEqual({ applied: 1, failed: 1 });
    expect(record.attemptBreakdown).toEqual({ 1: 1, 2: 1 });
    expect(record.finalStatus).toBe('completed');
    expect(domainOutcomeOf('agent.signal.emitted')).toEqual({
      domain: 'signal',
      outcome: 'emitted',
    });
    expect(domainOutcomeOf('tick')).toEqual({ domain: 'tick', outcome: 'tick' });
  });
});

describe('OpenTelemetry', () => {
  it('counts sources, signals, actions, results, chains, handler runs and terminal results, and times them', async () => {
    const reader = new InMemoryMetricReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const { pipeline } = testPipeline(
      [
        threeLevelPolicy(),
        definePolicy('stopper', [
          defineSourceHandler('stop.requested', 'stop.requested:conclude', () => ({
            status: 'conclude',
            concluded: { reason: 'user_stopped' },
          })),
        ]),
      ],
      { telemetry: { meterProvider } },
    );
    await pipeline.emit({ sourceType: 'agent.feedback.received', payload: { text: 'x' } });
    await pipeline.emit({ sourceType: 'stop.requested' });
    const metrics = await reader.metrics();
    const points = (name: string) =>
      (metrics.get(name)?.dataPoints ?? []).map((point) => ({
        attributes: point.attributes,
        value: point.value,
      }));

    expect(points(PIPELINE_METRICS.sources)).toEqual([
      { attributes: { source_type: 'agent.feedback.received' }, value: 1 },
      { attributes: { source_type: 'stop.requested' }, value: 1 },
    ]);
    expect(points(PIPELINE_METRICS.signals)).toEqual(
      expect.arrayContaining([
        { attributes: { signal_type: 'signal.feedback.negative' }, value: 1 },
        { attributes: { signal_type: 'signal.action.applied' }, value: 1 },
        { attributes: { signal_type: 'signal.action.failed' }, value: 1 },
      ]),
    );
    expect(points(PIPELINE_METRICS.actions)).toHaveLength(2);
    expect(points(PIPELINE_METRICS.actionResults)).toEqual([
      { attributes: { action_type: 'action.memory.write', result_status: 'applied' }, value: 1 },
      { attributes: { action_type: 'action.prompt.revise', result_status: 'failed' }, value: 1 },
    ]);
    expect(points(PIPELINE_METRICS.chains)).toEqual([
      { attributes: { final_status: 'completed' }, value: 1 },
      { attributes: { final_status: 'conclude' }, value: 1 },
    ]);
    expect(points(PIPELINE_METRICS.handlerRuns)).toEqual(
      expect.arrayContaining([
        {
          attributes: {
            handler_id: 'agent.feedback.received:judge',
            handler_kind: 'source',
            status: 'ok',
          },
          value: 1,
        },
        {
          attributes: {
            handler_id: 'action.prompt.revise:run',
            handler_kind: 'action',
            status: 'ok',
          },
          value: 1,
        },
      ]),
    );
    expect(points(PIPELINE_METRICS.terminalResults)).toEqual([
      { attributes: { reason: 'user_stopped' }, value: 1 },
    ]);
    /** How many values a histogram recorded (for the points matching `where`). */
    const recorded = (
      name: string,
      where: (attributes: Record<string, unknown>) => boolean = () => true,
    ) =>
      (metrics.get(name)?.dataPoints ?? [])
        .filter((point) => where(point.attributes))
        .reduce((sum, point) => sum + (point.value as { count: number }).count, 0);
    for (const name of [
      PIPELINE_METRICS.chainDuration,
      PIPELINE_METRICS.handlerDuration,
      PIPELINE_METRICS.actionDuration,
    ]) {
      expect(metrics.get(name)?.descriptor.unit, name).toBe('ms');
      expect(recorded(name), name).toBeGreaterThan(0);
    }
    expect(
      recorded(
        PIPELINE_METRICS.chainDuration,
        (attributes) => attributes.final_status === 'completed',
      ),
    ).toBe(1);
    expect(recorded(PIPELINE_METRICS.actionDuration)).toBe(2);
  });

  it('opens a span per run and a child span per handler run', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const { pipeline } = testPipeline([threeLevelPolicy()], { telemetry: { tracerProvider } });
    await pipeline.emit({
      sourceType: 'agent.feedback.received',
      sourceId: 'f1',
      payload: { text: 'x' },
    });
    const spans = exporter.getFinishedSpans();
    const chain = spans.find((span) => span.name === PIPELINE_SPANS.chain);
    const handlers = spans.filter((span) => span.name === PIPELINE_SPANS.handler);
    expect(chain?.attributes).toMatchObject({
      'rolebox.pipeline.chain_id': 'chain:source:f1',
      'rolebox.pipeline.source_type': 'agent.feedback.received',
    });
    expect(handlers.map((span) => span.attributes['rolebox.pipeline.handler_id'])).toEqual([
      'agent.feedback.received:judge',
      'signal.feedback.negative:plan',
      'action.memory.write:run',
      'action.prompt.revise:run',
    ]);
    for (const span of handlers) {
      expect(span.parentSpanContext?.spanId).toBe(chain?.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(chain?.spanContext().traceId);
    }
  });

  it('a throwing handler marks its span as an error', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const { pipeline } = testPipeline(
      [
        definePolicy('p', [
          defineSourceHandler('x', 'x:boom', () => {
            throw new Error('boom');
          }),
        ]),
      ],
      { telemetry: { tracerProvider } },
    );
    await pipeline.emit({ sourceType: 'x' });
    const span = exporter
      .getFinishedSpans()
      .find((candidate) => candidate.name === PIPELINE_SPANS.handler);
    expect(span?.status).toEqual({ code: 2, message: 'boom' });
  });
});
