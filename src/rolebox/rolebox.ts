import { createBrowserInspector } from '@statelyai/inspect';
import {
  type Actor,
  createActor,
  type InspectionEvent,
  type Observer,
  type SnapshotFrom,
} from 'xstate';
import { createFunctionMachine } from '../../machines/function.machine.js';
import { createLoopMachine, loopStateOf } from '../../machines/loop.machine.js';
import {
  ARTIFACTS_CHILD_ID,
  createSessionMachine,
  type SessionMachine,
} from '../../machines/session.machine.js';
import { createSystemMachine, type SystemMachine } from '../../machines/system.machine.js';
import { nanoidIdSource } from '../adapters/id-sources.js';
import { realClock } from '../adapters/real-clock.js';
import {
  functionActorId,
  loopActorId,
  SYSTEM_ACTOR_ID,
  sessionActorId,
} from '../base/actor-ids.js';
import { type ConditionRegistry, defaultConditionRegistry } from '../condition/registry.js';
import { describeValue, RoleboxError } from '../errors.js';
import { FunctionCatalog } from '../function/catalog.js';
import type { FunctionDefinition } from '../function/definition.js';
import type { FunctionContext, FunctionPhase } from '../function/machine-types.js';
import type { LoopContext } from '../loop/machine-types.js';
import { checkSessionSnapshot, type SnapshotMachines } from '../persistence/check-snapshot.js';
import { decodeEnvelope } from '../persistence/envelope.js';
import { JournalRecorder, type RecordedRun } from '../persistence/journal.js';
import { type MigrationRegistry, noMigrations } from '../persistence/migrations.js';
import { Persister } from '../persistence/persister.js';
import {
  buildSystemSnapshot,
  loadStoredSessions,
  type StartReport,
  withoutSharedSystemIds,
} from '../persistence/restore.js';
import { Pipeline } from '../pipeline/pipeline.js';
import type { Clock } from '../ports/clock.js';
import type { Dispatcher } from '../ports/dispatcher.js';
import type { IdSource } from '../ports/ids.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import type { ArtifactStoreContext } from '../session/artifact-store.js';
import { ACCEPTANCE_MODES, type AcceptanceMode } from '../session/runtime-types.js';
import { type RoleboxLimits, resolveLimits } from '../system/limits.js';
import type { MachineEnv } from '../system/machine-env.js';
import type { SystemEvent } from '../system/machine-types.js';
import type { HostEvent, HostEventOf, HostEventType } from './host-events.js';
import {
  connectWebSocketInspector,
  type InspectorCommand,
  type WebSocketInspector,
} from './inspector-connection.js';
import { connectPipeline } from './pipeline-bridge.js';
import { applyRemoteCommand } from './remote-command.js';
import { SessionHandle, type SessionHost, type SessionSnapshotView } from './session-handle.js';

/**
 * Inspection: an XState inspection observer (function or object); `{ url }` to stream to
 * an inspector server speaking the @statelyai/inspect WebSocket protocol (rolebox's own
 * `rolebox inspect`, which can also send events back); or `'stately'` for Stately's
 * browser inspector (in a browser only).
 */
export type InspectOption =
  | ((event: InspectionEvent) => void)
  | Observer<InspectionEvent>
  | { readonly url: string }
  | 'stately';

