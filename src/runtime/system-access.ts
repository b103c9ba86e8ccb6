import type { Actor, ActorRefFrom, AnyActorRef, SnapshotFrom } from 'xstate';
import type { FunctionMachine } from '../../machines/function.machine.js';
import { type LoopMachine, loopStateOf } from '../../machines/loop.machine.js';
import type { SessionMachine } from '../../machines/session.machine.js';
import type { ShardMachine } from '../../machines/shard.machine.js';
import type { SystemMachine } from '../../machines/system.machine.js';
import {
  artifactsActorId,
  functionActorId,
  loopActorId,
  parseActorId,
  sessionActorId,
} from '../base/actor-ids.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { FunctionEvent } from '../function/machine-types.js';
import { type FunctionPhase, functionPhaseOf } from '../function/phase.js';
import type { LoopAnswer } from '../loop/machine-types.js';
import type { LoopRegistry } from '../loop/registry.js';
import type { LoopState } from '../loop/types.js';
import type { ArtifactRecord } from '../session/artifact.js';
import type { artifactStoreLogic } from '../session/artifact-store.js';
import type { EmittedEvent as HostEvent, SystemEmitted } from '../session/emitted.js';
import type { SessionEvent } from '../session/machine-types.js';
import type { SystemEvent } from '../system/machine-types.js';
import { shardActorId, shardIndexOf } from '../system/shards.js';
import type { CommandPath } from './command-path.js';
import type { SessionDirectory } from './session-directory.js';

/** A live session actor's snapshot. */
export type SessionSnapshot = SnapshotFrom<SessionMachine>;
/** A live function actor's snapshot. */
export type FunctionSnapshot = SnapshotFrom<FunctionMachine>;
/** A live loop actor's snapshot. */
export type LoopSnapshot = SnapshotFrom<LoopMachine>;

/** What the facade reads of a live session: its state, its artifacts, what it would accept. */
export interface SessionRead {
  /** The machine's state value (`'running'`, `{ waiting_user: 'input' }`, …). */
  readonly value: SessionSnapshot['value'];
  readonly context: SessionSnapshot['context'];
  readonly artifacts: readonly ArtifactRecord[];
  /** Whether the machine would take a transition on this event. */
  can(event: SessionEvent): boolean;
}

/** A live function: its phase and context, and what it would accept. */
export interface FunctionRead {
  readonly phase: FunctionPhase;
  readonly context: FunctionSnapshot['context'];
  /** Whether the function machine would take a transition on this event. */
  can(event: FunctionEvent): boolean;
}

/**
 * The one way into the running actor system: it checks and routes the commands (the first
 * two steps of a command's path; the rest, from collecting what the machines emitted to
 * delivering the host events, is {@link CommandPath.run}) and reads the actors' snapshots,
 * typed by their machines. Every cast
 * from XState's untyped `system.get()` lives here; the session handle, the artifacts
 * handle, the pipeline bridge and the persister each use a slice of it. Which sessions are
 * live is the {@link SessionDirectory}'s answer; a read of one that is not live activates it.
 */
export class SystemAccess {
  #actor: Actor<SystemMachine> | undefined;
  /** The loop actors listened to (a loop emits its needs and notes itself). */
  readonly #listenedLoops = new WeakSet<AnyActorRef>();
  /** What every command goes through once it is routed here: collect, perform, mark, deliver. */
  readonly #path: CommandPath;
  /** The live sessions. */
  readonly directory: SessionDirectory;

  constructor(path: CommandPath, directory: SessionDirectory) {
    this.#path = path;
    this.directory = directory;
  }

