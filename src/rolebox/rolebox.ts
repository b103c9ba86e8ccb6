import { type Actor, createActor } from 'xstate';
import type { SystemMachine } from '../../machines/system.machine.js';
import { SYSTEM_ACTOR_ID, sessionActorId } from '../base/actor-ids.js';
import { describeValue, RoleboxError } from '../errors.js';
import { loopEffectStateOf, loopEffectsOf } from '../loop/effects.js';
import { checkSessionSnapshot } from '../persistence/check-snapshot.js';
import { decodeEnvelope } from '../persistence/envelope.js';
import { JournalRecorder, type RecordedRun } from '../persistence/journal.js';
import { Persister } from '../persistence/persister.js';
import {
  buildSystemSnapshot,
  loadStoredSessions,
  type StartReport,
  withoutSharedSystemIds,
} from '../persistence/restore.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import { LoopEffectRunner } from '../runtime/loop-effect-runner.js';
import { ACCEPTANCE_MODES, type AcceptanceMode } from '../session/runtime-types.js';
import { buildMachines, type RoleboxMachines } from './build-machines.js';
import { type HostEventHandler, HostEventHub, toError } from './host-event-hub.js';
import type { HostEvent, HostEventType } from './host-events.js';
import { type Inspection, sessionOfInspectedActor, startInspection } from './inspection.js';
import { type ResolvedOptions, type RoleboxOptions, resolveRoleboxOptions } from './options.js';
import { connectPipeline } from './pipeline-bridge.js';
import { applyRemoteCommand } from './remote-command.js';
import { SessionHandle, type SessionHost } from './session-handle.js';
import { SystemAccess } from './system-access.js';

export type { HostEventHandler } from './host-event-hub.js';
export type { InspectOption, RoleboxOptions } from './options.js';

const SESSION_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * A running rolebox: one root system actor with its sessions, functions and loops, and the
 * typed API the host drives them with. It wires the parts together; the sessions' rules
 * live in the machines, the reads and commands go through one {@link SystemAccess}.
 */
export class Rolebox {
  readonly #options: ResolvedOptions;
  readonly #machines: RoleboxMachines;
  readonly #hub = new HostEventHub();
  readonly #access: SystemAccess;
  readonly #sessionHost: SessionHost;
  readonly #persister: Persister | undefined;
  #inspection: Inspection | undefined;
  /** Performs the loops' effects (dispatch, watch, collect, cancel, deadlines). */
  #runner: LoopEffectRunner | undefined;
  #recorder: JournalRecorder | undefined;
  #startReport: StartReport | undefined;
  #disconnectPipeline: (() => void) | undefined;
  /** Ids whose stored record is being read by an `openSession` in flight. */
  readonly #opening = new Set<string>();
  #state: 'created' | 'started' | 'halted' | 'stopped' = 'created';
  /** Why the rolebox halted: the first save that failed (SPEC §6). */
  #failure: RoleboxError | undefined;

