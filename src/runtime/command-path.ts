import type { Actor, AnyActorRef } from 'xstate';
import type { SystemMachine } from '../../machines/system.machine.js';
import { sessionActorId } from '../base/actor-ids.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { LoopAnswer } from '../loop/machine-types.js';
import type {
  EmittedEvent as HostEvent,
  LoopCascadeRequest,
  LoopEffectsRequest,
  SystemEmitted,
} from '../session/emitted.js';
import { registryReportOf } from '../system/loop-registry-reports.js';
import type { SystemEvent, SystemLoopEvent } from '../system/machine-types.js';
import type { SessionRead, SystemAccess } from './system-access.js';

/**
 * The parts of the host runtime a command's path hands on to, one per step (the rolebox
 * wires each to the method named here).
 */
export interface CommandPathSteps {
  /**
   * Check: throws when the rolebox may not be used now (not started, stopped, halted);
   * before every command and every read of a session (`Rolebox`'s `#requireStarted`).
   */
  requireUsable(): void;
  /**
   * Check: makes a session that is not live live (activation on demand:
   * `SessionRuntime.activateNow`, src/runtime/session-runtime.ts). Returns false when there
   * is no such session.
   */
  activate(sessionId: string): boolean;
  /** Mark: the sessions a command used: their idle time counts from now (`SessionDirectory.touch`). */
  markUsed(sessionIds: ReadonlySet<string>): void;
  /**
   * Mark: the sessions a command changed, to be saved (`Persister.mark`), and the loop
   * registry if it changed (`Persister.markRegistry`).
   */
  markForSaving(sessionIds: ReadonlySet<string>): void;
  /** Perform: a loop's needs, for the loop effect runner (`LoopEffectRunner.need`). */
  performLoopNeeds(request: LoopEffectsRequest): void;
  /**
   * Perform: a loop was just spawned in live session `sessionId`: `SessionRuntime.reconcileLoop`
   * listens to it and asks the runner for its needs (a new loop asks for nothing on entry).
   */
  reconcileNewLoop(sessionId: string): void;
  /**
   * Perform: the loop registry's bookkeeping, sent to the root (`SystemAccess.reportToRegistry`).
   * Returns false when the root is stopped.
   */
  reportToRegistry(report: SystemLoopEvent): boolean;
  /** Mark: the root's loop registry changed after the sessions were marked (`Persister.markRegistry`). */
  markRegistryForSaving(): void;
  /** Deliver: hands host events to the host's handlers (`HostEventHub.deliver`, `rb.on`). */
  deliver(events: readonly HostEvent[]): void;
}

/** What the machines asked of the runtime while a command ran, performed once it is done. */
type RuntimeRequest =
  | LoopEffectsRequest
  | LoopCascadeRequest
  | SystemLoopEvent
  | { readonly type: 'loop_spawned'; readonly sessionId: string };

/** The commands that name a session that must be live (activated first when it is passivated). */
type LiveSessionCommand = Extract<
  SystemEvent,
  { type: 'system.deliver' | 'system.start_loop' | 'system.close_session' }
>;

function needsLiveSession(event: SystemEvent): event is LiveSessionCommand {
  return (
    event.type === 'system.deliver' ||
    event.type === 'system.start_loop' ||
    event.type === 'system.close_session'
  );
}

/**
 * The path every command takes, top to bottom in {@link CommandPath.dispatch}:
 * 1. check (the rolebox usable, the session live or activated on demand),
 * 2. dispatch it to the actor that takes it,
 * 3. collect what the machines emitted meanwhile (host events, runtime requests),
 * 4. mark the sessions it used and changed (used now, to be saved),
 * 5. perform the runtime requests (loop needs, cascades, new loops, registry reports),
 * 6. mark the registry for saving if a report changed it,
 * 7. deliver the host events.
 * Commands sent while one runs (a runner answering at once, a cascade) are collected with
 * it; a command sent by a step above runs its own path, delivered before the outer's events.
 * A read of a session takes step 1 too ({@link CommandPath.requireSession}); the typed reads
 * themselves are {@link SystemAccess}'s.
 */
export class CommandPath {
  readonly #access: SystemAccess;
  readonly #steps: CommandPathSteps;
  /** Host events collected per command in progress (outermost first). */
  readonly #collecting: HostEvent[][] = [];
  /** What the commands in progress asked of the runtime, performed once they are done. */
  readonly #requests: RuntimeRequest[] = [];
  /** The sessions the commands in progress were sent to or that emitted an event. */
  readonly #sessions = new Set<string>();
  /** The loop actors listened to (a loop emits its needs and notes itself). */
  readonly #listenedLoops = new WeakSet<AnyActorRef>();

