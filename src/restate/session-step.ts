import type { InspectionEvent } from 'xstate';
import { MemorySnapshotStore } from '../adapters/memory-snapshot-store.js';
import type { ConditionRegistry } from '../condition/registry.js';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';
import type { FunctionDefinition } from '../function/definition.js';
import type { MigrationRegistry } from '../persistence/migrations.js';
import type { RoundResult, TaskStatus } from '../ports/dispatcher.js';
import type { IdSource } from '../ports/ids.js';
import { machinesFor, type RoleboxMachines } from '../rolebox/build-machines.js';
import type { EffectRetry, EffectRetryOptions } from '../rolebox/effect-handlers.js';
import type { HostEvent } from '../rolebox/host-events.js';
import { resolveRoleboxOptions } from '../rolebox/options.js';
import { Rolebox } from '../rolebox/rolebox.js';
import type { SessionHandle } from '../rolebox/session-handle.js';
import type { AcceptanceMode } from '../session/runtime-types.js';
import type { RoleboxLimits } from '../system/limits.js';
import { StepClock } from './step-clock.js';
import { type RoundToDispatch, StepDispatcher, type TaskEntry } from './step-dispatcher.js';
import { type WireHostEvent, wireHostEvent } from './wire.js';

/** What a session object keeps in Restate between steps. */
export interface SessionState {
  /** The session's stored records by id (its envelope, and the loop registry's `$system`). */
  readonly records: Readonly<Record<string, string>>;
  /** Its worker tasks, as the workers reported them. */
  readonly tasks: Readonly<Record<string, TaskEntry>>;
}

/** A session object that holds nothing yet. */
export const EMPTY_SESSION_STATE: SessionState = { records: {}, tasks: {} };

/** What the endpoint's sessions are built with: the `createRolebox` options that define behaviour. */
export interface SessionStepOptions {
  readonly functions?: readonly FunctionDefinition[];
  readonly conditions?: ConditionRegistry;
  readonly limits?: Partial<RoleboxLimits>;
  readonly strictSessions?: boolean;
  readonly migrations?: MigrationRegistry;
  /**
   * How a failed effect handler of the endpoint's effect service is retried, as
   * `createRolebox({ effectRetry })`: the session object counts the attempts and answers
   * the service when to try again (a durable `ctx.sleep`) or that the effect failed.
   */
  readonly effectRetry?: EffectRetryOptions;
}

/** Every option name of {@link SessionStepOptions}. */
export const SESSION_STEP_OPTION_NAMES: readonly string[] = Object.keys({
  functions: true,
  conditions: true,
  limits: true,
  strictSessions: true,
  migrations: true,
  effectRetry: true,
} satisfies Record<keyof SessionStepOptions, true>);

/** One step's input: the session, its state, the step's time and ids, and what to do. */
export interface StepInput<T> {
  readonly sessionId: string;
  readonly state: SessionState;
  /** The step's time (Restate's `ctx.date.now()`). */
  readonly now: number;
  /** Where the step's new ids come from (Restate's `ctx.rand`). */
  readonly ids: IdSource;
  /** Opens the session when it does not exist (else `unknown_session`), with these options. */
  readonly open?: { readonly acceptanceMode?: AcceptanceMode };
  /** A worker's report, applied before the session is activated. */
  readonly report?: {
    readonly taskId: string;
    readonly status: TaskStatus;
    readonly result?: RoundResult;
  };
  /** The command, run on the live session at the step's time; its return value is the step's result. */
  readonly command?: (session: SessionHandle, now: number) => T;
  /** An XState inspection observer for the step's actor system. */
  readonly inspect?: (event: InspectionEvent) => void;
}

/** What a step did: its result, the state to store and what to do once it is stored. */
export interface StepOutcome<T> {
  readonly result: T;
  readonly state: SessionState;
  /** False when the step changed neither records nor tasks (nothing to write). */
  readonly changed: boolean;
  /** The host events of the step, as JSON (activation and passivation left out: every step has them). */
  readonly events: readonly WireHostEvent[];
  /** The session's earliest deadline, when it waits for one. */
  readonly wakeAt: number | undefined;
  /** Rounds to send to the worker service. */
  readonly dispatched: readonly RoundToDispatch[];
  /** Tasks whose worker invocation must be cancelled. */
  readonly cancelled: readonly TaskEntry[];
  /** True when the session was closed: its object's state is to be cleared. */
  readonly closed: boolean;
}

/** How many rounds of "let promise work finish, fire due timers" a step may take. */
const MAX_SETTLE_ROUNDS = 1000;

/** Events every step has: a step activates its session and passivates it at the end. */
const STEP_LIFECYCLE = new Set(['session_activated', 'session_passivated']);

/**
 * Runs one session step (DESIGN §7, §8): restores the session from its stored records into
 * a rolebox of its own (its clock standing at the step's time, its store in memory, its
 * dispatcher answering from the reported tasks), applies the command, lets everything due
 * happen, stops, and answers with the records to store. Nothing outlives a step but the
 * machines, built once: any process can run any step, and steps of different sessions run
 * side by side.
 */
