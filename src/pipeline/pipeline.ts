import { nanoidIdSource } from '../adapters/id-sources.js';
import { realClock } from '../adapters/real-clock.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { IdSource } from '../ports/ids.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import { type GuardBackend, InMemoryGuardBackend } from './guard-backend.js';
import type { PipelinePolicy } from './handlers.js';
import {
  type DedupedEvent,
  normalizeSourceEvent,
  recordInWindow,
  type SourceEventInput,
  sourceEventId,
} from './ingress.js';
import { type PipelineLimits, resolvePipelineLimits } from './limits.js';
import type { PipelineSource } from './nodes.js';
import { PendingEventLog } from './pending-events.js';
import { HandlerRegistry } from './registry.js';
import { roleboxSendPolicy, type SystemTarget } from './rolebox-send.js';
import { type PipelineRun, runChain } from './scheduler.js';
import { ScopeQueues } from './scope-queues.js';
import { InMemorySourceEventStore, type SourceEventStore } from './source-event-store.js';
import { StoreGuardBackend } from './store-guard-backend.js';
import { StoreSourceEventStore } from './store-source-event-store.js';
import { PipelineTelemetry, type TelemetryOptions } from './telemetry.js';

/** Options of {@link createPipeline}. */
export interface PipelineOptions {
  /** Installed in order, after the built-in `rolebox.send` policy. */
  readonly policies?: readonly PipelinePolicy[];
  /** Where enqueued events are kept until they have run (the rolebox's store is fine). */
  readonly store?: SnapshotStore;
  /** Dedupe, scope locks and windows (default: in memory). */
  readonly sourceEvents?: SourceEventStore;
  /** Guard lanes: debounce, throttle, outer timeout, idempotency (default: in memory). */
  readonly guards?: GuardBackend;
  /**
   * Where the default backends keep dedupe marks, windows and guard lanes: `'memory'`
   * (the default; bounded by `limits`, lost with the process) or `'store'` (records
   * `$pipeline:dedupe:*`, `$pipeline:window:*`, `$pipeline:guard:*` in `store`, so they
   * survive a restart; one process per store). `sourceEvents` / `guards` given win.
   */
  readonly guardState?: 'memory' | 'store';
  readonly clock?: Clock;
  readonly ids?: IdSource;
  readonly limits?: Partial<PipelineLimits>;
  /** OpenTelemetry providers (default: the global ones, no-ops until a host registers an SDK). */
  readonly telemetry?: TelemetryOptions;
  /** Failures that belong to no caller: a stored event that cannot be read, saved or removed, a `run` listener that threw. */
  readonly onError?: (error: Error) => void;
}

/** What `enqueue` answers: accepted (persisted, will run) or a duplicate (will not). */
export type EnqueueReceipt =
  | {
      readonly accepted: true;
      readonly scopeKey: string;
      readonly runId: string;
      readonly eventId: string;
    }
  | {
      readonly accepted: false;
      readonly reason: 'duplicate';
      readonly scopeKey: string;
      readonly eventId: string;
    };

/** What `start` found in the store. */
export interface PipelineStartReport {
  /** Enqueued events from before a restart, queued again in their order. */
  readonly restored: number;
  /** Stored events that could not be read; they stay in the store untouched. */
  readonly failed: readonly { readonly id: string; readonly error: RoleboxError }[];
}

/** Backends a caller brings to {@link Pipeline.execute}. */
export interface ExecuteBackends {
  readonly sourceEvents?: SourceEventStore;
  readonly guards?: GuardBackend;
}

const PIPELINE_OPTION_NAMES = Object.keys({
  policies: true,
  store: true,
  sourceEvents: true,
  guards: true,
  guardState: true,
  clock: true,
  ids: true,
  limits: true,
  telemetry: true,
  onError: true,
} satisfies Record<keyof PipelineOptions, true>);
const TELEMETRY_OPTION_NAMES = Object.keys({
  meterProvider: true,
  tracerProvider: true,
} satisfies Record<keyof TelemetryOptions, true>);

