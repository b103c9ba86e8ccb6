import { topStateOf } from '../base/state-value.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { FunctionCatalog } from '../function/catalog.js';
import { loopEffectStateOf, loopEffectsOf, type RoundSettings } from '../loop/effects.js';
import {
  checkSessionSnapshot,
  type SnapshotMachines,
  trustedSessionSnapshot,
} from '../persistence/check-snapshot.js';
import { readEnvelope } from '../persistence/envelope.js';
import type { MigrationRegistry } from '../persistence/migrations.js';
import type { Persister } from '../persistence/persister.js';
import { reconcileLoopRegistry, withoutSharedSystemIds } from '../persistence/restore.js';
import type { Clock, TimerHandle } from '../ports/clock.js';
import type { Dispatcher } from '../ports/dispatcher.js';
import type {
  ClaimResult,
  SessionLease,
  SnapshotStore,
  StoreOwner,
  WakeUp,
} from '../ports/snapshot-store.js';
import { claimedRecordIn, claimResultIn, lostIn, renewedIn } from '../ports/store-contract.js';
import type { CommandPath } from './command-path.js';
import type { LoopEffectRunner } from './loop-effect-runner.js';
import type { SystemAccess } from './system-access.js';
import { WakeUpScheduler } from './wake-ups.js';

/** How the runtime keeps sessions live, and for how long. */
export interface SessionRuntimeSettings {
  /** A live session with no command for this long is passivated (default 5 min; Infinity: never). */
  readonly idleMs: number;
  /** Above this many live sessions, the least recently used ones are passivated (default 10 000). */
  readonly maxLiveSessions: number;
  /** Passivate a session as soon as the step that left it waiting for a human is saved. */
  readonly passivateWhenWaiting: boolean;
  /** How long a claim on a session lasts before it must be renewed (default 30 s). */
  readonly leaseMs: number;
  /** Who this process is, for the claims it takes. */
  readonly owner: StoreOwner;
  readonly round: RoundSettings;
}

/**
 * How long a session activated with work to handle is kept live at most while the answers
 * its activation asked for are out (a dispatcher whose status check never answers must not
 * pin it for good).
 */
export const ACTIVATION_HOLD_LIMIT_MS = 30_000;

/** What made a passivated session live: an open, a command to it, or its wake-up (deadline, worker). */
export type ActivationTrigger = 'open' | 'command' | 'wake_up';

/** What activated or passivated a session, as host events say it. */
export type LifecycleEvent =
  | {
      readonly type: 'session_activated';
      readonly sessionId: string;
      readonly trigger: ActivationTrigger;
    }
  | {
      readonly type: 'session_passivated';
      readonly sessionId: string;
      readonly reason: PassivationReason;
    };

/**
 * Why a session was passivated: no command for `idleMs`, over `maxLiveSessions`, or left
 * waiting for a human once its step was saved (`passivateWhenWaiting`).
 */
export type PassivationReason = 'idle' | 'lru' | 'waiting';

/** What the runtime needs of its rolebox. */
export interface SessionRuntimeHost {
  readonly access: SystemAccess;
  /** Where the commands it sends go (a restore, a passivation) and loops are listened to. */
  readonly path: CommandPath;
  readonly runner: LoopEffectRunner;
  readonly persister: Persister | undefined;
  readonly store: SnapshotStore | undefined;
  readonly clock: Clock;
  readonly dispatcher: Dispatcher | undefined;
  /** What a stored session is checked against: the very machines that run, the functions. */
  readonly machines: SnapshotMachines;
  readonly catalog: FunctionCatalog;
  /** The host's migrations of stored records. */
  readonly migrations: MigrationRegistry;
  /** The effect runner: a session with a handler running stays live; a retry time wakes one. */
  readonly effects?: {
    busy(sessionId: string): boolean;
    wakeUpAt(sessionId: string): number | undefined;
  };
  /** The wait-deadline timers: a wait's deadline wakes a passivated session. */
  readonly waits?: { wakeUpAt(sessionId: string): number | undefined };
  /** Delivers a lifecycle host event. */
  emit(event: LifecycleEvent): void;
  /** Reports a failure nobody called for (a wake-up that could not activate its session). */
  report(error: Error, sessionId?: string): void;
}