/** Options of {@link createRolebox}. */
export interface RoleboxOptions {
  /** The functions sessions can activate (from `defineFunction` or `loadFunctions`). */
  readonly functions?: readonly FunctionDefinition[];
  /** The condition registry the definitions were checked against (default: the process-wide one). */
  readonly conditions?: ConditionRegistry;
  /** Time source (default: the real clock). Tests pass a `SimulatedClock`. */
  readonly clock?: Clock;
  /** Id source (default: nanoid). Tests and replays pass `seededIdSource()`. */
  readonly ids?: IdSource;
  /** Overrides of the default limits. */
  readonly limits?: Partial<RoleboxLimits>;
  /** An XState inspection observer; inspection is off when absent. */
  readonly inspect?: InspectOption;
  /** Runs loop rounds as worker tasks; loops cannot start without one. */
  readonly dispatcher?: Dispatcher;
  /**
   * The seed's behaviour for runtime events a phase does not allow: the session moves to
   * `error` instead of the event being refused with a RoleboxError (default false).
   */
  readonly strictSessions?: boolean;
  /**
   * Where sessions are persisted (e.g. `new SqliteSnapshotStore('.rolebox/state.db')`).
   * With a store, `start()` restores every stored session and every change is saved.
   */
  readonly store?: SnapshotStore;
  /** How long changes are collected before they are written (default 200 ms). */
  readonly saveDebounceMs?: number;
  /** Migrations for records written by older versions. */
  readonly migrations?: MigrationRegistry;
  /** Record every event that enters the system from outside, for `rb.recordRun()` and replay. */
  readonly journal?: boolean;
  /**
   * A background pipeline (`createPipeline`) to feed with the system's facts (agent signals,
   * completed functions, rounds and loops, phase and artifact changes) and to let drive the
   * sessions through `action.rolebox.send`. `start()` starts it (running events enqueued
   * before a restart), `stop()` stops it.
   */
  readonly pipeline?: Pipeline;
}

/** A handler for host events of one type. */
export type HostEventHandler<T extends HostEventType> = (event: HostEventOf<T>) => void;

const SESSION_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * A running rolebox: one root system actor with its sessions, functions and loops, and the
 * typed API the host drives them with.
 */
export class Rolebox {
  #actor: Actor<SystemMachine> | undefined;
  readonly #systemMachine: SystemMachine;
  readonly #snapshotMachines: SnapshotMachines;
  readonly #inspect: InspectOption | undefined;
  #inspector: WebSocketInspector | undefined;
  readonly #store: SnapshotStore | undefined;
  readonly #migrations: MigrationRegistry;
  readonly #persister: Persister | undefined;
  #startReport: StartReport | undefined;
  readonly #limits: RoleboxLimits;
  readonly #journal: boolean;
  #recorder: JournalRecorder | undefined;
  readonly #catalog: FunctionCatalog;
  readonly #conditions: ConditionRegistry;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #dispatcher: Dispatcher | undefined;
  readonly #handlers = new Map<string, Set<(event: HostEvent) => void>>();
  /** Host events caught while a command runs; delivered once it has been fully processed. */
  readonly #captures: HostEvent[][] = [];
  /** Ids whose stored record is being read by an `openSession` in flight. */
  readonly #opening = new Set<string>();
  #state: 'created' | 'started' | 'halted' | 'stopped' = 'created';
  /** Why the rolebox halted: the first save that failed (SPEC §6). */
  #failure: RoleboxError | undefined;
  readonly #sessionHost: SessionHost;
  readonly #pipeline: Pipeline | undefined;
  #disconnectPipeline: (() => void) | undefined;