function requireMethods(name: string, value: unknown, methods: readonly string[]): void {
  if (value === undefined) return;
  if (
    typeof value !== 'object' ||
    value === null ||
    methods.some((method) => typeof (value as Record<string, unknown>)[method] !== 'function')
  ) {
    throw new RoleboxError(
      'invalid_argument',
      `${name} must implement ${methods.join(', ')}; got ${describeValue(value)}`,
      { option: name },
    );
  }
}

/**
 * The backends used where the caller brings none, as `guardState` says. Throws:
 * `invalid_argument` naming a `guardState` that is neither `'memory'` nor `'store'`, or
 * `'store'` without a `store`.
 */
function defaultBackends(
  options: PipelineOptions,
  clock: Clock,
  limits: PipelineLimits,
): { sourceEvents(): SourceEventStore; guards(): GuardBackend } {
  const { guardState = 'memory', store } = options;
  if (guardState !== 'memory' && guardState !== 'store')
    throw new RoleboxError(
      'invalid_argument',
      `guardState must be 'memory' or 'store', got ${describeValue(guardState)}`,
      { option: 'guardState' },
    );
  const { maxDedupeKeys, maxScopeLocks, maxWindows, maxGuardLanes } = limits;
  if (guardState === 'memory')
    return {
      sourceEvents: () =>
        new InMemorySourceEventStore(clock, { maxDedupeKeys, maxScopeLocks, maxWindows }),
      guards: () => new InMemoryGuardBackend(clock, maxGuardLanes),
    };
  if (store === undefined)
    throw new RoleboxError(
      'invalid_argument',
      "guardState 'store' keeps the pipeline's state in `store`: give createPipeline a store",
      { option: 'guardState' },
    );
  return {
    sourceEvents: () => new StoreSourceEventStore(store, clock, maxScopeLocks),
    guards: () => new StoreGuardBackend(store, clock),
  };
}

/**
 * The source → signal → action pipeline (SPEC-pipeline): ingress with dedupe, scope lock
 * and window; runs serialised per scope (FIFO); the scheduler; traces and telemetry.
 * Create it with {@link createPipeline}.
 */
export class Pipeline {
  readonly #registry: HandlerRegistry;
  readonly #sourceEvents: SourceEventStore;
  readonly #guards: GuardBackend;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #limits: PipelineLimits;
  readonly #telemetry: PipelineTelemetry;
  readonly #log: PendingEventLog | undefined;
  readonly #onError: (error: Error) => void;
  readonly #queues = new ScopeQueues();
  /** Enqueue calls not yet answered (persisting, deduping). */
  readonly #intakes = new Set<Promise<EnqueueReceipt>>();
  readonly #history: PipelineRun[] = [];
  readonly #listeners = new Set<(run: PipelineRun) => void>();
  #system: SystemTarget | undefined;
  #started: Promise<PipelineStartReport> | undefined;
  #stopped = false;

  constructor(options: PipelineOptions = {}) {
    checkOptionNames(options, PIPELINE_OPTION_NAMES, 'createPipeline options');
    if (options.telemetry !== undefined) {
      checkOptionNames(options.telemetry, TELEMETRY_OPTION_NAMES, 'createPipeline telemetry');
      requireMethods('telemetry.meterProvider', options.telemetry.meterProvider, ['getMeter']);
      requireMethods('telemetry.tracerProvider', options.telemetry.tracerProvider, ['getTracer']);
    }
    if (options.policies !== undefined && !Array.isArray(options.policies))
      throw new RoleboxError(
        'invalid_argument',
        `policies must be an array of policies, got ${describeValue(options.policies)}`,
        { option: 'policies' },
      );
    requireMethods('store', options.store, ['loadByPrefix', 'save', 'delete']);
    requireMethods('sourceEvents', options.sourceEvents, [
      'tryDedupe',
      'acquireScopeLock',
      'releaseScopeLock',
      'readWindow',
      'writeWindow',
    ]);
    requireMethods('guards', options.guards, ['get', 'touch']);
    requireMethods('clock', options.clock, ['now', 'setTimeout', 'clearTimeout']);
    requireMethods('ids', options.ids, ['next']);
    if (options.onError !== undefined && typeof options.onError !== 'function') {
      throw new RoleboxError(
        'invalid_argument',
        `onError must be a function, got ${describeValue(options.onError)}`,
      );
    }
    this.#clock = options.clock ?? realClock;
    this.#ids = options.ids ?? nanoidIdSource;
    this.#limits = resolvePipelineLimits(options.limits);
    this.#registry = new HandlerRegistry([
      roleboxSendPolicy(() => this.#system),
      ...(options.policies ?? []),
    ]);
    const defaults = defaultBackends(options, this.#clock, this.#limits);
    this.#sourceEvents = options.sourceEvents ?? defaults.sourceEvents();
    this.#guards = options.guards ?? defaults.guards();
    this.#telemetry = new PipelineTelemetry(options.telemetry);
    this.#log = options.store ? new PendingEventLog(options.store) : undefined;
    this.#onError =
      options.onError ?? ((error) => console.warn(`[rolebox pipeline] ${error.message}`));
  }