/**
 * Sessions as virtual actors (DESIGN §7): a session exists in the store and is live only
 * while it has work. The runtime activates a passivated session on demand (a command, an
 * open, its wake-up), claiming it in the store first so that one process drives it;
 * passivates idle and least recently used ones (saved, stopped, dropped from the
 * directory, their wake-up armed); renews its claims; and re-arms what a loop needs on
 * every activation, which is all restart reconciliation takes.
 */
export class SessionRuntime {
  readonly #host: SessionRuntimeHost;
  readonly #settings: SessionRuntimeSettings;
  readonly #wakeUps: WakeUpScheduler;
  #sweep: TimerHandle | undefined;
  #renewal: TimerHandle | undefined;
  #stopped = false;
  /** Passivations in flight, with the use of the session each was started for. */
  readonly #passivating = new Map<
    string,
    { readonly usedAt: number; readonly done: Promise<boolean> }
  >();
  /**
   * Sessions just activated whose loop has not yet had the answers its activation asked for
   * (the status of the task it waits for, a deadline that has come), with when they were
   * activated: they are not passivated before, or the wake-up that activated one would be
   * undone and fire again at once, forever (LRU eviction and the idle sweep chasing it).
   */
  readonly #held = new Map<string, { readonly since: number }>();

  constructor(host: SessionRuntimeHost, settings: SessionRuntimeSettings) {
    this.#host = host;
    this.#settings = settings;
    this.#wakeUps = new WakeUpScheduler(host.clock, host.dispatcher, (sessionId, dueBy) =>
      this.#wakeUp(sessionId, dueBy),
    );
  }

  /** Passivation and claims need a store: without one every session stays live. */
  get #persistent(): boolean {
    return this.#host.store !== undefined;
  }

  /**
   * Starts the timers and arms every stored wake-up (the sessions stay passivated until
   * due). Returns: how many stored sessions wait for one.
   */
  async start(): Promise<number> {
    const { store } = this.#host;
    if (!store) return 0;
    const wakeUps = await store.loadWakeUps();
    for (const wakeUp of wakeUps) this.#wakeUps.schedule(wakeUp);
    this.#scheduleSweep();
    this.#scheduleRenewal();
    return wakeUps.length;
  }

  // ---- Activation: claim and load, decode and check, restore, reconcile the loop, announce ----

  /**
   * Makes a passivated session live at once (any call to it): claimed, read, checked,
   * restored, its loop re-armed. Returns false when the store has no such session.
   * Throws: `session_owned_elsewhere` naming the owner; `invalid_snapshot` /
   * `snapshot_too_new` for a record that cannot be restored; `session_passivated` for a
   * store that cannot answer at once (activate it with `openSession` first).
   */
  activateNow(sessionId: string, trigger: Exclude<ActivationTrigger, 'open'> = 'command'): boolean {
    return this.#activate(sessionId, trigger, this.#now());
  }

  /** {@link activateNow}, for a wake-up whose time `dueBy` has come (or a command: now). */
  #activate(
    sessionId: string,
    trigger: Exclude<ActivationTrigger, 'open'>,
    dueBy: number,
  ): boolean {
    const { store } = this.#host;
    if (!store || this.#stopped) return false;
    const immediate = store.immediate;
    if (!immediate) {
      throw new RoleboxError(
        'session_passivated',
        `session ${describeValue(sessionId)} is passivated and this store cannot load it at once; use await rb.openSession({ id: ${JSON.stringify(sessionId)}, ifOpen: 'reuse' })`,
        { sessionId },
      );
    }
    const { owner, leaseMs } = this.#settings;
    const stored = claimedRecordIn(immediate.claimAndLoad(sessionId, owner, leaseMs, this.#now()));
    if (stored === undefined) return false;
    const lease = this.#leaseOrThrow(sessionId, stored.claim);
    this.#restoreClaimed(sessionId, stored.data, lease, trigger, dueBy);
    return true;
  }

  /** Restores a stored session claimed with `lease` (async activation, e.g. openSession). */
  restoreClaimed(sessionId: string, stored: string, lease: SessionLease | undefined): void {
    this.#restoreClaimed(sessionId, stored, lease, 'open', this.#now());
  }

  /**
   * Activation once the record is claimed and read, top to bottom: restore it into the
   * system (decoded, checked, spawned); list it live (the directory, its wake-up cancelled);
   * reconcile its loop (re-arm what it waits for); hold it until its loop has the answers
   * that activation asked for; say `session_activated`; passivate the least recently used
   * sessions above the live limit. A record that cannot be restored releases its claim.
   */
  #restoreClaimed(
    sessionId: string,
    stored: string,
    lease: SessionLease | undefined,
    trigger: ActivationTrigger,
    dueBy: number,
  ): void {
    const { access } = this.#host;
    try {
      this.#restoreIntoSystem(sessionId, stored);
    } catch (error) {
      if (lease) void this.#host.store?.release([lease]).catch(() => {});
      throw error;
    }
    access.directory.add(sessionId, { lastUsedAt: this.#now(), ...(lease ? { lease } : {}) });
    this.#wakeUps.cancel(sessionId);
    this.reconcileLoop(sessionId);
    this.#holdUntilAnswered(sessionId, dueBy);
    this.#host.emit({ type: 'session_activated', sessionId, trigger });
    this.#enforceLimit(sessionId);
  }

  /**
   * Restores one stored session into the running system: decoded (`readEnvelope`: the
   * checksum, the envelope and migrations) and checked as a whole (`checkSessionSnapshot`)
   * first, unless its checksum shows it is exactly what this code wrote (then only what
   * depends on this process is checked: `trustedSessionSnapshot`), its
   * actors clashing with no live ones (or the whole root would be in error), then spawned
   * under its shard (`system.restore_session` on the command path), and the loop registry
   * brought in line with it. Throws a RoleboxError and restores nothing when it cannot.
   */
  #restoreIntoSystem(sessionId: string, stored: string): void {
    const { access, path, machines, catalog, migrations } = this.#host;
    const { envelope, trusted } = readEnvelope(sessionId, stored, migrations);
    const checked = trusted
      ? trustedSessionSnapshot(sessionId, envelope.snapshot, catalog)
      : checkSessionSnapshot(sessionId, envelope.snapshot, machines, catalog);
    const { clashes } = withoutSharedSystemIds([{ sessionId, ...checked }], {
      live: (systemId) =>
        access.actor(systemId) ? (access.sessionOf(systemId) ?? 'a live session') : undefined,
    });
    if (clashes[0]) throw clashes[0].error;
    path.dispatch({
      type: 'system.restore_session',
      sessionId,
      openedAt: checked.snapshot.context.createdAt,
      snapshot: checked.snapshot,
    });
    const before = access.loopRegistry();
    const loopRegistry = reconcileLoopRegistry(before, [{ sessionId, ...checked }]);
    if (loopRegistry !== before) path.dispatch({ type: 'system.set_loop_registry', loopRegistry });
  }

  /**
   * Listens to live session `sessionId`'s loop, if it has one, and asks for all it needs
   * as of its state: a loop just spawned, or restored by an activation (which is what
   * re-arms its deadlines and re-watches its task after a restart, SPEC §3.6).
   */
  reconcileLoop(sessionId: string): void {
    const { access, runner } = this.#host;
    const loop = access.liveLoopOf(sessionId);
    if (!loop) return;
    this.#host.path.listenToLoop(loop.loopId);
    const state = loopEffectStateOf(loop.snapshot.value);
    runner.need(
      sessionId,
      loop.loopId,
      loopEffectsOf(state, loop.snapshot.context, this.#settings.round),
    );
  }

  /**
   * Keeps a session just activated live until its loop has had the answers its activation
   * asked for (a task's status, the deadlines due by `dueBy`), and at most
   * {@link ACTIVATION_HOLD_LIMIT_MS}. A wake-up for nothing (its task still running, a
   * deadline moved) is answered by nothing: the hold ends all the same.
   */
  #holdUntilAnswered(sessionId: string, dueBy: number): void {
    const loop = this.#host.access.liveLoopOf(sessionId);
    if (!loop) return;
    const hold = { since: this.#now() };
    this.#held.set(sessionId, hold);
    void this.#host.runner.answered(loop.loopId, dueBy).then(() => {
      if (this.#held.get(sessionId) === hold) this.#held.delete(sessionId);
    });
  }

  /** Whether a session just activated still waits for the answers its activation asked for. */
  #isHeld(sessionId: string): boolean {
    const hold = this.#held.get(sessionId);
    if (!hold) return false;
    if (this.#now() - hold.since < ACTIVATION_HOLD_LIMIT_MS) return true;
    this.#held.delete(sessionId);
    return false;
  }

  // ---- Claims, opens and closes, wake-ups, passivation, renewal ----

  /**
   * Claims a session in the store for this process (before opening or restoring it).
   * With `wait`, waits (on the clock) until the owner releases it or its claim expires.
   * Returns: the lease, or undefined without a store.
   * Throws: `session_owned_elsewhere` naming the owner (pid and host).
   */
  async claim(sessionId: string, wait = false): Promise<SessionLease | undefined> {
    const { store } = this.#host;
    if (!store) return undefined;
    for (;;) {
      const result = claimResultIn(
        await store.claim(sessionId, this.#settings.owner, this.#settings.leaseMs, this.#now()),
      );
      if (result.ok || !wait) return this.#leaseOrThrow(sessionId, result);
      // The owner's claim runs out at `expiresAt` at the latest; check again then (or
      // sooner: it may release it first).
      const delay = Math.max(
        1,
        Math.min(result.expiresAt - this.#now(), this.#settings.leaseMs / 3),
      );
      await new Promise<void>((resolve) => this.#host.clock.setTimeout(resolve, delay));
      if (this.#stopped) throw new RoleboxError('stopped', 'this rolebox has been stopped');
    }
  }

  /** Registers a session just opened in this process (fresh, with its lease). */
  opened(sessionId: string, lease: SessionLease | undefined): void {
    this.#host.access.directory.add(sessionId, {
      lastUsedAt: this.#now(),
      ...(lease ? { lease } : {}),
    });
    this.#wakeUps.cancel(sessionId);
    this.#enforceLimit(sessionId);
  }

  /** Forgets a closed session: its directory entry, its wake-up, its claim. */
  closed(sessionId: string): void {
    const entry = this.#host.access.directory.get(sessionId);
    this.#host.access.directory.remove(sessionId);
    this.#held.delete(sessionId);
    this.#wakeUps.cancel(sessionId);
    if (entry?.lease) void this.#host.store?.release([entry.lease]).catch(() => {});
  }

  /** Why a passivated session must be woken, as of its live state. */
  wakeUpOf(sessionId: string): WakeUp {
    const loopWakeUp = this.#loopWakeUpOf(sessionId);
    // A pending effect with a handler wakes its session at its retry time (at once for one
    // that was running when its process died): the wake-up index is what survives a restart.
    // So does the deadline of a wait for the user.
    const times = [
      loopWakeUp.at,
      this.#host.effects?.wakeUpAt(sessionId),
      this.#host.waits?.wakeUpAt(sessionId),
    ].filter((at) => at !== undefined);
    if (times.length === 0) return loopWakeUp;
    return { ...loopWakeUp, at: Math.min(...times) };
  }

  /** Why a passivated session's loop must wake it. */
  #loopWakeUpOf(sessionId: string): WakeUp {
    const loop = this.#host.access.liveLoopOf(sessionId);
    if (!loop) return { sessionId };
    const effects = loopEffectsOf(
      loopEffectStateOf(loop.snapshot.value),
      loop.snapshot.context,
      this.#settings.round,
    );
    let at: number | undefined;
    let taskId: string | undefined;
    for (const effect of effects) {
      if (effect.kind === 'arm_deadline')
        at = at === undefined ? effect.at : Math.min(at, effect.at);
      else if (effect.kind === 'watch_task') taskId = effect.taskId;
      // A step in progress (preparing, dispatching, reading a result, cancelling): a
      // process that dies in it leaves work to do at once.
      else at = Math.min(at ?? Number.POSITIVE_INFINITY, this.#now());
    }
    return {
      sessionId,
      ...(at === undefined ? {} : { at }),
      ...(taskId === undefined ? {} : { taskId }),
    };
  }

  /** Sessions another process now owns (a fenced save was refused): dropped here at once. */
  drop(sessionIds: readonly string[]): void {
    for (const sessionId of sessionIds) {
      if (!this.#host.access.isLive(sessionId)) continue;
      this.#stopActors(sessionId);
      this.#host.report(
        new RoleboxError(
          'session_owned_elsewhere',
          `session ${describeValue(sessionId)} is owned by another process now: its save was refused and this process dropped it`,
          { sessionId },
        ),
        sessionId,
      );
    }
  }

  /**
   * Passivates a live session: saves it, stops its actors, drops it from the directory and
   * arms its wake-up. A session in the middle of something (a dispatch, a result being
   * read, an idle cycle) or used while it was being saved stays live.
   * Returns: whether it was passivated.
   */
  passivate(sessionId: string, reason: PassivationReason): Promise<boolean> {
    // The LRU limit (on every activation) and the idle sweep ask again for each session
    // until it is gone: asked again for the same use of it, the passivation in flight is
    // the answer. Starting another would save and flush it once more per ask, and with
    // thousands over the limit the flushes queue up faster than they complete.
    const usedAt = this.#host.access.directory.get(sessionId)?.lastUsedAt;
    const inFlight = this.#passivating.get(sessionId);
    if (inFlight && inFlight.usedAt === usedAt) return inFlight.done;
    const done = this.#passivate(sessionId, reason);
    if (usedAt !== undefined) {
      const { directory } = this.#host.access;
      directory.leaving(sessionId);
      const passivation = { usedAt, done };
      this.#passivating.set(sessionId, passivation);
      const forget = () => {
        if (this.#passivating.get(sessionId) !== passivation) return;
        this.#passivating.delete(sessionId);
        directory.stayed(sessionId);
      };
      done.then(forget, forget);
    }
    return done;
  }

  async #passivate(sessionId: string, reason: PassivationReason): Promise<boolean> {
    const { access, persister } = this.#host;
    const entry = access.directory.get(sessionId);
    if (!entry || !this.#persistent || !this.#mayPassivate(sessionId)) return false;
    const usedAt = entry.lastUsedAt;
    // A session passivated because its step was just saved needs no second save of the same.
    if (reason !== 'waiting' || persister?.isPending(sessionId)) {
      persister?.mark(sessionId);
      await persister?.flush();
    }
    if (this.#stopped || access.directory.get(sessionId)?.lastUsedAt !== usedAt) return false;
    // Busy again, or changed while it was being saved: it stays live.
    if (!this.#mayPassivate(sessionId) || persister?.isPending(sessionId)) return false;
    const wakeUp = this.wakeUpOf(sessionId);
    this.#stopActors(sessionId);
    this.#wakeUps.schedule(wakeUp);
    // Its lease goes: the persister keeps nothing of it (a passivated session costs no heap).
    persister?.forget(sessionId);
    // Said before the claim is released: its wake-up may activate it again meanwhile, and
    // host events must not say "passivated" after "activated" of a session that is live.
    this.#host.emit({ type: 'session_passivated', sessionId, reason });
    if (entry.lease) await this.#host.store?.release([entry.lease]);
    return true;
  }

  /**
   * After a save (the persister's `onSaved`): each of `sessionIds` that the step just saved
   * left waiting for a human, with nothing else in flight, is passivated
   * (`passivateWhenWaiting`). Only with a store that activates at once, so that a handle's
   * next call (the answer) activates it transparently.
   */
  saved(sessionIds: readonly string[]): void {
    const { persister, store } = this.#host;
    if (!this.#settings.passivateWhenWaiting || this.#stopped || !store?.immediate) return;
    for (const sessionId of sessionIds) {
      // Changed again since (a later step is pending): its own save decides.
      if (persister?.isPending(sessionId) || !this.#waitsForHuman(sessionId)) continue;
      void this.passivate(sessionId, 'waiting').catch((error: Error) =>
        this.#host.report(error, sessionId),
      );
    }
  }

  /**
   * Whether live session `sessionId` waits for a human and for nothing else: in
   * `waiting_user`, or not running with a gated function; no loop, no effect still to
   * settle (an activation delivers a host's effects again: the host would see them twice).
   */
  #waitsForHuman(sessionId: string): boolean {
    const { access } = this.#host;
    const session = access.sessionActor(sessionId)?.getSnapshot();
    if (!session || session.context.activeLoopId !== null) return false;
    if (session.context.pendingEffects.some((entry) => entry.status !== 'failed')) return false;
    const phase = topStateOf(session.value);
    if (phase === 'waiting_user') return true;
    if (phase === 'running') return false;
    return session.context.liveFunctions.some(
      (name) => access.readFunction(sessionId, name)?.phase === 'gated',
    );
  }

  /** Stops the timers and every wake-up; the claims are left to run out. */
  halt(): void {
    this.#stopped = true;
    if (this.#sweep !== undefined) this.#host.clock.clearTimeout(this.#sweep);
    if (this.#renewal !== undefined) this.#host.clock.clearTimeout(this.#renewal);
    this.#sweep = undefined;
    this.#renewal = undefined;
    this.#wakeUps.stop();
  }

  /**
   * Stops the timers and every wake-up, and releases this process's claims.
   * Returns: true when no claim is left (released, or none was held).
   */
  async stop(): Promise<boolean> {
    this.halt();
    const leases = [...this.#host.access.directory.entries()].flatMap(([, entry]) =>
      entry.lease ? [entry.lease] : [],
    );
    if (leases.length === 0 || !this.#host.store) return true;
    return this.#host.store.release(leases).then(
      () => true,
      () => false,
    );
  }

  /** How many passivated sessions wait for a wake-up here. */
  get pendingWakeUps(): number {
    return this.#wakeUps.size;
  }

  #wakeUp(sessionId: string, dueBy: number): void {
    if (this.#stopped || this.#host.access.isLive(sessionId)) return;
    try {
      this.#activate(sessionId, 'wake_up', dueBy);
    } catch (error) {
      // Owned by another live process: it does the work. Should it die, its claim runs out
      // at `expiresAt` (or sooner, once its pid is gone): look again then.
      if (error instanceof RoleboxError && error.code === 'session_owned_elsewhere') {
        const { expiresAt } = error.details;
        if (typeof expiresAt === 'number')
          this.#wakeUps.schedule({ sessionId, at: Math.max(expiresAt, this.#now() + 1) });
        return;
      }
      this.#host.report(error instanceof Error ? error : new Error(String(error)), sessionId);
    }
  }

  #stopActors(sessionId: string): void {
    const { access, runner } = this.#host;
    const loop = access.liveLoopOf(sessionId);
    if (loop) runner.drop(loop.loopId);
    this.#host.path.dispatch({ type: 'system.passivate_session', sessionId });
    access.directory.remove(sessionId);
    this.#held.delete(sessionId);
  }

  /**
   * Only a session waiting on the world (a worker, a deadline, a human) may be passivated,
   * and not one just activated before it has handled what it was activated for.
   */
  #mayPassivate(sessionId: string): boolean {
    if (this.#isHeld(sessionId) || this.#host.effects?.busy(sessionId)) return false;
    const session = this.#host.access.sessionActor(sessionId)?.getSnapshot();
    if (!session || session.context.idle !== null) return false;
    const loop = this.#host.access.liveLoopOf(sessionId);
    if (!loop) return true;
    const state = loopEffectStateOf(loop.snapshot.value);
    return state === 'waiting' || state === 'awaiting_worker';
  }

  #enforceLimit(justUsed: string): void {
    const { directory } = this.#host.access;
    if (!this.#persistent || directory.size <= this.#settings.maxLiveSessions) return;
    // Sessions already on their way out count as gone, and are not looked at again (nor
    // walked past: the directory lists the staying ones apart): on a burst of activations
    // thousands may be in flight, and going over them on every activation made each one
    // cost O(in flight).
    let excess = directory.size - this.#passivating.size - this.#settings.maxLiveSessions;
    if (excess <= 0) return;
    for (const sessionId of directory.staying()) {
      if (excess <= 0) break;
      if (
        sessionId === justUsed ||
        this.#passivating.has(sessionId) ||
        !this.#mayPassivate(sessionId)
      )
        continue;
      excess--;
      void this.passivate(sessionId, 'lru').catch((error: Error) =>
        this.#host.report(error, sessionId),
      );
    }
  }

  #scheduleSweep(): void {
    const { idleMs } = this.#settings;
    if (this.#stopped || !Number.isFinite(idleMs)) return;
    this.#sweep = this.#host.clock.setTimeout(
      () => {
        this.#sweep = undefined;
        const now = this.#now();
        for (const [sessionId, entry] of this.#host.access.directory.entries()) {
          // Least recently used first: the first one still in use ends the sweep.
          if (entry.lastUsedAt + idleMs > now) break;
          void this.passivate(sessionId, 'idle').catch((error: Error) =>
            this.#host.report(error, sessionId),
          );
        }
        this.#scheduleSweep();
      },
      Math.max(1, Math.min(idleMs, 60_000)),
    );
  }

  #scheduleRenewal(): void {
    if (this.#stopped) return;
    const { leaseMs, owner } = this.#settings;
    this.#renewal = this.#host.clock.setTimeout(
      () => {
        this.#renewal = undefined;
        const renewed = this.#renewAll(owner, leaseMs);
        // The next renewal is armed now when renewing was immediate (so that a clock that
        // jumps ahead renews on time), else once this one has been answered.
        if (this.#host.store?.immediate) this.#scheduleRenewal();
        else void renewed.finally(() => this.#scheduleRenewal());
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
  }

  async #renewAll(owner: StoreOwner, leaseMs: number): Promise<void> {
    const { store, access } = this.#host;
    if (!store) return;
    if (store.immediate) {
      // At once, at the moment the timer fires: a claim cannot run out between the timer
      // and an await (nor while a simulated clock jumps ahead).
      const leases = [...access.directory.entries()].flatMap(([, entry]) =>
        entry.lease ? [entry.lease] : [],
      );
      let lost: string[] = [];
      try {
        lost = lostIn(store.immediate.renew(leases, owner, leaseMs, this.#now()));
      } catch (error) {
        this.#host.report(error instanceof Error ? error : new Error(String(error)));
      }
      if (lost.length > 0) this.drop(lost);
      return;
    }
    const lost: string[] = [];
    for (const [sessionId, entry] of [...access.directory.entries()]) {
      if (!entry.lease) continue;
      try {
        if (!renewedIn(await store.renew(entry.lease, owner, leaseMs, this.#now())))
          lost.push(sessionId);
      } catch (error) {
        this.#host.report(error instanceof Error ? error : new Error(String(error)), sessionId);
      }
    }
    if (lost.length > 0) this.drop(lost);
  }

  #leaseOrThrow(sessionId: string, result: ClaimResult): SessionLease {
    if (result.ok) return { sessionId, token: result.token };
    const { owner, expiresAt } = result;
    throw new RoleboxError(
      'session_owned_elsewhere',
      `session ${describeValue(sessionId)} is driven by another process (pid ${owner.pid} on ${owner.host}) until ${new Date(expiresAt).toISOString()} unless it renews its claim; open it with { wait: true } to take over once it is free`,
      { sessionId, owner: { pid: owner.pid, host: owner.host }, expiresAt },
    );
  }

  #now(): number {
    return this.#host.clock.now();
  }
}
