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
import { RoleboxError } from '../errors.js';
import type { FunctionEvent } from '../function/machine-types.js';
import { type FunctionPhase, functionPhaseOf } from '../function/phase.js';
import type { LoopRegistry } from '../loop/registry.js';
import type { LoopState } from '../loop/types.js';
import type { ArtifactRecord } from '../session/artifact.js';
import type { artifactStoreLogic } from '../session/artifact-store.js';
import type { SessionEvent } from '../session/machine-types.js';
import type { SystemLoopEvent } from '../system/machine-types.js';
import { shardActorId, shardIndexOf } from '../system/shards.js';
import { pureTransition } from './pure-transition.js';
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
  /**
   * The session as it would be once `event` is taken: a pure transition of its snapshot
   * (nothing is performed, sent or emitted); its artifacts as they are now.
   */
  after(event: SessionEvent): SessionRead;
}

/** A live function: its phase and context, and what it would accept. */
export interface FunctionRead {
  readonly phase: FunctionPhase;
  readonly context: FunctionSnapshot['context'];
  /** Whether the function machine would take a transition on this event. */
  can(event: FunctionEvent): boolean;
}

/**
 * The actor-level plumbing under the command path: it holds the root actor, sends to it
 * and to the loop registry, finds a session's actor and shard, and reads the actors'
 * snapshots, typed by their machines. Every cast from XState's untyped `system.get()` lives
 * here; the command path, the session handle, the artifacts handle, the pipeline bridge and
 * the persister each use a slice of it. Which sessions are live is the
 * {@link SessionDirectory}'s answer; it activates nothing (that is the command path's check,
 * `CommandPath`, src/runtime/command-path.ts).
 */
export class SystemAccess {
  #actor: Actor<SystemMachine> | undefined;
  /** The live sessions. */
  readonly directory: SessionDirectory;

  constructor(directory: SessionDirectory) {
    this.directory = directory;
  }

  /** Holds `actor` (not started yet) as the root (the command path listens to it). */
  attach(actor: Actor<SystemMachine>): void {
    this.#actor = actor;
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
   * Sends the loop registry's bookkeeping to the root directly (what it emits, a cascade,
   * takes the command path). Returns: false when the root is stopped (it has no registry).
   */
  reportToRegistry(report: SystemLoopEvent): boolean {
    const root = this.#actor;
    if (root?.getSnapshot().status !== 'active') return false;
    root.send(report);
    return true;
  }

  /** The shard actor session `sessionId` lives under. */
  shardOf(sessionId: string): ActorRefFrom<ShardMachine> | undefined {
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
   * A live session's state and artifacts; undefined when it is not live (the command path's
   * `requireSession` activates a passivated one first).
   */
  readSession(sessionId: string): SessionRead | undefined {
    const snapshot = this.sessionActor(sessionId)?.getSnapshot();
    if (!snapshot) return undefined;
    return sessionRead(snapshot, this.artifactsActor(sessionId)?.getSnapshot().context.artifacts);
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

/** The read of session snapshot `snapshot` with artifacts `artifacts` (see {@link SessionRead}). */
function sessionRead(
  snapshot: SessionSnapshot,
  artifacts: readonly ArtifactRecord[] = [],
): SessionRead {
  return {
    value: snapshot.value,
    context: snapshot.context,
    artifacts,
    can: (event) => snapshot.can(event),
    // A pure transition: nothing is executed, so the live actor, its children and the host
    // see nothing of it.
    after: (event) => sessionRead(pureTransition(snapshot.machine, snapshot, event), artifacts),
  };
}