  /** The installed policies' ids, in order (`rolebox.send` first). */
  get policies(): readonly string[] {
    return this.#registry.policies();
  }

  /**
   * Loads the events enqueued before a restart and queues them again, in order, each to run
   * once. Called by the first emit / execute / enqueue when you do not; calling it again
   * answers the same report.
   */
  start(): Promise<PipelineStartReport> {
    this.#started ??= this.#restore();
    return this.#started;
  }

  async #restore(): Promise<PipelineStartReport> {
    if (!this.#log) return { restored: 0, failed: [] };
    const { events, failed } = await this.#log.load();
    for (const failure of failed) this.#onError(failure.error);
    for (const event of events) {
      // A producer retrying an event that is already waiting must get a duplicate.
      await this.#sourceEvents.tryDedupe(sourceEventId(event.source), this.#limits.dedupeWindowMs);
      this.#schedule(event.runId, event.source);
    }
    return { restored: events.length, failed };
  }

  /**
   * Runs a source event now (after the runs already queued on its scope) and answers the
   * run, or `{ deduped: true }` for an event seen within the dedupe window.
   * Throws: `invalid_source_event` for a malformed event (nothing recorded), `pipeline_stopped`.
   * Do not `emit` on a handler's own scope from inside that handler (it would wait for
   * itself): `enqueue` instead.
   */
  emit(input: SourceEventInput): Promise<PipelineRun | DedupedEvent> {
    return this.execute(input);
  }

