// The pipeline's cost for a three-handler chain (source handler → signal handler → action
// handler with its result signal): chains per second through `emit` (ingress included) and
// the scheduler's cost as a ratio to calling the same three handlers directly.
// Run: npm run bench
import { realClock } from '../src/adapters/real-clock.js';
import {
  createAction,
  createPipeline,
  createSignal,
  createSource,
  defineActionHandler,
  definePolicy,
  defineSignalHandler,
  defineSourceHandler,
  type ExecutorResult,
  type HandlerContext,
  InMemoryGuardBackend,
  type PipelineAction,
  type PipelineSignal,
  type PipelineSource,
} from '../src/pipeline/index.js';
import { HandlerRegistry } from '../src/pipeline/registry.js';
import { roleboxSendPolicy } from '../src/pipeline/rolebox-send.js';
import { runChain } from '../src/pipeline/scheduler.js';
import { PipelineTelemetry } from '../src/pipeline/telemetry.js';
import { median, timeNs, writeResult } from './measure.js';

const CHAINS = 5_000;
const SAMPLES = 7;

// The three handlers, shared by the pipeline and the baseline.
const judge = (source: PipelineSource) => ({
  status: 'dispatch' as const,
  signals: [
    createSignal({ source, signalType: 'signal.bench.judged', payload: { n: source.payload.n } }),
  ],
});
const plan = (signal: PipelineSignal) => ({
  status: 'dispatch' as const,
  actions: [createAction({ signal, actionType: 'action.bench.apply', payload: signal.payload })],
});
const apply = (action: PipelineAction, ctx: HandlerContext): ExecutorResult => ({
  actionId: action.actionId,
  attempt: { current: 1, startedAt: ctx.now(), completedAt: ctx.now(), status: 'succeeded' },
  status: 'applied',
});
const policy = definePolicy('bench', [
  defineSourceHandler('bench.event', 'bench.event:judge', judge),
  defineSignalHandler('signal.bench.judged', 'signal.bench.judged:plan', plan),
  defineActionHandler('action.bench.apply', 'action.bench.apply:run', apply),
]);

let sequence = 0;
const sourceAt = (n: number) =>
  createSource({
    sourceType: 'bench.event',
    sourceId: `e${sequence++}`,
    payload: { n },
    scope: { sessionId: `s${n % 16}` },
    timestamp: realClock.now(),
  });

/** The baseline: the same three handlers called one after the other, awaited. */
async function direct(): Promise<void> {
  const guards = new InMemoryGuardBackend();
  for (let n = 0; n < CHAINS; n++) {
    const source = sourceAt(n);
    const ctx: HandlerContext = {
      scopeKey: source.scopeKey,
      now: () => source.timestamp,
      guards: {
        get: (lane) => guards.get(source.scopeKey, lane),
        touch: (lane, now = source.timestamp) =>
          guards.touch(source.scopeKey, lane, now, 3_600_000),
      },
    };
    const judged = await judge(source);
    const planned = await plan(judged.signals[0] as PipelineSignal);
    await apply(planned.actions[0] as PipelineAction, ctx);
  }
}

/** The scheduler alone: runChain with the registry, guards and (no-op) telemetry. */
async function scheduler(): Promise<void> {
  const deps = {
    registry: new HandlerRegistry([roleboxSendPolicy(() => undefined), policy]),
    guards: new InMemoryGuardBackend(),
    clock: realClock,
    telemetry: new PipelineTelemetry(),
    maxSteps: 256,
    guardTtlMs: 3_600_000,
  };
  for (let n = 0; n < CHAINS; n++) await runChain(sourceAt(n), `run${n}`, deps);
}

/** The whole pipeline: emit (dedupe, scope lock, window, per-scope queue) and the scheduler. */
async function emit(): Promise<void> {
  const pipeline = createPipeline({ policies: [policy] });
  for (let n = 0; n < CHAINS; n++)
    await pipeline.emit({
      sourceType: 'bench.event',
      payload: { n },
      scope: { sessionId: `s${n % 16}` },
    });
}

// Warm up every path, then interleave the samples so drift hits all three alike.
await direct();
await scheduler();
await emit();
const samples = { direct: [] as number[], scheduler: [] as number[], emit: [] as number[] };
for (let i = 0; i < SAMPLES; i++) {
  samples.direct.push(await timeNs(direct));
  samples.scheduler.push(await timeNs(scheduler));
  samples.emit.push(await timeNs(emit));
}
const perChain = (ns: number[]) => median(ns) / CHAINS;
const directNs = perChain(samples.direct);
const schedulerNs = perChain(samples.scheduler);
const emitNs = perChain(samples.emit);
await writeResult('pipeline-chain-cost', {
  description:
    'three-handler chain (source → signal → action + result signal): chains per second through emit, and the scheduler cost / calling the three handlers directly',
  chainsPerSample: CHAINS,
  samples: SAMPLES,
  directNsPerChain: Math.round(directNs),
  schedulerNsPerChain: Math.round(schedulerNs),
  emitNsPerChain: Math.round(emitNs),
  chainsPerSecondEmit: Math.round(1e9 / emitNs),
  chainsPerSecondScheduler: Math.round(1e9 / schedulerNs),
  schedulerRatio: Number((schedulerNs / directNs).toFixed(1)),
  emitRatio: Number((emitNs / directNs).toFixed(1)),
});