  /** Starts reading and driving `actor` (not started yet): what it emits reaches the host. */
  attach(actor: Actor<SystemMachine>): void {
    this.#actor = actor;
    actor.on('*', (event) => this.#path.collect(event as SystemEmitted));
  }

  /** The root actor. Throws: `not_started` before one is attached. */
  get root(): Actor<SystemMachine> {
    if (!this.#actor)
      throw new RoleboxError(
        'not_started',
        'the actor system exists once await rb.start() has run',
      );
    return this.#actor;
  }

  /** True once an actor is attached. */
  get attached(): boolean {
    return this.#actor !== undefined;
  }

  /**
   * A command's path, steps 1 and 2: check (usable, live or activated), then route it to
   * the actor that takes it; {@link CommandPath.run} does the rest. Returns the host events
   * it caused (delivered already).
   */
  dispatch(event: SystemEvent): readonly HostEvent[] {
    this.#path.requireUsable();
    // A command to a passivated session activates it first: it behaves as a live one.
    if (
      (event.type === 'system.deliver' ||
        event.type === 'system.start_loop' ||
        event.type === 'system.close_session') &&
      !this.isLive(event.sessionId) &&
      !this.#path.activate(event.sessionId)
    )
      // Never routed to an actor that is not there: XState would put the root (and with it
      // every session of this process) into `error` (issue 22). The handles refuse first;
      // this is the floor under every other caller.
      throw new RoleboxError(
        'unknown_session',
        `no open session ${describeValue(event.sessionId)}`,
        { sessionId: event.sessionId },
      );
    if ('sessionId' in event) this.#path.noteSession(event.sessionId);
    // A command for a live session goes straight to its actor: through the root and its
    // shard it would cost two more XState steps and change nothing (they only route it).
    if (event.type === 'system.deliver') {
      const session = this.sessionActor(event.sessionId);
      if (session) return this.#path.run(() => session.send(event.command));
    }
    // A restore goes straight to the session's shard for the same reason: the root only
    // routes it (it keeps its handler for recorded runs that journaled it there).
    const caused =
      event.type === 'system.restore_session'
        ? this.#restoreUnderShard(event)
        : this.#path.run(() => this.root.send(event));
    // A session just spawned: what it tells the host, it emits itself.
    if (event.type === 'system.open_session' || event.type === 'system.restore_session')
      this.actor(sessionActorId(event.sessionId))?.on('*', (emitted) =>
        this.#path.collect(emitted as SystemEmitted),
      );
    return caused;
  }

  /**
   * Sends the runtime's answer to a loop of session `sessionId`, activating the session if
   * it is passivated; what it causes is caught and delivered like any command.
   * Returns: false when no such loop is live.
   */
  answerLoop(sessionId: string, loopId: string, answer: LoopAnswer): boolean {
    if (!this.isLive(sessionId) && !this.#path.activate(sessionId)) return false;
    const ref = this.loopActor(loopId);
    if (!ref) return false;
    this.#path.noteSession(sessionId);
    this.#path.run(() => ref.send(answer));
    return true;
  }

  /**
   * Listens to live loop `loopId` (once): what it emits — its needs, its notes, its round
   * starts — reaches the runtime and the host as a session's events do.
   */
  listenToLoop(loopId: string): void {
    const ref = this.loopActor(loopId);
    if (!ref || this.#listenedLoops.has(ref)) return;
    this.#listenedLoops.add(ref);
    ref.on('*', (emitted) => this.#path.collect(emitted as SystemEmitted));
  }

  /** Restores a session straight under its shard. */
  #restoreUnderShard(
    event: Extract<SystemEvent, { type: 'system.restore_session' }>,
  ): readonly HostEvent[] {
    const { sessionId, openedAt: at, snapshot: restore } = event;
    const shard = this.#shardOf(sessionId);
    if (!shard) return this.#path.run(() => this.root.send(event));
    return this.#path.run(() =>
      shard.send({ type: 'shard.spawn', input: { sessionId, at, restore } }),
    );
  }

  /** The shard actor session `sessionId` lives under. */
  #shardOf(sessionId: string): ActorRefFrom<ShardMachine> | undefined {
    const { shards } = this.root.getSnapshot().context;
    return this.actor(shardActorId(shardIndexOf(sessionId, shards))) as
      | ActorRefFrom<ShardMachine>
      | undefined;
  }

  /** Ids of the live sessions, least recently used first. */
  sessionIds(): string[] {
    return this.directory.ids();
  }

  /** True when `sessionId` names a live session. */
  isLive(sessionId: string): boolean {
    return typeof sessionId === 'string' && this.directory.has(sessionId);
  }

  /** The live actor with this systemId (for subscriptions), if any. */
  actor(systemId: string): AnyActorRef | undefined {
    return this.#actor?.system.get(systemId);
  }

  /** A live session's actor (to subscribe to), if it is live. */
  sessionActor(sessionId: string): ActorRefFrom<SessionMachine> | undefined {
    return this.isLive(sessionId)
      ? (this.actor(sessionActorId(sessionId)) as ActorRefFrom<SessionMachine> | undefined)
      : undefined;
  }

  /** A live session's artifact store actor, if the session is live. */
  artifactsActor(sessionId: string): ActorRefFrom<typeof artifactStoreLogic> | undefined {
    return this.isLive(sessionId)
      ? (this.actor(artifactsActorId(sessionId)) as
          | ActorRefFrom<typeof artifactStoreLogic>
          | undefined)
      : undefined;
  }

  /** A live loop's actor, if it is live. */
  loopActor(loopId: string): ActorRefFrom<LoopMachine> | undefined {
    return this.actor(loopActorId(loopId)) as ActorRefFrom<LoopMachine> | undefined;
  }

  /**
   * Makes sure session `sessionId` is live here, activating it when it is passivated; reads
   * nothing of it (the command guard's check, before every command of a handle).
   * Throws: `unknown_session` naming the id; what activation throws
   * (`session_owned_elsewhere`, …); the gate's `not_started`, `stopped`, `store_failed`.
   */
  requireLive(sessionId: string): void {
    this.#path.requireUsable();
    if (this.isLive(sessionId)) return;
    if (typeof sessionId === 'string' && this.#path.activate(sessionId) && this.isLive(sessionId))
      return;
    throw new RoleboxError('unknown_session', `no open session ${describeValue(sessionId)}`, {
      sessionId,
    });
  }

  /**
   * A session's state and artifacts, activating it first when it is passivated; undefined
   * when there is no such session.
   */
  readSession(sessionId: string): SessionRead | undefined {
    this.#path.requireUsable();
    if (typeof sessionId !== 'string') return undefined;
    if (!this.isLive(sessionId) && !this.#path.activate(sessionId)) return undefined;
    const snapshot = this.sessionActor(sessionId)?.getSnapshot();
    if (!snapshot) return undefined;
    const store = this.artifactsActor(sessionId)?.getSnapshot();
    return {
      value: snapshot.value,
      context: snapshot.context,
      artifacts: store?.context.artifacts ?? [],
      can: (event) => snapshot.can(event),
    };
  }

  /**
   * A session's state (activating it when passivated), or the error to throw.
   * Throws: `unknown_session` naming the id.
   */
  requireSession(sessionId: string): SessionRead {
    const session = this.readSession(sessionId);
    if (!session)
      throw new RoleboxError('unknown_session', `no open session ${describeValue(sessionId)}`, {
        sessionId,
      });
    return session;
  }

  /** A live function's phase and context; undefined when it is not live. */
  readFunction(sessionId: string, name: string): FunctionRead | undefined {
    const ref = this.actor(functionActorId(sessionId, name));
    if (!ref) return undefined;
    const snapshot = ref.getSnapshot() as FunctionSnapshot;
    return {
      phase: functionPhaseOf(snapshot.value),
      context: snapshot.context,
      can: (event) => snapshot.can(event),
    };
  }

  /** A live loop's state; undefined when it is not live. */
  readLoop(loopId: string): LoopState | undefined {
    const ref = this.loopActor(loopId);
    return ref ? loopStateOf(ref.getSnapshot()) : undefined;
  }

  /** A live session's live loop snapshot (its id and state), if it has one. */
  liveLoopOf(
    sessionId: string,
  ): { readonly loopId: string; readonly snapshot: LoopSnapshot } | undefined {
    const loopId = this.sessionActor(sessionId)?.getSnapshot().context.activeLoopId;
    const snapshot = loopId ? this.loopActor(loopId)?.getSnapshot() : undefined;
    return loopId && snapshot ? { loopId, snapshot } : undefined;
  }

  /** A session's artifacts (empty when it is not live). */
  readArtifacts(sessionId: string): readonly ArtifactRecord[] {
    return this.readSession(sessionId)?.artifacts ?? [];
  }

  /** The system's loop bookkeeping. */
  loopRegistry(): LoopRegistry {
    return this.root.getSnapshot().context.loopRegistry;
  }

  /** The persisted snapshot of a live session subtree; undefined when it is not live. */
  persistedSession(sessionId: string): unknown {
    return this.isLive(sessionId)
      ? this.actor(sessionActorId(sessionId))?.getPersistedSnapshot()
      : undefined;
  }

  /** The live session that owns the actor with this systemId (a loop: its origin), if any. */
  sessionOf(systemId: string): string | undefined {
    const parsed = parseActorId(systemId);
    if (!parsed) return undefined;
    if (parsed.kind === 'loop')
      return this.sessionIds().find(
        (id) => this.sessionActor(id)?.getSnapshot().context.activeLoopId === parsed.loopId,
      );
    return parsed.kind === 'system' || !this.isLive(parsed.sessionId)
      ? undefined
      : parsed.sessionId;
  }
}