  /**
   * {@link Pipeline.emit} with backends of the caller's choosing (tests, a worker that owns
   * the timing): its own dedupe / lock / window store and guard lanes.
   */
  async execute(
    input: SourceEventInput,
    backends: ExecuteBackends = {},
  ): Promise<PipelineRun | DedupedEvent> {
    requireMethods('sourceEvents', backends.sourceEvents, [
      'tryDedupe',
      'acquireScopeLock',
      'releaseScopeLock',
      'readWindow',
      'writeWindow',
    ]);
    requireMethods('guards', backends.guards, ['get', 'touch']);
    this.#requireOpen();
    const source = normalizeSourceEvent(input, this.#clock, this.#ids);
    await this.start();
    this.#requireOpen();
    const sourceEvents = backends.sourceEvents ?? this.#sourceEvents;
    const eventId = sourceEventId(source);
    if (!(await sourceEvents.tryDedupe(eventId, this.#limits.dedupeWindowMs))) {
      return { deduped: true, reason: 'duplicate', eventId, scopeKey: source.scopeKey };
    }
    const runId = this.#ids.next('run_');
    return this.#queues.run(source.scopeKey, () => {
      this.#requireOpen();
      return this.#run(runId, source, sourceEvents, backends.guards ?? this.#guards);
    });
  }

  /**
   * Accepts a source event to run later, serialised per scope, and answers at once (after
   * persisting it when the pipeline has a store, so a crash does not lose it).
   * Throws: `invalid_source_event` (nothing recorded), `pipeline_stopped`, `store_failed`.
   */
  enqueue(input: SourceEventInput): Promise<EnqueueReceipt> {
    // Everything up to here is synchronous, so `drain()` called right after sees the intake.
    this.#requireOpen();
    const source = normalizeSourceEvent(input, this.#clock, this.#ids);
    const intake = this.#accept(source);
    this.#intakes.add(intake);
    const forget = () => this.#intakes.delete(intake);
    intake.then(forget, forget);
    return intake;
  }

  async #accept(source: PipelineSource): Promise<EnqueueReceipt> {
    await this.start();
    this.#requireOpen();
    const eventId = sourceEventId(source);
    const runId = this.#ids.next('run_');
    // Persisted before it is marked as seen: if the save fails, a retry is not a "duplicate".
    await this.#log?.add(runId, source, this.#clock.now());
    if (!(await this.#sourceEvents.tryDedupe(eventId, this.#limits.dedupeWindowMs))) {
      await this.#log?.remove(runId);
      return { accepted: false, reason: 'duplicate', scopeKey: source.scopeKey, eventId };
    }
    this.#schedule(runId, source);
    return { accepted: true, scopeKey: source.scopeKey, runId, eventId };
  }

  /** Queues a persisted event's run; its record goes once the run has finished. */
  #schedule(runId: string, source: PipelineSource): void {
    void this.#queues.run(source.scopeKey, async () => {
      // A stopped pipeline leaves queued events in the store for the next start.
      if (this.#stopped) return;
      try {
        await this.#run(runId, source, this.#sourceEvents, this.#guards);
      } catch (error) {
        this.#onError(error instanceof Error ? error : new Error(String(error)));
      }
      try {
        await this.#log?.remove(runId);
      } catch (error) {
        this.#onError(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  async #run(
    runId: string,
    source: PipelineSource,
    sourceEvents: SourceEventStore,
    guards: GuardBackend,
  ): Promise<PipelineRun> {
    const window = await recordInWindow(sourceEvents, source, this.#limits, this.#clock);
    const run = await runChain(
      source,
      runId,
      {
        registry: this.#registry,
        guards,
        clock: this.#clock,
        telemetry: this.#telemetry,
        maxSteps: this.#limits.maxSteps,
        guardTtlMs: this.#limits.guardTtlMs,
      },
      window,
    );
    this.#history.push(run);
    if (this.#history.length > this.#limits.runHistory) this.#history.shift();
    for (const listener of this.#listeners) {
      try {
        listener(run);
      } catch (error) {
        this.#onError(error instanceof Error ? error : new Error(String(error)));
      }
    }
    return run;
  }

  /**
   * Resolves once no event is being accepted and no run is queued or running, including
   * runs enqueued by the runs themselves (an action that drives a session, which feeds the
   * pipeline again).
   */
  async drain(): Promise<void> {
    while (this.#intakes.size > 0 || this.#queues.size > 0) {
      await Promise.allSettled([...this.#intakes]);
      await this.#queues.idle();
    }
  }

  /** The last finished runs (at most `limits.runHistory`), oldest first. */
  runs(): readonly PipelineRun[] {
    return [...this.#history];
  }

  /** Calls `listener` with every finished run. Returns: unsubscribe. */
  on(type: 'run', listener: (run: PipelineRun) => void): () => void {
    if (type !== 'run')
      throw new RoleboxError(
        'invalid_argument',
        `pipelines emit only "run", not ${describeValue(type)}`,
      );
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Where `action.rolebox.send` delivers; a rolebox created with `{ pipeline }` attaches itself. */
  attachSystem(target: SystemTarget | undefined): void {
    this.#system = target;
  }

  /**
   * Stops taking events and waits for the runs in progress; runs still queued stay in the
   * store for the next start.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#queues.idle();
  }

  #requireOpen(): void {
    if (this.#stopped) throw new RoleboxError('pipeline_stopped', 'this pipeline has been stopped');
  }
}

/**
 * Creates a pipeline. Throws: `invalid_argument` for a malformed option or an unknown option
 * name (here, in `limits` or in `telemetry`), `invalid_handler` / `duplicate_handler` for a
 * bad policy.
 */
export function createPipeline(options: PipelineOptions = {}): Pipeline {
  return new Pipeline(options);
}
