// The pipeline's memory per workflow (issue 26): heap after gc per workflow driven through
// the pipeline's in-memory backends (dedupe key, scope lock, scope window, an idempotency
// guard lane), each workflow on its own session scope as auto-approved workflows are.
// "unbounded" is the backends as they were (no entry bound; nothing expires within the
// run, as with the default one-hour TTLs); "bounded" is the default bounds (10 000 entries
// per map). Each part runs in a fresh process, twice; the figure is the heap growth per
// workflow, and the bounded/unbounded ratio at the same size.
// Run: npm run bench:pipeline-memory
import { realClock } from '../src/adapters/real-clock.js';
import {
  applyOnce,
  createAction,
  createPipeline,
  createSignal,
  DEFAULT_PIPELINE_LIMITS,
  defineActionHandler,
  definePolicy,
  defineSignalHandler,
  defineSourceHandler,
  InMemoryGuardBackend,
  InMemorySourceEventStore,
} from '../src/pipeline/index.js';
import { rounded, runPart, settledHeap, writeResult } from './measure.js';

const SIZES = [8_000, 40_000];
const ROUNDS = 2;
const MODES = ['unbounded', 'bounded'] as const;
type Mode = (typeof MODES)[number];

// An auto-approval-shaped chain: judge → answer action applied once per workflow.
const policy = definePolicy('bench-memory', [
  defineSourceHandler('bench.approval', 'bench.approval:judge', (source) => ({
    status: 'dispatch' as const,
    signals: [createSignal({ source, signalType: 'signal.bench.eligible', payload: {} })],
  })),
  defineSignalHandler('signal.bench.eligible', 'signal.bench.eligible:answer', (signal) => ({
    status: 'dispatch' as const,
    actions: [createAction({ signal, actionType: 'action.bench.answer', payload: {} })],
  })),
  defineActionHandler('action.bench.answer', 'action.bench.answer:apply', (action, ctx) =>
    applyOnce(action, ctx, action.actionId, () => undefined),
  ),
]);

interface PartResult {
  readonly bytesPerWorkflow: number;
  readonly entries: Record<string, number>;
}

/** One part: `workflows` workflows through a pipeline whose backends are `mode`. */
async function part(mode: Mode, workflows: number): Promise<PartResult> {
  const unbound = Number.MAX_SAFE_INTEGER;
  const bounds =
    mode === 'bounded'
      ? DEFAULT_PIPELINE_LIMITS
      : {
          maxDedupeKeys: unbound,
          maxScopeLocks: unbound,
          maxWindows: unbound,
          maxGuardLanes: unbound,
        };
  const { maxDedupeKeys, maxScopeLocks, maxWindows, maxGuardLanes } = bounds;
  const sourceEvents = new InMemorySourceEventStore(realClock, {
    maxDedupeKeys,
    maxScopeLocks,
    maxWindows,
  });
  const guards = new InMemoryGuardBackend(realClock, maxGuardLanes);
  const pipeline = createPipeline({ policies: [policy], sourceEvents, guards });
  const emit = (n: number) =>
    pipeline.emit({ sourceType: 'bench.approval', payload: {}, scope: { sessionId: `w${n}` } });
  // Warm up on scopes of their own, so the first measured workflow pays no JIT or history.
  for (let n = 0; n < 500; n++) await emit(-1 - n);
  const before = await settledHeap();
  for (let n = 0; n < workflows; n++) await emit(n);
  const after = await settledHeap();
  return {
    bytesPerWorkflow: Math.round((after - before) / workflows),
    entries: { ...sourceEvents.sizes, guardLanes: guards.size },
  };
}

const [, , flag, mode, size] = process.argv;
if (flag === '--part') {
  console.log(JSON.stringify(await part(mode as Mode, Number(size))));
} else {
  const figures: Record<string, unknown> = {};
  for (const workflows of SIZES) {
    const runs = { unbounded: [] as PartResult[], bounded: [] as PartResult[] };
    for (let round = 0; round < ROUNDS; round++)
      for (const m of MODES)
        runs[m].push(runPart<PartResult>(import.meta.filename, ['--part', m, String(workflows)]));
    const bytes = (m: Mode) => runs[m].map((r) => r.bytesPerWorkflow);
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    const mib = (m: Mode) => bytes(m).map((b) => rounded((b * workflows) / 2 ** 20, 1));
    figures[`workflows${workflows}`] = {
      unboundedHeapGrowthMiB: mib('unbounded'),
      boundedHeapGrowthMiB: mib('bounded'),
      unboundedBytesPerWorkflow: bytes('unbounded'),
      boundedBytesPerWorkflow: bytes('bounded'),
      boundedOverUnbounded: rounded(mean(bytes('bounded')) / mean(bytes('unbounded'))),
      entriesUnbounded: runs.unbounded[0]?.entries,
      entriesBounded: runs.bounded[0]?.entries,
    };
  }
  await writeResult('pipeline-memory', {
    description:
      "heap after gc per workflow held by the pipeline's in-memory dedupe / lock / window / guard-lane maps (auto-approval-shaped chain, one session scope per workflow); unbounded = before issue 26, bounded = default 10 000 entries per map; each part a fresh process, two rounds",
    bounds: {
      maxDedupeKeys: DEFAULT_PIPELINE_LIMITS.maxDedupeKeys,
      maxScopeLocks: DEFAULT_PIPELINE_LIMITS.maxScopeLocks,
      maxWindows: DEFAULT_PIPELINE_LIMITS.maxWindows,
      maxGuardLanes: DEFAULT_PIPELINE_LIMITS.maxGuardLanes,
    },
    rounds: ROUNDS,
    ...figures,
  });
}
