import type { Actor, ActorRefFrom, AnyActorRef, SnapshotFrom } from 'xstate';
import type { FunctionMachine } from '../../machines/function.machine.js';
import { type LoopMachine, loopStateOf } from '../../machines/loop.machine.js';
import type { SessionMachine } from '../../machines/session.machine.js';
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
import type { LoopEffectsRequest, SystemEmitted } from '../session/emitted.js';
import type { SessionEvent } from '../session/machine-types.js';
import type { SystemEvent } from '../system/machine-types.js';
import type { HostEvent } from './host-events.js';

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
 * The facade's one way into the running actor system: it sends the commands (catching the
 * host events each one causes, delivered once the command is fully processed) and reads
 * the actors' snapshots, typed by their machines. Every cast from XState's untyped
 * `system.get()` lives here; the session handle, the artifacts handle, the pipeline bridge
 * and the persister each use a slice of it.
 */
export class SystemAccess {
  #actor: Actor<SystemMachine> | undefined;
  /** Host events caught while a command runs; delivered once it has been fully processed. */
  readonly #captures: HostEvent[][] = [];
  readonly #deliver: (events: readonly HostEvent[]) => void;

  readonly #gate: () => void;

  /**
   * @param deliver hands host events to the host's handlers.
   * @param gate throws when the rolebox may not be used now (not started, stopped, halted);
   * called before every command and every read of a session.
   */
  constructor(deliver: (events: readonly HostEvent[]) => void, gate: () => void) {
    this.#deliver = deliver;
    this.#gate = gate;
  }

  /** Loop effects waiting for the command that asked for them to finish. */
  readonly #effects: LoopEffectsRequest[] = [];
  #performEffects: (request: LoopEffectsRequest) => void = () => {};

  /**
   * Where the loops' effects go (the host runtime): each request once the command that
   * caused it has been fully processed, in order, before its host events are delivered.
   */
  onLoopEffects(perform: (request: LoopEffectsRequest) => void): void {
    this.#performEffects = perform;
  }

  /**
   * Sends the runtime's answer to a loop (if it is live), catching and delivering what it
   * causes like any command. Returns: false when no such loop is live.
   */
  answerLoop(loopId: string, answer: LoopAnswer): boolean {
    const ref = this.loopActor(loopId);
    if (!ref) return false;
    this.#run(() => ref.send(answer));
    return true;
  }

  /** Starts reading and driving `actor` (not started yet): what it emits reaches the host. */
  attach(actor: Actor<SystemMachine>): void {
    this.#actor = actor;
    actor.on('*', (event) => this.#onEmitted(event as SystemEmitted));
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

  /** Sends one event to the root and returns the host events it caused, then delivers them. */
  dispatch(event: SystemEvent): readonly HostEvent[] {
    this.#gate();
    return this.#run(() => this.root.send(event));
  }

  /** Runs `send`, catching the host events and effects it causes, then hands them on. */
  #run(send: () => void): readonly HostEvent[] {
    const captured: HostEvent[] = [];
    this.#captures.push(captured);
    try {
      send();
    } finally {
      this.#captures.pop();
    }
    if (this.#captures.length === 0) this.#flushEffects();
    this.#deliver(captured);
    return captured;
  }

  #flushEffects(): void {
    while (this.#effects.length > 0)
      this.#performEffects(this.#effects.shift() as LoopEffectsRequest);
  }

  /** Ids of the live sessions, in the order they were opened. */
  sessionIds(): string[] {
    return this.#actor ? Object.keys(this.#actor.getSnapshot().context.sessions) : [];
  }

  /** True when `sessionId` names a live session. */
  isLive(sessionId: string): boolean {
    return (
      this.#actor !== undefined &&
      typeof sessionId === 'string' &&
      Object.hasOwn(this.#actor.getSnapshot().context.sessions, sessionId)
    );
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

  /** A live session's state and artifacts; undefined when it is not live. */
  readSession(sessionId: string): SessionRead | undefined {
    this.#gate();
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
   * A live session's state, or the error to throw: `unknown_session` naming the id.
   * Throws: `unknown_session`.
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
        (id) => this.readSession(id)?.context.activeLoopId === parsed.loopId,
      );
    return parsed.kind === 'system' || !this.isLive(parsed.sessionId)
      ? undefined
      : parsed.sessionId;
  }

  #onEmitted(event: SystemEmitted): void {
    if (event.type === 'loop_effects') {
      this.#effects.push(event);
      if (this.#captures.length === 0) this.#flushEffects();
      return;
    }
    const capture = this.#captures.at(-1);
    if (capture) capture.push(event);
    else this.#deliver([event]);
  }
}