  constructor(access: SystemAccess, steps: CommandPathSteps) {
    this.#access = access;
    this.#steps = steps;
  }

  /** Starts driving the root actor (not started yet): what it emits takes this path. */
  attach(actor: Actor<SystemMachine>): void {
    this.#access.attach(actor);
    this.#listenTo(actor);
  }

  /**
   * A command's whole path, steps 1–7 (see {@link CommandPath}). Returns the host events
   * it caused (delivered already).
   * Throws: `unknown_session` naming a session that is neither live nor stored; what the
   * check throws (`not_started`, `stopped`, `store_failed`, `session_owned_elsewhere`, …).
   */
  dispatch(event: SystemEvent): readonly HostEvent[] {
    // 1. Check. A command to a passivated session activates it first: it behaves as a live
    // one. Never sent to an actor that is not there: XState would put the root (and with it
    // every session of this process) into `error` (issue 22). The handles refuse first;
    // this is the floor under every other caller.
    this.#steps.requireUsable();
    if (needsLiveSession(event) && !this.#liveOrActivated(event.sessionId))
      throw new RoleboxError(
        'unknown_session',
        `no open session ${describeValue(event.sessionId)}`,
        { sessionId: event.sessionId },
      );
    if ('sessionId' in event) this.#sessions.add(event.sessionId);
    // 2. Dispatch, and 3–7: collect, mark, perform, mark the registry, deliver.
    const caused = this.run(() => this.#send(event));
    // A session just spawned: what it tells the host, it emits itself.
    if (event.type === 'system.open_session' || event.type === 'system.restore_session') {
      const session = this.#access.actor(sessionActorId(event.sessionId));
      if (session) this.#listenTo(session);
    }
    return caused;
  }

  /**
   * Steps 3–7 of a command `send` sends: collect what the machines emit while it runs; then,
   * for the outermost command, mark the sessions, perform the runtime requests and mark the
   * registry; deliver. Returns the host events it caused (delivered already).
   */
  run(send: () => void): readonly HostEvent[] {
    const emitted = this.#sendAndCollect(send);
    if (this.#collecting.length === 0) {
      this.#markSessions(emitted);
      this.#performRuntimeRequests();
    }
    this.#steps.deliver(emitted);
    return emitted;
  }

  /**
   * Sends the runtime's answer to a loop of session `sessionId` on the command path,
   * activating the session if it is passivated. Returns: false when no such loop is live.
   */
  answerLoop(sessionId: string, loopId: string, answer: LoopAnswer): boolean {
    if (!this.#liveOrActivated(sessionId)) return false;
    const ref = this.#access.loopActor(loopId);
    if (!ref) return false;
    this.#sessions.add(sessionId);
    this.run(() => ref.send(answer));
    return true;
  }

  /**
   * Step 1 alone, before every command of a handle (its guard): session `sessionId` is live
   * here, activated when it is passivated; reads nothing of it.
   * Throws: `unknown_session` naming the id; what activation throws
   * (`session_owned_elsewhere`, …); `not_started`, `stopped`, `store_failed`.
   */
  requireLive(sessionId: string): void {
    this.#steps.requireUsable();
    if (this.#access.isLive(sessionId)) return;
    if (
      typeof sessionId === 'string' &&
      this.#steps.activate(sessionId) &&
      this.#access.isLive(sessionId)
    )
      return;
    throw new RoleboxError('unknown_session', `no open session ${describeValue(sessionId)}`, {
      sessionId,
    });
  }

  /**
   * Step 1, then a read: a session's state and artifacts (`SystemAccess.readSession`),
   * activating it first when it is passivated.
   * Throws: `unknown_session` naming the id; what {@link requireLive} throws.
   */
  requireSession(sessionId: string): SessionRead {
    this.#steps.requireUsable();
    const session =
      typeof sessionId === 'string' && this.#liveOrActivated(sessionId)
        ? this.#access.readSession(sessionId)
        : undefined;
    if (!session)
      throw new RoleboxError('unknown_session', `no open session ${describeValue(sessionId)}`, {
        sessionId,
      });
    return session;
  }

  /**
   * Listens to live loop `loopId` (once): what it emits — its needs, its notes, its round
   * starts — takes this path as a session's events do.
   */
  listenToLoop(loopId: string): void {
    const ref = this.#access.loopActor(loopId);
    if (!ref || this.#listenedLoops.has(ref)) return;
    this.#listenedLoops.add(ref);
    this.#listenTo(ref);
  }

  /**
   * Step 3: what an actor emitted (the root, a session, a loop): a runtime request is
   * queued, a host event is collected with the command in progress; outside a command each
   * is handled at once, as a command of its own.
   */
  collect(event: SystemEmitted): void {
    if (event.type === 'loop_effects' || event.type === 'loop_cascade') {
      this.#queue(event);
      return;
    }
    // A round start (also a host event) and a cascade are reported to the loop registry.
    const report = registryReportOf(event);
    if (event.type === 'loop_cascade_cancel') {
      if (report) this.#queue(report);
      return;
    }
    if (report) this.#requests.push(report);
    if (event.type === 'loop_started')
      this.#requests.push({ type: 'loop_spawned', sessionId: event.sessionId });
    const collecting = this.#collecting.at(-1);
    if (collecting) collecting.push(event);
    else {
      this.#markSessions([event]);
      this.#performRuntimeRequests();
      this.#steps.deliver([event]);
    }
  }

  /** Whether session `sessionId` is live, activating it when it is passivated. */
  #liveOrActivated(sessionId: string): boolean {
    return this.#access.isLive(sessionId) || this.#steps.activate(sessionId);
  }

  /**
   * Step 2: sends the command to the actor that takes it. A command for a live session goes
   * straight to its actor, and a restore straight to the session's shard: through the root
   * (and its shard) it would cost more XState steps and change nothing, since they only route
   * it (the root keeps its handlers for recorded runs that journaled them there).
   */
  #send(event: SystemEvent): void {
    if (event.type === 'system.deliver') {
      const session = this.#access.sessionActor(event.sessionId);
      if (session) {
        session.send(event.command);
        return;
      }
    }
    if (event.type === 'system.restore_session') {
      const { sessionId, openedAt: at, snapshot: restore } = event;
      const shard = this.#access.shardOf(sessionId);
      if (shard) {
        shard.send({ type: 'shard.spawn', input: { sessionId, at, restore } });
        return;
      }
    }
    this.#access.root.send(event);
  }

  /** What `actor` emits takes this path (step 3). */
  #listenTo(actor: AnyActorRef): void {
    actor.on('*', (emitted) => this.collect(emitted as SystemEmitted));
  }

  /** Steps 2–3: sends the command, collecting the host events it causes. */
  #sendAndCollect(send: () => void): HostEvent[] {
    const emitted: HostEvent[] = [];
    this.#collecting.push(emitted);
    try {
      send();
    } finally {
      this.#collecting.pop();
    }
    return emitted;
  }

  /** Step 4: marks the sessions the command was sent to, and those its events name, used and to save. */
  #markSessions(emitted: readonly HostEvent[]): void {
    for (const event of emitted)
      if ('sessionId' in event && event.sessionId) this.#sessions.add(event.sessionId);
    if (this.#sessions.size === 0) return;
    const sessions = new Set(this.#sessions);
    this.#sessions.clear();
    this.#steps.markUsed(sessions);
    this.#steps.markForSaving(sessions);
  }

  /**
   * Steps 5–6: performs what the machines asked of the runtime, in order; what a step emits
   * in turn (a cascade the registry emits) is queued behind and performed in this same loop.
   * A new kind of request is one more case here.
   */
  #performRuntimeRequests(): void {
    let reported = false;
    while (this.#requests.length > 0) {
      const request = this.#requests.shift() as RuntimeRequest;
      switch (request.type) {
        case 'loop_effects':
          this.#steps.performLoopNeeds(request);
          break;
        case 'loop_cascade':
          this.#cascade(request);
          break;
        case 'loop_spawned':
          this.#steps.reconcileNewLoop(request.sessionId);
          break;
        default:
          if (this.#steps.reportToRegistry(request)) reported = true;
      }
    }
    // The registry changed after the sessions were marked: it must be saved with them (a
    // round's worker session is what makes a loop started in it a child).
    if (reported) this.#steps.markRegistryForSaving();
  }

  /**
   * A cancelNow that cascades: each child loop's session stops its loop now (activated if
   * need be), each a command on its own path.
   */
  #cascade(request: LoopCascadeRequest): void {
    for (const { sessionId } of request.loops) {
      if (!this.#liveOrActivated(sessionId)) continue;
      this.dispatch({
        type: 'system.deliver',
        sessionId,
        command: { type: 'session.stop_loop', now: true, at: request.at },
      });
    }
  }

  /** Queues a runtime request; outside a command it is performed at once. */
  #queue(request: RuntimeRequest): void {
    this.#requests.push(request);
    if (this.#collecting.length === 0) {
      this.#markSessions([]);
      this.#performRuntimeRequests();
    }
  }
}