  /** Internal: use {@link createRolebox}. */
  constructor(options: RoleboxOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new RoleboxError(
        'invalid_argument',
        `createRolebox options must be an object, got ${describeValue(options)}`,
      );
    }
    if (options.functions !== undefined && !Array.isArray(options.functions)) {
      throw new RoleboxError(
        'invalid_argument',
        `functions must be an array of definitions, got ${describeValue(options.functions)}`,
      );
    }
    this.#catalog = new FunctionCatalog(options.functions ?? []);
    this.#conditions = options.conditions ?? defaultConditionRegistry;
    this.#clock = options.clock ?? realClock;
    this.#ids = options.ids ?? nanoidIdSource;
    if (options.dispatcher !== undefined && !isDispatcher(options.dispatcher)) {
      throw new RoleboxError(
        'invalid_argument',
        'dispatcher must implement dispatchRound, getTaskStatus, getRoundResult, cancelRound and onTerminated',
      );
    }
    this.#dispatcher = options.dispatcher;
    const limits = resolveLimits(options.limits);
    this.#limits = limits;
    this.#journal = options.journal === true;
    const env: MachineEnv = {
      catalog: this.#catalog,
      conditions: this.#conditions,
      limits,
      clock: this.#clock,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    };
    this.#systemMachine = createSystemMachine(env);
    this.#snapshotMachines = {
      session: createSessionMachine(env),
      function: createFunctionMachine(env),
      loop: createLoopMachine(env),
    };
    this.#inspect = checkInspectOption(options.inspect);
    if (options.pipeline !== undefined && !(options.pipeline instanceof Pipeline)) {
      throw new RoleboxError(
        'invalid_argument',
        `pipeline must be created with createPipeline(), got ${describeValue(options.pipeline)}`,
      );
    }
    this.#pipeline = options.pipeline;
    this.#migrations = options.migrations ?? noMigrations;
    if (options.store !== undefined && !isSnapshotStore(options.store)) {
      throw new RoleboxError(
        'invalid_argument',
        'store must implement loadAll, load, save and delete',
      );
    }
    const debounceMs = options.saveDebounceMs ?? 200;
    if (!Number.isInteger(debounceMs) || debounceMs < 0) {
      throw new RoleboxError(
        'invalid_argument',
        `saveDebounceMs must be a whole number of milliseconds, got ${describeValue(debounceMs)}`,
      );
    }
    this.#store = options.store;
    this.#persister = options.store
      ? new Persister({
          store: options.store,
          clock: this.#clock,
          debounceMs,
          sessionSnapshot: (sessionId) =>
            this.#actor !== undefined &&
            Object.hasOwn(this.#actor.getSnapshot().context.sessions, sessionId)
              ? this.system.system.get(sessionActorId(sessionId))?.getPersistedSnapshot()
              : undefined,
          systemSnapshot: () => ({
            context: { loopRegistry: this.system.getSnapshot().context.loopRegistry },
          }),
          onError: (error, sessionIds) => this.#halt(error, sessionIds),
        })
      : undefined;
    this.#sessionHost = {
      catalog: this.#catalog,
      conditions: this.#conditions,
      limits,
      hasDispatcher: options.dispatcher !== undefined,
      newId: (prefix) => this.#ids.next(prefix),
      now: () => this.#clock.now(),
      loopRegistry: () => this.system.getSnapshot().context.loopRegistry,
      liveLoop: (loopId) => {
        const ref = this.system.system.get(loopActorId(loopId));
        return ref
          ? loopStateOf(ref.getSnapshot() as { value: unknown; context: LoopContext })
          : undefined;
      },
      startLoop: (sessionId, loop, rootLoopId) =>
        this.#dispatch({ type: 'system.start_loop', sessionId, loop, rootLoopId }),
      deliver: (sessionId, command) =>
        this.#dispatch({ type: 'system.deliver', sessionId, command }),
      sessionSnapshot: (sessionId) => this.#sessionSnapshot(sessionId),
      strictSessions: options.strictSessions === true,
      liveFunction: (sessionId, name) => this.#liveFunction(sessionId, name),
      close: (sessionId) => {
        this.#dispatch({ type: 'system.close_session', sessionId, at: this.#clock.now() });
        this.#persister?.markDeleted(sessionId);
      },
    };
  }

  /** The root actor, for inspection and advanced use. Throws `not_started` before `start()`. */
  get system(): Actor<SystemMachine> {
    if (!this.#actor)
      throw new RoleboxError(
        'not_started',
        'the actor system exists once await rb.start() has run',
      );
    return this.#actor;
  }

  /**
   * Starts the actor system. With a store, first restores every stored session (their
   * functions, loops and artifacts with them); restored loops reconcile with the
   * dispatcher and re-arm their deadlines. A record that cannot be restored is reported
   * (in the result and as an `error` host event) and left in the store; the others restore.
   * Call once, before opening sessions.
   * Throws: `stopped` after `stop()`; `store_failed` when the store cannot be read.
   */
  async start(): Promise<StartReport> {
    if (this.#state === 'stopped')
      throw new RoleboxError('stopped', 'this rolebox has been stopped; create a new one');
    if (this.#startReport) return this.#startReport;
    let snapshot: unknown;
    let report: StartReport = { restored: [], failed: [] };
    if (this.#store) {
      const stored = await loadStoredSessions(
        this.#store,
        this.#snapshotMachines,
        this.#catalog,
        this.#migrations,
      );
      if (stored.sessions.length > 0 || Object.keys(stored.loopRegistry.loops).length > 0) {
        snapshot = buildSystemSnapshot(stored.sessions, stored.loopRegistry);
      }
      report = {
        restored: stored.sessions.map((session) => session.sessionId),
        failed: stored.failed,
      };
    }
    const inspect = this.#resolveInspect();
    const actor = createActor(this.#systemMachine, {
      systemId: SYSTEM_ACTOR_ID,
      ...(inspect ? { inspect } : {}),
      ...(snapshot === undefined ? {} : { snapshot: snapshot as never }),
    });
    actor.on('*', (event) => this.#onEmitted(event as HostEvent));
    actor.subscribe({
      error: (error) => this.#deliver([{ type: 'error', error: toError(error) }]),
    });
    if (this.#persister) actor.system.inspect(this.#persister.observe);
    if (this.#journal) {
      this.#recorder = new JournalRecorder(this.#clock, () => actor.getPersistedSnapshot());
      actor.system.inspect(this.#recorder.observe);
    }
    this.#actor = actor;
    this.#state = 'started';
    this.#startReport = report;
    actor.start();
    report = this.#verifyRestored(actor, report);
    this.#startReport = report;
    this.#recorder?.begin();
    for (const failure of report.failed)
      this.#deliver([{ type: 'error', sessionId: failure.sessionId, error: failure.error }]);
    if (this.#pipeline) await this.#startPipeline(this.#pipeline);
    return report;
  }

  /**
   * The report as it stands once the system runs: a session counts as restored only when its
   * actor is live. The records were checked whole, so a restore that still fails is a bug;
   * it is reported against every session it took down rather than listed as restored.
   */
  #verifyRestored(actor: Actor<SystemMachine>, report: StartReport): StartReport {
    const root = actor.getSnapshot();
    const failed = [...report.failed];
    const restored: string[] = [];
    for (const sessionId of report.restored) {
      const session = actor.system.get(sessionActorId(sessionId));
      if (root.status === 'active' && session?.getSnapshot().status === 'active') {
        restored.push(sessionId);
        continue;
      }
      const cause = root.status === 'error' ? root.error : session?.getSnapshot().error;
      failed.push({
        sessionId,
        error: new RoleboxError(
          'invalid_snapshot',
          `stored session ${describeValue(sessionId)} could not be restored: ${cause instanceof Error ? cause.message : describeValue(cause ?? 'its actor is not live')}`,
          { sessionId },
        ),
      });
    }
    return { restored, failed };
  }

  /** Connects the pipeline both ways, then lets it run what was enqueued before a restart. */
  async #startPipeline(pipeline: Pipeline): Promise<void> {
    pipeline.attachSystem({
      deliver: (sessionId, command) => applyRemoteCommand(this.session(sessionId), command),
    });
    const disconnectBridge = connectPipeline(
      {
        on: (type, handler) => this.on(type, handler),
        actor: (systemId) => this.system.system.get(systemId),
        sessions: () => this.sessions(),
        onError: (error, sessionId) => this.#deliver([{ type: 'error', sessionId, error }]),
      },
      pipeline,
    );
    this.#disconnectPipeline = () => {
      disconnectBridge();
      pipeline.attachSystem(undefined);
    };
    try {
      await pipeline.start();
    } catch (error) {
      this.#deliver([{ type: 'error', error: toError(error) }]);
    }
  }

  /**
   * The run recorded so far: the system's snapshot at start, and every event that entered
   * it from outside with the snapshot after it. Save it (`writeRunFile` from
   * `rolebox/testing`) and replay it in tests on later code.
   * Throws: `invalid_argument` unless created with `journal: true`; `not_started` before start.
   */
  recordRun(): RecordedRun {
    if (!this.#journal)
      throw new RoleboxError(
        'invalid_argument',
        'recordRun() needs createRolebox({ journal: true })',
      );
    if (!this.#recorder)
      throw new RoleboxError('not_started', 'call await rb.start() before recording');
    return this.#recorder.finish(this.#catalog.definitions(), this.#limits);
  }

  /**
   * Writes every pending change to the store now (changes are otherwise written after the
   * debounce window). Resolves when the store has them; a no-op without a store.
   */
  async flush(): Promise<void> {
    if (this.#failure) throw this.#failure;
    await this.#persister?.flush();
  }

  /**
   * A save failed: nothing may run ahead of what is stored (SPEC §6), so the rolebox stops
   * driving sessions at once: the actor system stops (no further round is dispatched, no
   * timer fires), no further save is tried, and every later call throws `store_failed`.
   * A worker already running keeps running; a new rolebox on a working store picks its
   * result up (restart reconciliation). Reported once, as an `error` host event.
   */
  #halt(cause: Error, sessionIds: readonly string[]): void {
    if (this.#state !== 'started') return;
    const what = sessionIds.length > 0 ? `session(s) ${sessionIds.join(', ')}` : 'its changes';
    const failure = new RoleboxError(
      'store_failed',
      `the snapshot store could not save ${what}: ${cause.message}; rolebox stopped driving sessions so that nothing runs ahead of what is stored`,
      { sessionIds: [...sessionIds], cause: cause.message },
    );
    this.#failure = failure;
    this.#state = 'halted';
    this.#persister?.dispose();
    this.#actor?.stop();
    this.#dispatcher?.close?.();
    this.#deliver([{ type: 'error', error: failure }]);
  }

  /**
   * Opens a new session and returns its handle.
   * Throws: `duplicate_session` when `id` is live, `invalid_argument` for a bad id,
   * `not_started` before `start()`.
   */
  async openSession(
    options: { readonly id?: string; readonly acceptanceMode?: AcceptanceMode } = {},
  ): Promise<SessionHandle> {
    this.#requireStarted();
    if (typeof options !== 'object' || options === null) {
      throw new RoleboxError(
        'invalid_argument',
        `openSession options must be an object, got ${describeValue(options)}`,
      );
    }
    const id = options.id ?? this.#ids.next('s_');
    if (typeof id !== 'string' || !SESSION_ID.test(id)) {
      throw new RoleboxError(
        'invalid_argument',
        `session id must be 1-128 characters of A-Z a-z 0-9 _ . -, got ${describeValue(id)}`,
        { id },
      );
    }
    const { acceptanceMode } = options;
    if (acceptanceMode !== undefined && !ACCEPTANCE_MODES.includes(acceptanceMode)) {
      throw new RoleboxError(
        'invalid_argument',
        `acceptanceMode must be one of ${ACCEPTANCE_MODES.join(', ')}, got ${describeValue(acceptanceMode)}`,
        {
          acceptanceMode,
        },
      );
    }
    if (this.#isLive(id) || this.#opening.has(id))
      throw new RoleboxError('duplicate_session', `session ${describeValue(id)} is already open`, {
        id,
      });
    if (options.id !== undefined && this.#store) {
      // Reading the store takes a tick: a second open of the same id meanwhile is refused
      // above instead of both resolving to one session.
      this.#opening.add(id);
      let stored: string | undefined;
      try {
        stored = await this.#store.load(id);
      } finally {
        this.#opening.delete(id);
      }
      this.#requireStarted();
      if (stored !== undefined) return this.#restoreSession(id, stored);
    }
    this.#dispatch({
      type: 'system.open_session',
      sessionId: id,
      at: this.#clock.now(),
      ...(acceptanceMode ? { acceptanceMode } : {}),
    });
    return new SessionHandle(id, this.#sessionHost);
  }

  /** Restores one stored session into the running system (decoded and checked first). */
  #restoreSession(id: string, stored: string): SessionHandle {
    const envelope = decodeEnvelope(id, stored, this.#migrations);
    const checked = checkSessionSnapshot(
      id,
      envelope.snapshot,
      this.#snapshotMachines,
      this.#catalog,
    );
    // Its actors must not clash with the live ones (a duplicate systemId would put the
    // whole root in error).
    const { clashes } = withoutSharedSystemIds([{ sessionId: id, ...checked }], {
      live: (systemId) => (this.system.system.get(systemId) ? 'a live session' : undefined),
    });
    if (clashes[0]) throw clashes[0].error;
    this.#dispatch({
      type: 'system.restore_session',
      sessionId: id,
      openedAt: checked.snapshot.context.createdAt,
      snapshot: checked.snapshot,
    });
    return new SessionHandle(id, this.#sessionHost);
  }

  /** The handle of a live session. Throws: `unknown_session`. */
  session(id: string): SessionHandle {
    this.#sessionSnapshot(id);
    return new SessionHandle(id, this.#sessionHost);
  }

  /** Ids of the live sessions, in the order they were opened. */
  sessions(): string[] {
    return this.#state === 'started' && this.#actor
      ? Object.keys(this.#actor.getSnapshot().context.sessions)
      : [];
  }

  /**
   * Subscribes to host events of one type (or `'*'` for all). Handlers run after the
   * command that caused the event has been fully processed, so they may call back in.
   * Returns: a function that unsubscribes.
   */
  on<T extends HostEventType>(type: T, handler: HostEventHandler<T>): () => void;
  on(type: '*', handler: (event: HostEvent) => void): () => void;
  on(type: string, handler: (event: never) => void): () => void {
    if (typeof handler !== 'function') {
      throw new RoleboxError(
        'invalid_argument',
        `rb.on(${describeValue(type)}, handler) needs a function`,
        { type },
      );
    }
    const set = this.#handlers.get(type) ?? new Set();
    set.add(handler as (event: HostEvent) => void);
    this.#handlers.set(type, set);
    return () => set.delete(handler as (event: HostEvent) => void);
  }

  /**
   * Writes what is pending, stops every actor and releases the dispatcher (its tasks keep
   * running). The rolebox cannot be started again; the store stays open (it is the host's).
   */
  async stop(): Promise<void> {
    if (this.#state === 'started' || this.#state === 'halted') {
      if (this.#pipeline) {
        // The runs in progress may still drive sessions: let them finish first.
        await this.#pipeline.stop();
        this.#disconnectPipeline?.();
      }
      // A halted rolebox has nothing it could still write.
      if (this.#state === 'started') {
        try {
          await this.#persister?.flush();
        } finally {
          this.#persister?.dispose();
          this.#actor?.stop();
        }
      }
    }
    this.#dispatcher?.close?.();
    this.#inspector?.stop();
    this.#state = 'stopped';
  }

  /** The inspection observer to give the actor system (connecting to a server when asked). */
  #resolveInspect(): ((event: InspectionEvent) => void) | Observer<InspectionEvent> | undefined {
    const option = this.#inspect;
    if (option === undefined) return undefined;
    if (option === 'stately') return createBrowserInspector().inspect as Observer<InspectionEvent>;
    if (typeof option === 'object' && 'url' in option) {
      this.#inspector = connectWebSocketInspector(option.url, (actor, command) =>
        this.#inspectorCommand(actor, command),
      );
      return this.#inspector.observer;
    }
    return option;
  }

  /**
   * Runs a command from the inspector page, through the same validated API as the host
   * (a bad one throws and the page shows why).
   */
  #inspectorCommand(actor: string, command: InspectorCommand): void {
    const context = this.system.getSnapshot().context;
    const sessionId = actor.startsWith('session:')
      ? actor.slice('session:'.length)
      : actor.startsWith('fn:') || actor.startsWith('artifacts:')
        ? (actor.split(':')[1] as string)
        : actor.startsWith('loop:')
          ? Object.keys(context.sessions).find(
              (id) =>
                this.#sessionSnapshot(id).context.activeLoopId === actor.slice('loop:'.length),
            )
          : undefined;
    if (sessionId === undefined)
      throw new RoleboxError(
        'unknown_session',
        `actor ${describeValue(actor)} belongs to no open session`,
        { actor },
      );
    applyRemoteCommand(this.session(sessionId), command);
    this.#deliver([{ type: 'inspector_command', sessionId, actor, command }]);
  }

  #requireStarted(): void {
    if (this.#failure) throw this.#failure;
    if (this.#state === 'created')
      throw new RoleboxError('not_started', 'call await rb.start() before using the rolebox');
    if (this.#state === 'stopped')
      throw new RoleboxError('stopped', 'this rolebox has been stopped');
  }

  #isLive(sessionId: string): boolean {
    return Object.hasOwn(this.system.getSnapshot().context.sessions, sessionId);
  }

  #sessionSnapshot(sessionId: string): SessionSnapshotView {
    this.#requireStarted();
    const ref =
      typeof sessionId === 'string' && this.#isLive(sessionId)
        ? this.system.system.get(sessionActorId(sessionId))
        : undefined;
    if (!ref)
      throw new RoleboxError('unknown_session', `no open session ${describeValue(sessionId)}`, {
        sessionId,
      });
    const snapshot = ref.getSnapshot() as SnapshotFrom<SessionMachine>;
    const store = snapshot.children[ARTIFACTS_CHILD_ID]?.getSnapshot() as
      | { context: ArtifactStoreContext }
      | undefined;
    return {
      value: snapshot.value,
      context: snapshot.context,
      artifacts: store?.context.artifacts ?? [],
      can: (event) => snapshot.can(event),
    };
  }

  #liveFunction(
    sessionId: string,
    name: string,
  ): { phase: FunctionPhase; context: FunctionContext } | undefined {
    const ref = this.system.system.get(functionActorId(sessionId, name));
    if (!ref) return undefined;
    const snapshot = ref.getSnapshot() as { value: unknown; context: FunctionContext };
    const phase: FunctionPhase =
      snapshot.value === 'gated' ? 'gated' : snapshot.value === 'complete' ? 'complete' : 'active';
    return { phase, context: snapshot.context };
  }

  /** Sends one event to the root and returns the host events it caused, then delivers them. */
  #dispatch(event: SystemEvent): HostEvent[] {
    const captured: HostEvent[] = [];
    this.#captures.push(captured);
    try {
      this.system.send(event);
    } finally {
      this.#captures.pop();
    }
    this.#deliver(captured);
    return captured;
  }

  #onEmitted(event: HostEvent): void {
    const capture = this.#captures.at(-1);
    if (capture) capture.push(event);
    else this.#deliver([event]);
  }

  #deliver(events: readonly HostEvent[]): void {
    const failures: unknown[] = [];
    for (const event of events) {
      for (const handler of [
        ...(this.#handlers.get(event.type) ?? []),
        ...(this.#handlers.get('*') ?? []),
      ]) {
        try {
          handler(event);
        } catch (error) {
          if (event.type === 'error') throw error;
          failures.push(error);
        }
      }
    }
    for (const failure of failures) {
      if ((this.#handlers.get('error')?.size ?? 0) === 0) throw failure;
      this.#deliver([{ type: 'error', error: toError(failure) }]);
    }
  }
}

function checkInspectOption(option: unknown): InspectOption | undefined {
  if (option === undefined || typeof option === 'function')
    return option as InspectOption | undefined;
  if (option === 'stately') {
    if (typeof (globalThis as { window?: unknown }).window === 'undefined') {
      throw new RoleboxError(
        'invalid_argument',
        "inspect: 'stately' opens Stately's inspector in a browser; in Node use { url } with `rolebox inspect`",
      );
    }
    return option;
  }
  if (typeof option === 'object' && option !== null) {
    if ('url' in option) {
      const url = (option as { url: unknown }).url;
      if (typeof url !== 'string' || !/^wss?:\/\//.test(url)) {
        throw new RoleboxError(
          'invalid_argument',
          `inspect.url must be a ws:// or wss:// URL, got ${describeValue(url)}`,
        );
      }
      return option as InspectOption;
    }
    if (typeof (option as { next?: unknown }).next === 'function') return option as InspectOption;
  }
  throw new RoleboxError(
    'invalid_argument',
    `inspect must be an observer, { url }, or 'stately', got ${describeValue(option)}`,
  );
}

function isSnapshotStore(value: unknown): value is SnapshotStore {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return ['loadAll', 'load', 'save', 'delete'].every(
    (method) => typeof candidate[method] === 'function',
  );
}

function isDispatcher(value: unknown): value is Dispatcher {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return ['dispatchRound', 'getTaskStatus', 'getRoundResult', 'cancelRound', 'onTerminated'].every(
    (method) => typeof candidate[method] === 'function',
  );
}

function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/**
 * Creates a rolebox: validates the function definitions as a set, builds the machines and
 * the root system actor (not started yet: call `await rb.start()`).
 *
 * Throws: `invalid_function_definition` for duplicate names or transitions to undefined
 * functions; `invalid_argument` for bad options or limits.
 */
export function createRolebox(options: RoleboxOptions = {}): Rolebox {
  return new Rolebox(options);
}
