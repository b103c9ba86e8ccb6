import { type Actor, createActor } from 'xstate';
import type { SystemMachine } from '../../machines/system.machine.js';
import { checkSessionId, SYSTEM_ACTOR_ID } from '../base/actor-ids.js';
import { crashPoint } from '../base/crash-point.js';
import { currentHostName, currentPid } from '../base/host-process.js';
import { markOwnerStopped } from '../base/local-owners.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';
import { emptyLoopRegistry, type LoopRegistry } from '../loop/registry.js';
import {
  effectResultRecordId,
  encodeEffectResultRecord,
  readEffectResultRecord,
  type StoredEffectResult,
} from '../persistence/effect-result-record.js';
import { makeEnvelope } from '../persistence/envelope.js';
import {
  JournalRecorder,
  type RecordedRun,
  renamedSessionSnapshot,
  sessionJournal,
  sessionSnapshotIn,
} from '../persistence/journal.js';
import { Persister } from '../persistence/persister.js';
import {
  loadLoopRegistry,
  rootSnapshotWith,
  type StartReport,
  systemRecordOf,
} from '../persistence/restore.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import { projectRun } from '../pipeline/projection.js';
import type { StoreOwner } from '../ports/snapshot-store.js';
import { CommandPath } from '../runtime/command-path.js';
import { LoopEffectRunner } from '../runtime/loop-effect-runner.js';
import { sessionDeadlines } from '../runtime/session-deadlines.js';
import { SessionDirectory } from '../runtime/session-directory.js';
import { type RunnableHandler, SessionEffectRunner } from '../runtime/session-effect-runner.js';
import { SessionRuntime } from '../runtime/session-runtime.js';
import { SystemAccess } from '../runtime/system-access.js';
import { UnsavedResults } from '../runtime/unsaved-results.js';
import { WaitDeadlines } from '../runtime/wait-deadlines.js';
import { ACCEPTANCE_MODES, type AcceptanceMode } from '../session/runtime-types.js';
import { machinesFor, type RoleboxMachines } from './build-machines.js';
import { type HostEventHandler, HostEventHub, toError } from './host-event-hub.js';
import type { HostEvent, HostEventType } from './host-events.js';
import { type Inspection, sessionOfInspectedActor, startInspection } from './inspection.js';
import type {
  InspectorCommand,
  InspectorForkCommand,
  WebSocketInspector,
} from './inspector-connection.js';
import { type ResolvedOptions, type RoleboxOptions, resolveRoleboxOptions } from './options.js';
import { connectPipeline } from './pipeline-bridge.js';
import { applyRemoteCommand } from './remote-command.js';
import { effectResultProblem } from './runtime-event-problem.js';
import { SessionHandle, type SessionHost } from './session-handle.js';

export type { HostEventHandler } from './host-event-hub.js';
export type { InspectOption, RoleboxOptions, StatelyInspectOptions } from './options.js';

/** Options of {@link Rolebox.openSession}. */
export interface OpenSessionOptions {
  /** The session's id (default: a new one); the id of a stored session activates it. */
  readonly id?: string;
  /** How its workers' artifacts become facts (default `user_confirmed`). */
  readonly acceptanceMode?: AcceptanceMode;
  /** When the session is live already: `'refuse'` it (`duplicate_session`, the default) or `'reuse'` it. */
  readonly ifOpen?: 'refuse' | 'reuse';
  /** When another process drives the session: wait until it lets go, instead of refusing. */
  readonly wait?: boolean;
}

const OPEN_SESSION_OPTION_NAMES = Object.keys({
  id: true,
  acceptanceMode: true,
  ifOpen: true,
  wait: true,
} satisfies Record<keyof OpenSessionOptions, true>);

/** Options of {@link Rolebox.fork}. */
export interface ForkOptions {
  /**
   * Which of the source session's recorded events to fork after: a 0-based index into its
   * events in `rb.recordRun().journal` (the entries that name it or reach its actors; its
   * open is event 0).
   */
  readonly atEvent: number;
  /** The new session's id (default: a new one). */
  readonly as?: string;
}