  /** Internal: use {@link createRolebox}. */
  constructor(options: RoleboxOptions = {}) {
    const resolved = resolveRoleboxOptions(options);
    this.#options = resolved;
    this.#machines = buildMachines({
      catalog: resolved.catalog,
      conditions: resolved.conditions,
      limits: resolved.limits,
      clock: resolved.clock,
      ...(resolved.dispatcher ? { dispatcher: resolved.dispatcher } : {}),
    });
    this.#access = new SystemAccess(
      (events) => this.#hub.deliver(events),
      () => this.#requireStarted(),
    );
    const access = this.#access;
    this.#persister = resolved.store
      ? new Persister({
          store: resolved.store,
          clock: resolved.clock,
          debounceMs: resolved.saveDebounceMs,
          sessionSnapshot: (sessionId) => access.persistedSession(sessionId),
          systemSnapshot: () => ({ context: { loopRegistry: access.loopRegistry() } }),
          onError: (error, sessionIds) => this.#halt(error, sessionIds),
        })
      : undefined;
    this.#sessionHost = {
      access,
      catalog: resolved.catalog,
      conditions: resolved.conditions,
      limits: resolved.limits,
      hasDispatcher: resolved.dispatcher !== undefined,
      strictSessions: resolved.strictSessions,
      newId: (prefix) => resolved.ids.next(prefix),
      now: () => resolved.clock.now(),
      close: (sessionId) => {
        access.dispatch({ type: 'system.close_session', sessionId, at: resolved.clock.now() });
        this.#persister?.markDeleted(sessionId);
      },
    };
  }

  /** The root actor, for inspection and advanced use. Throws `not_started` before `start()`. */
  get system(): Actor<SystemMachine> {
    return this.#access.root;
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
    const { store, catalog, migrations } = this.#options;
    let snapshot: unknown;
    let report: StartReport = { restored: [], failed: [] };
    if (store) {
      const stored = await loadStoredSessions(store, this.#machines, catalog, migrations);
      if (stored.sessions.length > 0 || Object.keys(stored.loopRegistry.loops).length > 0) {
        snapshot = buildSystemSnapshot(stored.sessions, stored.loopRegistry);
      }
      report = {
        restored: stored.sessions.map((session) => session.sessionId),
        failed: stored.failed,
      };
    }
    this.#inspection = startInspection(this.#options.inspect, (actor, command) =>
      this.#inspectorCommand(actor, command),
    );
    const actor = createActor(this.#machines.system, {
      systemId: SYSTEM_ACTOR_ID,
      ...(this.#inspection.observer ? { inspect: this.#inspection.observer } : {}),
      ...(snapshot === undefined ? {} : { snapshot: snapshot as never }),
    });
    this.#access.attach(actor);
    const runner = new LoopEffectRunner({
      dispatcher: this.#options.dispatcher,
      clock: this.#options.clock,
      answer: (loopId, answer) => {
        if (this.#state === 'started') this.#access.answerLoop(loopId, answer);
      },
    });
    this.#runner = runner;
    this.#access.onLoopEffects((request) => runner.need(request.loopId, request.effects));
    actor.subscribe({
      error: (error) => this.#hub.deliver([{ type: 'error', error: toError(error) }]),
    });
    if (this.#persister) actor.system.inspect(this.#persister.observe);
    if (this.#options.journal) {
      this.#recorder = new JournalRecorder(this.#options.clock, () => actor.getPersistedSnapshot());
      actor.system.inspect(this.#recorder.observe);
    }
    this.#state = 'started';
    this.#startReport = report;
    actor.start();
    report = verifyRestored(actor, report);
    this.#startReport = report;
    // Restored loops ask for nothing by themselves (a restore enters no state): ask for
    // them what their state needs. This is restart reconciliation (SPEC §3.6).
    for (const sessionId of report.restored) this.#rearmLoop(sessionId);
    this.#recorder?.begin();
    for (const failure of report.failed)
      this.#hub.deliver([{ type: 'error', sessionId: failure.sessionId, error: failure.error }]);
    if (this.#options.pipeline) await this.#startPipeline(this.#options.pipeline);
    return report;
  }

  /** Connects the pipeline both ways, then lets it run what was enqueued before a restart. */
  async #startPipeline(pipeline: Pipeline): Promise<void> {
    pipeline.attachSystem({
      deliver: (sessionId, command) => applyRemoteCommand(this.session(sessionId), command),
    });
    const disconnectBridge = connectPipeline(
      {
        access: this.#access,
        on: (type, handler) => this.on(type, handler),
        onError: (error, sessionId) => this.#hub.deliver([{ type: 'error', sessionId, error }]),
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
      this.#hub.deliver([{ type: 'error', error: toError(error) }]);
    }
  }

  /**
   * The run recorded so far: the system's snapshot at start, and every event that entered
   * it from outside with the snapshot after it. Save it (`writeRunFile` from
   * `rolebox/testing`) and replay it in tests on later code.
   * Throws: `invalid_argument` unless created with `journal: true`; `not_started` before start.
   */
  recordRun(): RecordedRun {
    if (!this.#options.journal)
      throw new RoleboxError(
        'invalid_argument',
        'recordRun() needs createRolebox({ journal: true })',
      );
    if (!this.#recorder)
      throw new RoleboxError('not_started', 'call await rb.start() before recording');
    return this.#recorder.finish(this.#options.catalog.definitions(), this.#options.limits);
  }

  /**
   * Writes every pending change to the store now (changes are otherwise written after the
   * debounce window). Resolves when the store has them; a no-op without a store.
   * Throws: `store_failed` once a save has failed.
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
    this.#runner?.stop();
    this.#access.root.stop();
    this.#options.dispatcher?.close?.();
    this.#hub.deliver([{ type: 'error', error: failure }]);
  }

  /**
   * Opens a session and returns its handle: a new one, or, given the `id` of a stored
   * session, that session restored from the store.
   * Throws: `duplicate_session` when `id` is live (or being opened), `invalid_argument` for a
   * bad id or acceptance mode, `invalid_snapshot`/`snapshot_too_new` for a stored record that
   * cannot be restored, `not_started` before `start()`.
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
    const id = options.id ?? this.#options.ids.next('s_');
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
        { acceptanceMode },
      );
    }
    if (this.#access.isLive(id) || this.#opening.has(id))
      throw new RoleboxError('duplicate_session', `session ${describeValue(id)} is already open`, {
        id,
      });
    const { store } = this.#options;
    if (options.id !== undefined && store) {
      // Reading the store takes a tick: a second open of the same id meanwhile is refused
      // above instead of both resolving to one session.
      this.#opening.add(id);
      let stored: string | undefined;
      try {
        stored = await store.load(id);
      } finally {
        this.#opening.delete(id);
      }
      this.#requireStarted();
      if (stored !== undefined) return this.#restoreSession(id, stored);
    }
    this.#access.dispatch({
      type: 'system.open_session',
      sessionId: id,
      at: this.#options.clock.now(),
      ...(acceptanceMode ? { acceptanceMode } : {}),
    });
    return new SessionHandle(id, this.#sessionHost);
  }

  /** Restores one stored session into the running system (decoded and checked first). */
  #restoreSession(id: string, stored: string): SessionHandle {
    const envelope = decodeEnvelope(id, stored, this.#options.migrations);
    const checked = checkSessionSnapshot(
      id,
      envelope.snapshot,
      this.#machines,
      this.#options.catalog,
    );
    // Its actors must not clash with the live ones (a duplicate systemId would put the
    // whole root in error).
    const { clashes } = withoutSharedSystemIds([{ sessionId: id, ...checked }], {
      live: (systemId) => (this.#access.actor(systemId) ? 'a live session' : undefined),
    });
    if (clashes[0]) throw clashes[0].error;
    this.#access.dispatch({
      type: 'system.restore_session',
      sessionId: id,
      openedAt: checked.snapshot.context.createdAt,
      snapshot: checked.snapshot,
    });
    this.#rearmLoop(id);
    return new SessionHandle(id, this.#sessionHost);
  }

  /** Asks for the session's live loop (if any) what its state needs from the world. */
  #rearmLoop(sessionId: string): void {
    const loopId = this.#access.readSession(sessionId)?.context.activeLoopId;
    const loop = loopId ? this.#access.loopActor(loopId)?.getSnapshot() : undefined;
    if (!loopId || !loop) return;
    const { roundTimeoutMs, seedCharCap } = this.#options.limits;
    this.#runner?.need(
      loopId,
      loopEffectsOf(loopEffectStateOf(loop.value), loop.context, { roundTimeoutMs, seedCharCap }),
    );
  }

  /** The handle of a live session. Throws: `unknown_session`. */
  session(id: string): SessionHandle {
    this.#access.requireSession(id);
    return new SessionHandle(id, this.#sessionHost);
  }

  /** Ids of the live sessions, in the order they were opened. */
  sessions(): string[] {
    return this.#state === 'started' ? this.#access.sessionIds() : [];
  }

  /**
   * Subscribes to host events of one type (or `'*'` for all). Handlers run after the
   * command that caused the event has been fully processed, so they may call back in.
   * Returns: a function that unsubscribes.
   */
  on<T extends HostEventType>(type: T, handler: HostEventHandler<T>): () => void;
  on(type: '*', handler: (event: HostEvent) => void): () => void;
  on(type: string, handler: (event: never) => void): () => void {
    return this.#hub.on(type, handler);
  }

  /**
   * Writes what is pending, stops every actor and releases the dispatcher (its tasks keep
   * running). The rolebox cannot be started again; the store stays open (it is the host's).
   */
  async stop(): Promise<void> {
    if (this.#state === 'started' || this.#state === 'halted') {
      const { pipeline } = this.#options;
      if (pipeline) {
        // The runs in progress may still drive sessions: let them finish first.
        await pipeline.stop();
        this.#disconnectPipeline?.();
      }
      // A halted rolebox has nothing it could still write.
      if (this.#state === 'started') {
        try {
          await this.#persister?.flush();
        } finally {
          this.#persister?.dispose();
          this.#runner?.stop();
          this.#access.root.stop();
        }
      }
    }
    this.#options.dispatcher?.close?.();
    this.#inspection?.connection?.stop();
    this.#state = 'stopped';
  }

  /**
   * Runs a command from the inspector page, through the same validated API as the host
   * (a bad one throws and the page shows why).
   */
  #inspectorCommand(actor: string, command: Parameters<typeof applyRemoteCommand>[1]): void {
    const sessionId = sessionOfInspectedActor(actor, (systemId) =>
      this.#access.sessionOf(systemId),
    );
    applyRemoteCommand(this.session(sessionId), command);
    this.#hub.deliver([{ type: 'inspector_command', sessionId, actor, command: command as never }]);
  }

  #requireStarted(): void {
    if (this.#failure) throw this.#failure;
    if (this.#state === 'created')
      throw new RoleboxError('not_started', 'call await rb.start() before using the rolebox');
    if (this.#state === 'stopped')
      throw new RoleboxError('stopped', 'this rolebox has been stopped');
  }
}

/**
 * The report as it stands once the system runs: a session counts as restored only when its
 * actor is live. The records were checked whole, so a restore that still fails is a bug;
 * it is reported against every session it took down rather than listed as restored.
 */
function verifyRestored(actor: Actor<SystemMachine>, report: StartReport): StartReport {
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