export class SessionStepEngine {
  readonly #options: SessionStepOptions;
  readonly #machines: RoleboxMachines;

  readonly #dispatches: boolean;

  /** The effect retry policy of these options, filled in (see {@link SessionStepOptions.effectRetry}). */
  readonly effectRetry: EffectRetry;

  /**
   * @param dispatches whether rounds can be dispatched (a worker service is configured);
   *   without it, `startLoop` is refused with `no_dispatcher`, as embedded.
   * Throws: what `createRolebox` throws for these options.
   */
  constructor(options: SessionStepOptions = {}, dispatches = false) {
    this.#options = options;
    this.#dispatches = dispatches;
    const resolved = resolveRoleboxOptions({ ...options, shards: 1 });
    this.#machines = machinesFor(resolved);
    this.effectRetry = resolved.effectRetry;
  }

  /**
   * Runs the step. Throws: `unknown_session` for a command to a session never opened, and
   * whatever the command throws (a RoleboxError changes nothing: nothing is returned to store).
   */
  async run<T>(input: StepInput<T>): Promise<StepOutcome<T>> {
    const { sessionId, state } = input;
    if (!input.open && !Object.hasOwn(state.records, sessionId))
      throw new RoleboxError('unknown_session', `no session ${describeValue(sessionId)}`, {
        id: sessionId,
      });
    const store = new MemorySnapshotStore();
    for (const [id, data] of Object.entries(state.records)) store.records.set(id, data);
    const clock = new StepClock(input.now);
    const dispatcher = new StepDispatcher(state.tasks);
    if (input.report)
      dispatcher.report(input.report.taskId, input.report.status, input.report.result);
    const rb = new Rolebox(
      {
        ...this.#options,
        store,
        clock,
        ids: input.ids,
        ...(this.#dispatches ? { dispatcher } : {}),
        shards: 1,
        saveDebounceMs: 0,
        ...(input.inspect ? { inspect: input.inspect } : {}),
        idleMs: Number.POSITIVE_INFINITY,
        // It lives for one step and stores what it leaves: passivating mid-step is wasted work.
        passivateWhenWaiting: false,
      },
      this.#machines,
    );
    const events: HostEvent[] = [];
    rb.on('*', (event) => {
      // Each step restores the session: that is not an activation the host sees, and so an
      // effect still pending is not redelivered to it at every step either.
      if (STEP_LIFECYCLE.has(event.type) || (event.type === 'effect' && event.redelivered)) return;
      events.push(event);
    });
    let result: T;
    await rb.start();
    try {
      const session = await rb.openSession({
        id: sessionId,
        ifOpen: 'reuse',
        ...(input.open?.acceptanceMode ? { acceptanceMode: input.open.acceptanceMode } : {}),
      });
      await settle(clock);
      result = input.command ? input.command(session, input.now) : (undefined as T);
      await settle(clock);
    } catch (error) {
      await rb.stop().catch(() => {});
      throw this.#dispatches ? error : withRestateAdvice(error);
    }
    await rb.stop();
    const records = Object.fromEntries(store.records);
    const tasks = dispatcher.tasks();
    const wakeUp = (await store.loadWakeUps()).find((entry) => entry.sessionId === sessionId);
    return {
      result,
      state: { records, tasks },
      changed: !sameRecords(records, state.records) || !sameTasks(tasks, state.tasks),
      events: events.map(wireHostEvent),
      wakeAt: wakeUp?.at,
      dispatched: dispatcher.dispatched,
      cancelled: dispatcher.cancelled,
      closed: !Object.hasOwn(records, sessionId),
    };
  }
}

/**
 * The embedded refusal of a loop without a dispatcher advises `createRolebox({ dispatcher })`;
 * on Restate the fix is a worker service on the endpoint, so the refusal says that instead.
 */
function withRestateAdvice(error: unknown): unknown {
  if (!isRoleboxError(error, 'no_dispatcher')) return error;
  return new RoleboxError(
    'no_dispatcher',
    "this Restate endpoint has no worker service to run loop rounds; serve it with one: serveRoleboxOnRestate({ workers: { service: 'my-worker' }, services: [roleboxWorker('my-worker', run)] }) (or shellCommandWorker({ command })), or `rolebox restate dev|serve --worker \"<cmd>\"`",
  );
}

/** True when both hold the same records (texts compared as they are: no parse, no stringify). */
function sameRecords(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((id) => a[id] === b[id]);
}

/** True when both hold the same tasks, in the same states. */
function sameTasks(a: Readonly<Record<string, TaskEntry>>, b: Readonly<Record<string, TaskEntry>>) {
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every((id) => a[id] === b[id] || JSON.stringify(a[id]) === JSON.stringify(b[id]))
  );
}

/**
 * Lets the step's promise work finish and fires its due timers until neither is left. All
 * of a step's I/O is in memory, so one macrotask turn drains every chain of promises.
 */
async function settle(clock: StepClock): Promise<void> {
  for (let round = 0; round < MAX_SETTLE_ROUNDS; round++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (clock.runDue() === 0) return;
  }
  throw new Error(`a session step did not settle after ${MAX_SETTLE_ROUNDS} rounds`);
}