const FORK_OPTION_NAMES = Object.keys({
  atEvent: true,
  as: true,
} satisfies Record<keyof ForkOptions, true>);

/**
 * A running rolebox: one root system actor with its sessions, functions and loops, and the
 * typed API the host drives them with. It wires the parts together; the sessions' rules
 * live in the machines, every command takes one `CommandPath` (check, dispatch, collect, mark,
 * perform, deliver) and the reads go through one `SystemAccess`.
 */
export class Rolebox {
  readonly #options: ResolvedOptions;
  readonly #machines: RoleboxMachines;
  readonly #hub = new HostEventHub();
  readonly #access: SystemAccess;
  /** The path every command takes: check, dispatch, collect, mark, perform, deliver. */
  readonly #path: CommandPath;
  readonly #sessionHost: SessionHost;
  readonly #persister: Persister | undefined;
  /** Handler results kept for their session's next save (see {@link UnsavedResults}). */
  readonly #unsavedResults = new UnsavedResults();
  #inspection: Inspection | undefined;
  /** Performs the loops' effects (dispatch, watch, collect, cancel, deadlines). */
  readonly #runner: LoopEffectRunner;
  /** Activation, passivation, claims and wake-ups of sessions. */
  readonly #runtime: SessionRuntime;
  /** Runs the sessions' pending effects with the host's handlers (`effects`). */
  readonly #effects: SessionEffectRunner<SessionHandle>;
  /** Fires the deadlines of waits for the user and of approval requests (SPEC §9). */
  readonly #waits: WaitDeadlines;
  /** Who this rolebox is in the store's claims. */
  readonly #owner: StoreOwner;
  #recorder: JournalRecorder | undefined;
  #startReport: StartReport | undefined;
  #disconnectPipeline: (() => void) | undefined;
  /** Ids whose stored record is being read by an `openSession` in flight. */
  readonly #opening = new Set<string>();
  #state: 'created' | 'started' | 'halted' | 'stopped' = 'created';
  /** Set by a clean `stop()` whose claims were all released (see `start`'s `stopped`). */
  #claimsReleased = false;
  /** Why the rolebox halted: the first save that failed (SPEC §6). */
  #failure: RoleboxError | undefined;

