import type {
  EmittedEvent as HostEvent,
  LoopCascadeRequest,
  LoopEffectsRequest,
  SystemEmitted,
} from '../session/emitted.js';
import { registryReportOf } from '../system/loop-registry-reports.js';
import type { SystemLoopEvent } from '../system/machine-types.js';

/**
 * The parts of the host runtime a command's path hands on to, one per step (the rolebox
 * wires them: the session runtime, the loop effect runner, the persister, the event hub).
 */
export interface CommandPathSteps {
  /**
   * Check: throws when the rolebox may not be used now (not started, stopped, halted);
   * before every command and every read of a session.
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
  /** Perform: child loops a cancelNow cascades to (each child's session stops its loop). */
  cascadeCancel(request: LoopCascadeRequest): void;
  /**
   * Perform: a loop was just spawned in live session `sessionId`: `SessionRuntime.reconcileLoop`
   * listens to it and asks the runner for its needs (a new loop asks for nothing on entry).
   */
  reconcileNewLoop(sessionId: string): void;
  /** Perform: the loop registry's bookkeeping, sent to the root. Returns false when it is stopped. */
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

/**
 * The path every command takes once it is checked and routed (by `SystemAccess`), top to
 * bottom in {@link CommandPath.run}: send it → collect what the machines emitted → mark the
 * sessions it used and changed → perform the runtime requests (loop needs, cascades, new
 * loops, registry reports) → mark the registry for saving → deliver the host events.
 * Commands sent while one runs (a runner answering at once, a cascade) are collected with
 * it; a command sent by a step above runs its own path, delivered before the outer's events.
 */
export class CommandPath {
  readonly #steps: CommandPathSteps;
  /** Host events collected per command in progress (outermost first). */
  readonly #collecting: HostEvent[][] = [];
  /** What the commands in progress asked of the runtime, performed once they are done. */
  readonly #requests: RuntimeRequest[] = [];
  /** The sessions the commands in progress were sent to or that emitted an event. */
  readonly #sessions = new Set<string>();

  constructor(steps: CommandPathSteps) {
    this.#steps = steps;
  }

  /** Check: throws unless the rolebox may be used now. */
  requireUsable(): void {
    this.#steps.requireUsable();
  }

  /** Check: true when `sessionId` is live or was just activated. */
  activate(sessionId: string): boolean {
    return this.#steps.activate(sessionId);
  }

  /** Notes that the command in progress is for session `sessionId` (to be marked after). */
  noteSession(sessionId: string): void {
    this.#sessions.add(sessionId);
  }

  /** Runs one command's path; returns the host events it caused (delivered already). */
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
   * What an actor emitted (the root, a session, a loop): a runtime request is queued, a host
   * event is collected with the command in progress; outside a command each is handled at
   * once, as a command of its own.
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

  /** Sends the command, collecting the host events it causes. */
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

  /** Marks the sessions the command was sent to, and those its events name, used and to save. */
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
   * Performs what the machines asked of the runtime, in order; what a step emits in turn (a
   * cascade the registry emits) is queued behind and performed in this same loop.
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
          this.#steps.cascadeCancel(request);
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

  /** Queues a runtime request; outside a command it is performed at once. */
  #queue(request: RuntimeRequest): void {
    this.#requests.push(request);
    if (this.#collecting.length === 0) {
      this.#markSessions([]);
      this.#performRuntimeRequests();
    }
  }
}