  /**
   * Internal: use {@link createRolebox}. `machines`: machines built before by
   * `machinesFor` from the same functions, conditions, limits and shards (a host that
   * creates a short-lived rolebox per step, as the Restate endpoint does, builds them once).
   */
  constructor(options: RoleboxOptions = {}, machines?: RoleboxMachines) {
    const resolved = resolveRoleboxOptions(options);
    this.#options = resolved;
    this.#machines = machines ?? machinesFor(resolved);
    // Unique per rolebox, whatever the id source (a seeded one repeats across instances):
    // claims and the stopped-owner list of this process tell roleboxes apart by it.
    this.#owner = {
      ownerId: `owner_${globalThis.crypto.randomUUID()}`,
      pid: currentPid(),
      host: currentHostName(),
    };
    const access = new SystemAccess(new SessionDirectory());
    this.#access = access;
    // Each step of a command's path hands on to one part of the runtime (src/runtime/command-path.ts).
    const path = new CommandPath(access, {
      requireUsable: () => this.#requireStarted(),
      activate: (sessionId) => this.#runtime.activateNow(sessionId),
      markUsed: (sessionIds) => this.#markUsed(sessionIds),
      markForSaving: (sessionIds) => this.#markForSaving(sessionIds),
      performLoopNeeds: (request) =>
        this.#runner.need(request.sessionId, request.loopId, request.effects),
      reconcileNewLoop: (sessionId) => this.#runtime.reconcileLoop(sessionId),
      reportToRegistry: (report) => access.reportToRegistry(report),
      markRegistryForSaving: () => this.#markRegistry(),
      deliver: (events) => this.#deliver(events),
    });
    this.#path = path;
    this.#effects = this.#effectRunner(resolved);
    this.#waits = this.#waitDeadlines(resolved);
    this.#runner = new LoopEffectRunner({
      dispatcher: resolved.dispatcher,
      clock: resolved.clock,
      answer: (sessionId, loopId, answer) => {
        if (this.#state === 'started') path.answerLoop(sessionId, loopId, answer);
      },
    });
    this.#persister = resolved.store
      ? new Persister({
          store: resolved.store,
          clock: resolved.clock,
          debounceMs: resolved.saveDebounceMs,
          // A handler's result the runner waits to see saved is stored in its entry.
          sessionSnapshot: (sessionId) =>
            this.#unsavedResults.patch(sessionId, access.persistedSession(sessionId)),
          systemSnapshot: () => systemRecordOf(access.loopRegistry()),
          wakeUpOf: (sessionId) => this.#runtime.wakeUpOf(sessionId),
          leaseOf: (sessionId) => access.directory.get(sessionId)?.lease,
          onRefused: (sessionIds) => this.#runtime.drop(sessionIds),
          onSaved: (sessionIds) => this.#runtime.saved(sessionIds),
          onError: (error, sessionIds) => this.#halt(error, sessionIds),
        })
      : undefined;
    this.#runtime = new SessionRuntime(
      {
        access,
        path,
        runner: this.#runner,
        persister: this.#persister,
        store: resolved.store,
        clock: resolved.clock,
        dispatcher: resolved.dispatcher,
        machines: this.#machines,
        catalog: resolved.catalog,
        migrations: resolved.migrations,
        emit: (event) => this.#deliver([event]),
        effects: this.#effects,
        waits: this.#waits,
        report: (error, sessionId) =>
          this.#hub.deliver([{ type: 'error', ...(sessionId ? { sessionId } : {}), error }]),
      },
      {
        idleMs: resolved.idleMs,
        maxLiveSessions: resolved.maxLiveSessions,
        passivateWhenWaiting: resolved.passivateWhenWaiting,
        leaseMs: resolved.leaseMs,
        owner: this.#owner,
        round: {
          roundTimeoutMs: resolved.limits.roundTimeoutMs,
          seedCharCap: resolved.limits.seedCharCap,
        },
      },
    );
    this.#sessionHost = {
      access,
      path,
      catalog: resolved.catalog,
      conditions: resolved.conditions,
      limits: resolved.limits,
      hasDispatcher: resolved.dispatcher !== undefined,
      strictSessions: resolved.strictSessions,
      newId: (prefix) => resolved.ids.next(prefix),
      now: () => resolved.clock.now(),
      close: (sessionId) => {
        this.#effects.dropSession(sessionId);
        this.#waits.drop(sessionId);
        path.dispatch({ type: 'system.close_session', sessionId, at: resolved.clock.now() });
        this.#runtime.closed(sessionId);
        this.#persister?.markDeleted(sessionId);
      },
    };
  }

  /** Delivers host events to the host's handlers, then lets the effect runner see them. */
  #deliver(events: readonly HostEvent[]): void {
    this.#hub.deliver(events);
    this.#effects.observe(events);
    for (const event of events)
      if (event.type === 'session_activated') this.#waits.reconcile(event.sessionId, true);
      else if (event.type === 'session_passivated') this.#waits.drop(event.sessionId);
  }

  /**
   * The wait-deadline timers of this rolebox: a live session's earliest deadline is its
   * wait's (`waitExpiresAt`) or that of an open approval request of a live function
   * (`expiresAt`); when it comes, the requests due expire (`session.expire_requests`) and
   * then the wait (`wait_expired`), each through the command path, as a host's `send` would.
   */
  #waitDeadlines(resolved: ResolvedOptions): WaitDeadlines {
    const access = this.#access;
    return new WaitDeadlines({
      clock: resolved.clock,
      deadlineOf: (sessionId) => sessionDeadlines(access, sessionId).next,
      expire: (sessionId, at) => {
        if (this.#state !== 'started') return;
        const { wait, requests } = sessionDeadlines(access, sessionId);
        if (requests !== undefined && requests <= at) {
          this.#path.dispatch({
            type: 'system.deliver',
            sessionId,
            command: { type: 'session.expire_requests', at },
          });
          // The expiry applied, not yet saved: a kill here must neither lose nor repeat it.
          crashPoint('request-expired');
        }
        if (wait !== undefined && wait <= at)
          this.#path.dispatch({
            type: 'system.deliver',
            sessionId,
            command: { type: 'wait_expired', at },
          });
      },
      report: (error, sessionId) => this.#hub.deliver([{ type: 'error', sessionId, error }]),
    });
  }

  /**
   * The effect runner of this rolebox: it reads a live session's outbox, sends it the
   * outbox commands through the command path, and waits for the persister before each step.
   */
  #effectRunner(resolved: ResolvedOptions): SessionEffectRunner<SessionHandle> {
    const access = this.#access;
    return new SessionEffectRunner<SessionHandle>({
      clock: resolved.clock,
      retry: resolved.effectRetry,
      handlerFor: (type) => resolved.effects[type] as RunnableHandler<SessionHandle> | undefined,
      pendingOf: (sessionId) =>
        access.isLive(sessionId)
          ? access.sessionActor(sessionId)?.getSnapshot().context.pendingEffects
          : undefined,
      handleOf: (sessionId) => this.session(sessionId),
      refusalOf: (sessionId, effectId, events) => {
        const session = access.readSession(sessionId);
        return session
          ? effectResultProblem(session, effectId, events, resolved.clock.now())
          : undefined;
      },
      send: (sessionId, command) => {
        if (this.#state === 'started')
          this.#path.dispatch({ type: 'system.deliver', sessionId, command });
      },
      saved: () => this.#persister?.flush() ?? Promise.resolve(),
      ...(resolved.store
        ? {
            results: {
              save: (sessionId, effectId, result) => this.#saveResult(sessionId, effectId, result),
              stored: async (sessionId, effectId) => {
                const id = effectResultRecordId(sessionId);
                const text = await resolved.store?.load(id);
                return text === undefined ? undefined : readEffectResultRecord(id, text, effectId);
              },
            },
          }
        : {}),
      deliver: (event) => this.#hub.deliver([event]),
      report: (error, sessionId) => this.#hub.deliver([{ type: 'error', sessionId, error }]),
    });
  }

  /**
   * Saves a handler's result before it is applied. With nothing else of the session waiting
   * to be saved, as a small record of its own (what a host doing it by hand would write);
   * else in the effect's entry of the session's record, saved with the rest of it (an
   * artifact the handler wrote is in the same transaction as the result naming it). The
   * record is written without a lease: a process that lost the session could only write a
   * result under one of its effect ids (its handler's idempotency key), and the owner reads
   * it only for an effect still pending when it activated the session.
   */
  async #saveResult(sessionId: string, effectId: string, result: StoredEffectResult) {
    const persister = this.#persister;
    if (!persister) return;
    if (!persister.isPending(sessionId)) {
      const record = {
        id: effectResultRecordId(sessionId),
        data: encodeEffectResultRecord(effectId, result),
      };
      await persister.flush([record]);
      return;
    }
    this.#unsavedResults.keep(sessionId, effectId, result);
    try {
      await persister.flush();
    } finally {
      this.#unsavedResults.drop(sessionId, effectId);
    }
  }

  /** The root actor, for inspection and advanced use. Throws `not_started` before `start()`. */
  get system(): Actor<SystemMachine> {
    return this.#access.root;
  }

  /**
   * Starts the actor system. Nothing is restored yet: a stored session is activated when it
   * is used (a command, `openSession({ id })`) or woken (its deadline, its worker's end),
   * which reconciles its loop with the dispatcher and re-arms its deadlines. With a store,
   * `start()` reads the loop registry and arms the stored wake-ups only, whatever the
   * number of stored sessions. A system record that cannot be read is reported (in the
   * result and as an `error` host event).
   * Call once, before opening sessions.
   * Throws: `stopped` after `stop()`; `store_failed` when the store cannot be read.
   */
  async start(): Promise<StartReport> {
    if (this.#state === 'stopped')
      throw new RoleboxError('stopped', 'this rolebox has been stopped; create a new one');
    if (this.#startReport) return this.#startReport;
    const { store, migrations, shards } = this.#options;
    let loopRegistry: LoopRegistry = emptyLoopRegistry();
    let failed: StartReport['failed'] = [];
    if (store) ({ loopRegistry, failed } = await loadLoopRegistry(store, migrations));
    this.#inspection = startInspection(this.#options.inspect, (actor, command) =>
      this.#inspectorCommand(actor, command),
    );
    const actor = createActor(this.#machines.system, {
      systemId: SYSTEM_ACTOR_ID,
      ...(this.#inspection.observer ? { inspect: this.#inspection.observer } : {}),
      snapshot: rootSnapshotWith(loopRegistry, shards) as never,
    });
    this.#path.attach(actor);
    // Once the actor system has stopped (rb.stop, a halt, a root in error, or a test that
    // stops it dead) this rolebox drives nothing: its claims stop being renewed and, in
    // this process, count as free at once (as a dead process's would).
    const stopped = () => {
      // A clean stop released every claim: nothing is left to free, and remembering every
      // owner that ever stopped would grow without bound for short-lived roleboxes.
      if (!this.#claimsReleased) markOwnerStopped(this.#owner.ownerId);
      this.#runtime.halt();
      this.#effects.stop();
      this.#waits.stop();
    };
    actor.subscribe({
      error: (error) => {
        stopped();
        this.#hub.deliver([{ type: 'error', error: toError(error) }]);
      },
      complete: stopped,
    });
    if (this.#options.journal) {
      const connection = this.#inspection.connection;
      this.#recorder = new JournalRecorder(
        this.#options.clock,
        () => actor.getPersistedSnapshot(),
        connection
          ? (target, event, actor) => this.#markJournalEntry(connection, target, event, actor)
          : undefined,
      );
      actor.system.inspect(this.#recorder.observe);
    }
    this.#state = 'started';
    let report: StartReport = { restored: [], wakeUps: 0, failed };
    this.#startReport = report;
    actor.start();
    this.#recorder?.begin();
    for (const failure of failed)
      this.#hub.deliver([{ type: 'error', sessionId: failure.sessionId, error: failure.error }]);
    report = { ...report, wakeUps: await this.#runtime.start() };
    this.#startReport = report;
    if (this.#options.pipeline) await this.#startPipeline(this.#options.pipeline);
    return report;
  }

  /** After a command: the live sessions it was sent to or that emitted were used now (idle clock). */
  #markUsed(sessionIds: ReadonlySet<string>): void {
    const now = this.#options.clock.now();
    for (const sessionId of sessionIds)
      if (this.#access.isLive(sessionId)) this.#access.directory.touch(sessionId, now);
  }

  /** After a command: the live sessions it was sent to or that emitted changed (to be saved). */
  #markForSaving(sessionIds: ReadonlySet<string>): void {
    for (const sessionId of sessionIds) {
      if (this.#access.isLive(sessionId)) this.#persister?.mark(sessionId);
      // A step that began, moved or ended a wait for the user moves its deadline's timer.
      this.#waits.reconcile(sessionId);
    }
    this.#markRegistry();
  }

  /** Marks the system record (the loop registry) for saving, if it changed. */
  #markRegistry(): void {
    if (this.#persister && this.#access.attached)
      this.#persister.markRegistry(this.#access.loopRegistry());
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
    // An inspected rolebox shows its pipeline's runs in the page, each as its trace.
    const connection = this.#inspection?.connection;
    const offRuns = connection
      ? pipeline.on('run', (run) =>
          connection.sendTrace(run.runId, {
            ...projectRun(run),
            handlerCalls: run.trace.handlerCalls,
          }),
        )
      : undefined;
    this.#disconnectPipeline = () => {
      offRuns?.();
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
   * Throws: `store_failed` once a save has failed; `invalid_argument` once the store
   * answered a save in a shape the port does not have (a store written for the 0.1 port).
   */
  async flush(): Promise<void> {
    if (this.#failure) throw this.#failure;
    try {
      await this.#persister?.flush();
    } catch (error) {
      // The save failed and halted the rolebox: the caller gets the halt's RoleboxError.
      throw this.#failure ?? error;
    }
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
    // A store that breaks the port (its save answered the 0.1 shape) is the host's to fix:
    // said as such, with how, rather than as a failing backend.
    const failure = isRoleboxError(cause, 'invalid_argument')
      ? new RoleboxError(
          'invalid_argument',
          `${cause.message}; rolebox stopped driving sessions, since it cannot tell what the store kept`,
          { ...cause.details, sessionIds: [...sessionIds] },
        )
      : new RoleboxError(
          'store_failed',
          `the snapshot store could not save ${what}: ${cause.message}; rolebox stopped driving sessions so that nothing runs ahead of what is stored`,
          { sessionIds: [...sessionIds], cause: cause.message },
        );
    this.#failure = failure;
    this.#state = 'halted';
    this.#persister?.dispose();
    this.#runner.stop();
    void this.#runtime.stop();
    this.#access.root.stop();
    this.#options.dispatcher?.close?.();
    this.#hub.deliver([{ type: 'error', error: failure }]);
  }

  /**
   * Opens a session and returns its handle: a new one, or, given the `id` of a stored
   * session, that session activated from the store. `ifOpen: 'reuse'` makes it a get-or-open:
   * a session already live is returned as it is (the default, `'refuse'`, is
   * `duplicate_session`). A session another process drives is refused, or, with
   * `wait: true`, waited for until that process releases it or its claim runs out.
   * Throws: `duplicate_session` when `id` is live when called (or being opened) and not reused,
   * `session_owned_elsewhere` naming the owner, `invalid_argument` for a bad id or option,
   * `invalid_snapshot`/`snapshot_too_new` for a stored record that cannot be restored,
   * `not_started` before `start()`.
   */
  async openSession(options: OpenSessionOptions = {}): Promise<SessionHandle> {
    this.#requireStarted();
    checkOptionNames(options, OPEN_SESSION_OPTION_NAMES, 'openSession options');
    const id = options.id ?? this.#options.ids.next('s_');
    checkSessionId(id);
    const { acceptanceMode, ifOpen = 'refuse', wait = false } = options;
    if (acceptanceMode !== undefined && !ACCEPTANCE_MODES.includes(acceptanceMode)) {
      throw new RoleboxError(
        'invalid_argument',
        `acceptanceMode must be one of ${ACCEPTANCE_MODES.join(', ')}, got ${describeValue(acceptanceMode)}`,
        { acceptanceMode },
      );
    }
    if (ifOpen !== 'refuse' && ifOpen !== 'reuse')
      throw new RoleboxError(
        'invalid_argument',
        `ifOpen must be "refuse" or "reuse", got ${describeValue(ifOpen)}`,
      );
    if (typeof wait !== 'boolean')
      throw new RoleboxError(
        'invalid_argument',
        `wait must be a boolean, got ${describeValue(wait)}`,
      );
    const reuse = () => {
      this.#access.directory.touch(id, this.#options.clock.now());
      return new SessionHandle(id, this.#sessionHost);
    };
    if (this.#access.isLive(id) || this.#opening.has(id)) {
      if (ifOpen === 'reuse' && this.#access.isLive(id)) return reuse();
      throw new RoleboxError('duplicate_session', `session ${describeValue(id)} is already open`, {
        id,
      });
    }
    const { store } = this.#options;
    // Claiming and reading the store take a tick: a second open of the same id meanwhile is
    // refused above instead of both resolving to one session.
    this.#opening.add(id);
    try {
      const lease = await this.#runtime.claim(id, wait);
      this.#requireStarted();
      const stored = options.id !== undefined && store ? await store.load(id) : undefined;
      this.#requireStarted();
      // Activated meanwhile by this rolebox itself (its wake-up, due when the owner's claim
      // runs out, just as a waiting open looks again; a command to it): it is the session
      // asked for, not a second open of it (those are refused above).
      if (this.#access.isLive(id)) return reuse();
      if (stored !== undefined) {
        this.#runtime.restoreClaimed(id, stored, lease);
        return new SessionHandle(id, this.#sessionHost);
      }
      // In the directory first: the open is a command to a live session (saved with it).
      this.#runtime.opened(id, lease);
      this.#path.dispatch({
        type: 'system.open_session',
        sessionId: id,
        at: this.#options.clock.now(),
        ...(acceptanceMode ? { acceptanceMode } : {}),
        // Drawn from the id source (recorded with the command, so a replay opens the same
        // incarnation): effect ids carry it, and never repeat when this id is opened again.
        nonce: this.#options.ids.next(),
      });
      return new SessionHandle(id, this.#sessionHost);
    } finally {
      this.#opening.delete(id);
    }
  }

  /**
   * Opens a new session from the past: the recorded snapshot of session `sessionId` after
   * its event `atEvent` (0-based, counted among that session's entries of
   * `rb.recordRun().journal`), with its live and retired functions, their state and kv, and
   * its artifacts, under the id `as`. The fork is a normal live session (driven, saved,
   * journaled like any other: its first recorded event spawns it from that snapshot, so a
   * replay re-creates it and it can be forked in turn); the source session is not touched,
   * live or not. Activating it emits `session_activated` (trigger `open`). A snapshot with a loop in flight is refused: forking it would dispatch a worker
   * round a second time. Needs `createRolebox({ journal: true })`.
   * Throws: `invalid_argument` without a journal, for a bad option (an unknown name, an
   * `atEvent` that is not an integer in range, a bad `as` id), or when the session has a
   * loop in flight (or was closed) after that event; `unknown_session` when the journal has
   * no event of `sessionId`; `duplicate_session` when `as` is live, being opened or stored;
   * `not_started` before `start()`.
   */
  async fork(sessionId: string, options: ForkOptions): Promise<SessionHandle> {
    this.#requireStarted();
    if (!this.#options.journal)
      throw new RoleboxError(
        'invalid_argument',
        `fork(${describeValue(sessionId)}) needs createRolebox({ journal: true })`,
        { sessionId },
      );
    checkOptionNames(options, FORK_OPTION_NAMES, 'fork options');
    const events = typeof sessionId === 'string' ? sessionJournal(this.recordRun(), sessionId) : [];
    if (events.length === 0)
      throw new RoleboxError(
        'unknown_session',
        `session ${describeValue(sessionId)} has no recorded event in this rolebox's journal`,
        { sessionId },
      );
    const { atEvent } = options;
    if (
      typeof atEvent !== 'number' ||
      !Number.isInteger(atEvent) ||
      atEvent < 0 ||
      atEvent >= events.length
    )
      throw new RoleboxError(
        'invalid_argument',
        `atEvent must be an integer from 0 to ${events.length - 1} (session ${describeValue(sessionId)} has ${events.length} recorded event(s)), got ${describeValue(atEvent)}`,
        { sessionId, atEvent },
      );
    const id = options.as ?? this.#options.ids.next('s_');
    checkSessionId(id);
    const past = sessionSnapshotIn(events[atEvent]?.entry.after, sessionId) as
      | { context: { activeLoopId: string | null } }
      | undefined;
    if (past === undefined)
      throw new RoleboxError(
        'invalid_argument',
        `session ${describeValue(sessionId)} is closed after its event ${atEvent}; fork it at an earlier event`,
        { sessionId, atEvent },
      );
    if (past.context.activeLoopId !== null)
      throw new RoleboxError(
        'invalid_argument',
        `session ${describeValue(sessionId)} has loop ${describeValue(past.context.activeLoopId)} in flight after its event ${atEvent}; a fork would dispatch its rounds a second time, so fork it before the loop starts or after it ends`,
        { sessionId, atEvent, loopId: past.context.activeLoopId },
      );
    const duplicate = (why: string) =>
      new RoleboxError('duplicate_session', `session ${describeValue(id)} is already ${why}`, {
        id,
      });
    if (this.#access.isLive(id) || this.#opening.has(id)) throw duplicate('open');
    const snapshot = renamedSessionSnapshot(past, id, this.#options.ids.next());
    const { store } = this.#options;
    this.#opening.add(id);
    try {
      const lease = await this.#runtime.claim(id);
      this.#requireStarted();
      // A passivated session keeps its id: a fork must not overwrite its record.
      if (store && (await store.load(id)) !== undefined) {
        if (lease) void store.release([lease]).catch(() => {});
        throw duplicate('stored');
      }
      this.#requireStarted();
      if (this.#access.isLive(id)) throw duplicate('open');
      const record = makeEnvelope(id, snapshot, this.#options.clock.now());
      this.#runtime.restoreClaimed(id, JSON.stringify(record), lease);
      this.#markUsed(new Set([id]));
      this.#markForSaving(new Set([id]));
      return new SessionHandle(id, this.#sessionHost);
    } finally {
      this.#opening.delete(id);
    }
  }

  /** The handle of a session, activating it when it is passivated. Throws: `unknown_session`. */
  session(id: string): SessionHandle {
    this.#path.requireSession(id);
    return new SessionHandle(id, this.#sessionHost);
  }

  /**
   * Ids of the sessions live in this process, least recently used first (the next to be
   * passivated first). A passivated session is not listed: it lives in the store.
   */
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
          this.#runner.stop();
          this.#effects.stop();
          this.#waits.stop();
          this.#claimsReleased = await this.#runtime.stop();
          // The sessions first, by their shards: stopping the root with its sessions in it
          // costs O(live²) in XState (see the shard machine's stopAll). A rolebox halted by
          // a failed save has no running actors left.
          if (this.#state === 'started') this.#path.dispatch({ type: 'system.stop_sessions' });
          this.#access.root.stop();
        }
      }
    }
    this.#options.dispatcher?.close?.();
    await this.#inspection?.connection?.stop();
    await this.#inspection?.viewers?.stop();
    this.#state = 'stopped';
  }

  /**
   * Runs a command from the inspector page, through the same validated API as the host
   * (a bad one throws and the page shows why).
   */
  #inspectorCommand(actor: string, command: InspectorCommand): unknown {
    const told = (sessionId: string, refusal?: Error): HostEvent => ({
      type: 'inspector_command',
      sessionId,
      actor,
      command,
      ...(refusal ? { refused: refusal.message } : {}),
    });
    if ((command as { kind?: unknown } | null)?.kind === 'fork') {
      // A session's past can be forked after it closed: its actor names it.
      const sessionId = actor.startsWith('session:')
        ? actor.slice('session:'.length)
        : sessionOfInspectedActor(actor, (systemId) => this.#access.sessionOf(systemId));
      const { kind: _fork, ...options } = command as InspectorForkCommand;
      // Told once the fork is made (or refused): the new session is what it caused.
      return this.fork(sessionId, options).then(
        (fork) => {
          this.#hub.deliver([told(sessionId)]);
          return fork;
        },
        (error: unknown) => {
          this.#hub.deliver([told(sessionId, toError(error))]);
          throw error;
        },
      );
    }
    const sessionId = sessionOfInspectedActor(actor, (systemId) =>
      this.#access.sessionOf(systemId),
    );
    // Told first, then what it caused (a host handler of it sees the command done).
    this.#hub.announcing(
      (refusal) => told(sessionId, refusal),
      () => applyRemoteCommand(this.session(sessionId), command),
    );
  }

  /** Each session's count of journal entries so far, for the inspector's "fork here" marks. */
  readonly #journalCounts = new Map<string, number>();

  /**
   * Tells the inspector which session a journal entry belongs to and its index there: host
   * commands to the root or a shard name their session; an actor's own events are its session's.
   */
  #markJournalEntry(
    connection: WebSocketInspector,
    target: string,
    event: Record<string, unknown>,
    actor: string | undefined,
  ): void {
    const named =
      event.sessionId ?? (event.input as { sessionId?: unknown } | undefined)?.sessionId;
    const sessionId =
      target === SYSTEM_ACTOR_ID || target.startsWith('shard:')
        ? named
        : this.#access.sessionOf(target);
    if (typeof sessionId !== 'string' || actor === undefined) return;
    const index = this.#journalCounts.get(sessionId) ?? 0;
    this.#journalCounts.set(sessionId, index + 1);
    connection.markJournal(sessionId, index, actor, String(event.type));
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
 * Creates a rolebox: validates the function definitions as a set, builds the machines and
 * the root system actor (not started yet: call `await rb.start()`).
 *
 * Throws: `invalid_function_definition` for duplicate names or transitions to undefined
 * functions; `invalid_argument` for bad options or limits.
 */
export function createRolebox(options: RoleboxOptions = {}): Rolebox {
  return new Rolebox(options);
}
