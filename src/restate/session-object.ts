import * as restate from '@restatedev/restate-sdk';
import { checkOptionNames } from '../base/option-names.js';
import { reachedAt } from '../base/reached-at.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { RoundResult, TaskStatus } from '../ports/dispatcher.js';
import {
  ARTIFACT_COMMAND_ROWS,
  type CommandRow,
  type CommandRows,
  type RestateHandlerOf,
  SESSION_COMMAND_ROWS,
} from '../rolebox/command-table.js';
import type { SessionHandle } from '../rolebox/session-handle.js';
import { ACCEPTANCE_MODES, type AcceptanceMode } from '../session/runtime-types.js';
import { effectReportHandlers } from './effect-reports.js';
import type { EffectRequest } from './effect-wire.js';
import { randomIdSource } from './rand-ids.js';
import {
  EMPTY_SESSION_STATE,
  SESSION_STEP_OPTION_NAMES,
  type SessionState,
  SessionStepEngine,
  type SessionStepOptions,
  type StepInput,
  type StepOutcome,
} from './session-step.js';
import type { TaskEntry } from './step-dispatcher.js';
import { StepInspection } from './step-inspection.js';
import { asTerminal, terminalError } from './terminal-error.js';
import type { WireHostEvent } from './wire.js';
import type { RoundRequest, WorkerReport } from './worker.js';

/** The default name of the session virtual object. */
export const SESSION_OBJECT_NAME = 'rolebox-session';

/** A Restate service (or virtual object) handler that receives something. */
export interface RestateTarget {
  /** The service name. */
  readonly service: string;
  /** The handler (defaults: `run` for workers, `hostEvents` for an event sink). */
  readonly handler?: string;
}

/** Options of {@link roleboxSessionObject}: the session behaviour, plus where rounds and events go. */
export interface SessionObjectOptions extends SessionStepOptions {
  /** The virtual object's name (default {@link SESSION_OBJECT_NAME}). */
  readonly objectName?: string;
  /** The worker service loop rounds are sent to (see `roleboxWorker`); loops cannot start without it. */
  readonly workers?: RestateTarget;
  /** A service that receives every step's host events (`{ sessionId, seq, events }`). */
  readonly eventSink?: RestateTarget;
  /**
   * The effect service (see `roleboxEffectService`) each pending effect but `emit_message` is
   * sent to, with the effect id as idempotency key; it reports back to `effectReturned`.
   */
  readonly effects?: RestateTarget;
  /** Streams every step's actors to an inspector server (`rolebox inspect`) at this WebSocket URL. */
  readonly inspect?: { readonly url: string };
}

/** What every session handler answers: the embedded method's result, and the step's host events. */
export interface StepAnswer<T = unknown> {
  readonly result: T;
  readonly events: readonly WireHostEvent[];
}

/** What an event sink receives, once per step that had events; `seq` orders one session's batches. */
export interface HostEventBatch {
  readonly sessionId: string;
  readonly seq: number;
  readonly events: readonly WireHostEvent[];
}

/** Where a handler's call goes: a method of the session handle or of its artifacts, and its row. */
interface HandlerRoute {
  readonly surface: 'session' | 'artifacts';
  readonly method: string;
  readonly row: CommandRow;
}

/**
 * Every handler the command table names (src/rolebox/command-table.ts), with the method it
 * calls: commands become exclusive handlers, reads shared ones. Two rows may share a
 * handler only when both are reads that answer the same (`facts`); the first serves it.
 */
const ROUTES: ReadonlyMap<string, HandlerRoute> = routesOf([
  ['session', SESSION_COMMAND_ROWS],
  ['artifacts', ARTIFACT_COMMAND_ROWS],
]);

function routesOf(
  tables: ReadonlyArray<readonly [HandlerRoute['surface'], CommandRows]>,
): Map<string, HandlerRoute> {
  const routes = new Map<string, HandlerRoute>();
  for (const [surface, rows] of tables)
    for (const [method, row] of Object.entries(rows)) {
      if (row.restate === null) continue;
      const served = routes.get(row.restate);
      if (served === undefined) routes.set(row.restate, { surface, method, row });
      else if (served.row.kind !== 'read' || row.kind !== 'read')
        throw new Error(
          `rolebox internal error: the Restate handler ${row.restate} is named by two rows that are not both reads`,
        );
    }
  return routes;
}

/**
 * The one forwarder of every session handler: calls the handle method the handler stands
 * for with the body's arguments, as many as the method has parameters. The handle's guard
 * and the method check them, as they do for an embedded call.
 */
function forward(session: SessionHandle, route: HandlerRoute, args: readonly unknown[]): unknown {
  const target: object = route.surface === 'artifacts' ? session.artifacts : session;
  const method: unknown = Reflect.get(target, route.method);
  if (typeof method !== 'function')
    throw new Error(`rolebox internal error: no method ${route.surface}.${route.method}`);
  return Reflect.apply(method, target, args.slice(0, route.row.parameters.length));
}

/** The handler names of one kind of row, in table order. */
function handlersOf(kind: CommandRow['kind']): string[] {
  return [...ROUTES].filter(([, route]) => route.row.kind === kind).map(([handler]) => handler);
}

type SessionRows = typeof SESSION_COMMAND_ROWS;
type ArtifactRows = typeof ARTIFACT_COMMAND_ROWS;
/** The names of the command handlers (exclusive). */
export type SessionCommandName =
  | RestateHandlerOf<SessionRows, 'command'>
  | RestateHandlerOf<ArtifactRows, 'command'>;
/** The names of the read handlers (shared). */
export type SessionReadName =
  | RestateHandlerOf<SessionRows, 'read'>
  | RestateHandlerOf<ArtifactRows, 'read'>;
/** The command handler names, in table order. */
export const SESSION_COMMANDS = handlersOf('command') as SessionCommandName[];
/** The read handler names, in table order. */
export const SESSION_READS = handlersOf('read') as SessionReadName[];

/** A handler of the session object: exclusive (a step) or shared (a read). */
type SessionObjectHandler =
  | ((ctx: restate.ObjectContext, body: unknown) => Promise<StepAnswer>)
  | ((ctx: restate.ObjectSharedContext, body: unknown) => Promise<StepAnswer>);

/** The object's state keys. */
const STATE = {
  /** The ids of the session's records (its own, the loop registry's `$system`). */
  recordIds: 'recordIds',
  tasks: 'tasks',
  /** The time of the last stored step: reads restore the session as of then. */
  at: 'at',
  /** The deadline a delayed `deadline` call is on its way for. */
  deadlineAt: 'deadlineAt',
  /** That call's invocation id: cancelled when the deadline is no longer the one wanted. */
  deadlineInvocation: 'deadlineInvocation',
  /** The sequence number of the last event batch sent to the sink. */
  seq: 'seq',
} as const;

/** The key of one record: each is its own key, so a step writes only the records it changed. */
const recordKey = (id: string) => `record:${id}`;

/**
 * A record as the object's state keeps it: the envelope as a JSON value, so that
 * `restate kv get` and the admin's state table show it as JSON, not a string to parse again.
 */
function storedRecord(text: string): unknown {
  return JSON.parse(text);
}

/**
 * The text of a stored record: the envelope object written since issue 27, or the JSON
 * string earlier versions wrote (read as it is). Undefined for anything else.
 */
function recordText(stored: unknown): string | undefined {
  if (typeof stored === 'string') return stored;
  if (typeof stored === 'object' && stored !== null && !Array.isArray(stored))
    return JSON.stringify(stored);
  return undefined;
}

/**
 * The session virtual object (DESIGN §8): one object per session id, each exclusive
 * handler one step — read the records from the object's state, restore, apply, store them
 * back, answer the receipt the embedded API gives and the step's host events. Rounds go to
 * the worker service with the round's key as idempotency key; the worker calls
 * `workerTerminated` back; deadlines are delayed calls to `deadline` on the same object.
 * Bad input is a terminal error carrying the RoleboxError code (metadata `rolebox-code`),
 * and stores nothing.
 *
 * Throws: what `createRolebox` throws for bad function definitions or limits;
 * `invalid_argument` for an unknown option name (here, in `workers`, `eventSink` or `inspect`).
 */
export function roleboxSessionObject(
  options: SessionObjectOptions = {},
): restate.VirtualObjectDefinition<string, unknown> {
  checkOptionNames(options, SESSION_OBJECT_OPTION_NAMES, 'roleboxSessionObject options');
  return sessionObjectWith(options, inspectionOf(options.inspect));
}

/** Every option name of {@link SessionObjectOptions}. */
export const SESSION_OBJECT_OPTION_NAMES: readonly string[] = [
  ...SESSION_STEP_OPTION_NAMES,
  ...Object.keys({
    objectName: true,
    workers: true,
    eventSink: true,
    effects: true,
    inspect: true,
  } satisfies Record<Exclude<keyof SessionObjectOptions, keyof SessionStepOptions>, true>),
];

/** The inspection of `inspect` (checked), or none. Throws: `invalid_argument`. */
export function inspectionOf(inspect: SessionObjectOptions['inspect']): StepInspection | undefined {
  if (inspect === undefined) return undefined;
  if (typeof inspect === 'object' && inspect !== null && 'url' in inspect)
    checkOptionNames(inspect, ['url'], 'inspect');
  if (typeof inspect?.url !== 'string' || !/^wss?:\/\//.test(inspect.url))
    throw new RoleboxError(
      'invalid_argument',
      `inspect must be { url: 'ws://…' }, got ${describeValue(inspect)}`,
    );
  return new StepInspection(inspect.url);
}

/** {@link roleboxSessionObject} streaming to `inspection` (which the caller closes). */
export function sessionObjectWith(
  options: SessionObjectOptions,
  inspection: StepInspection | undefined,
): restate.VirtualObjectDefinition<string, unknown> {
  const {
    objectName = SESSION_OBJECT_NAME,
    workers,
    eventSink,
    effects,
    inspect: _,
    ...stepOptions
  } = options;
  checkTarget('workers', workers);
  checkTarget('eventSink', eventSink);
  checkTarget('effects', effects);
  const engine = new SessionStepEngine(stepOptions, workers !== undefined);

  /**
   * Runs a step that may change the session, and stores what it did. `notBefore`: the
   * step's time is at least this (a deadline's due time).
   */
  const step = async <T>(
    ctx: restate.ObjectContext,
    input: Omit<StepInput<T>, 'sessionId' | 'state' | 'now' | 'ids'>,
    notBefore = 0,
  ): Promise<StepAnswer<T | null>> => {
    const state = await loadState(ctx);
    const now = reachedAt(notBefore, await ctx.date.now());
    const outcome = await asTerminal(() =>
      engine.run({
        ...input,
        sessionId: ctx.key,
        state,
        now,
        ids: randomIdSource(() => ctx.rand.random()),
        ...(inspection ? { inspect: inspection.observerFor(ctx.key) } : {}),
      }),
    );
    await commitStep(ctx, state, outcome, now, { objectName, workers, eventSink, effects });
    return { result: outcome.result ?? null, events: outcome.events };
  };

  const handlers: Record<string, SessionObjectHandler> = {
    /** Opens the session, or answers the one that exists (get-or-open). */
    open: async (ctx: restate.ObjectContext, body: unknown) => {
      const [openOptions] = argsOf('open', body);
      const acceptanceMode = acceptanceModeOf(openOptions);
      return step(ctx, {
        open: acceptanceMode ? { acceptanceMode } : {},
        command: (session) => session.view(),
      });
    },
    /**
     * A worker's report of its task: applied once (a repeated or unknown report is ignored).
     * Private: only services call it, the ingress refuses it.
     */
    workerTerminated: restate.handlers.object.exclusive(
      { ingressPrivate: true },
      async (ctx: restate.ObjectContext, body: unknown) => {
        const report = workerReportOf(body);
        const tasks = ((await ctx.get<Record<string, TaskEntry>>(STATE.tasks)) ?? {}) as Record<
          string,
          TaskEntry
        >;
        const entry = Object.hasOwn(tasks, report.taskId) ? tasks[report.taskId] : undefined;
        if (entry?.status !== 'running') return { result: null, events: [] };
        return step(ctx, {
          report: {
            taskId: report.taskId,
            status: report.status,
            ...(report.result ? { result: report.result } : {}),
          },
        });
      },
    ),
    /**
     * A deadline the session armed: a stale one (a newer deadline replaced it) is ignored.
     * The step runs at the deadline's own time when Restate's timer fired a little early
     * (by this process's clock): a deadline is reached when its time has come, and one
     * refused here would never be armed again. Private, as `workerTerminated`.
     */
    deadline: restate.handlers.object.exclusive(
      { ingressPrivate: true },
      async (ctx: restate.ObjectContext, body: unknown) => {
        const at = (body as { at?: unknown } | null)?.at;
        const armed = await ctx.get<number>(STATE.deadlineAt);
        if (typeof at !== 'number' || armed !== at) return { result: null, events: [] };
        // This call is the armed one: forget it (it is not to be cancelled, it runs).
        ctx.clear(STATE.deadlineAt);
        ctx.clear(STATE.deadlineInvocation);
        if ((await ctx.get(STATE.recordIds)) === null) return { result: null, events: [] };
        return step(ctx, {}, at);
      },
    ),
    // An effect service's reports: an attempt started, failed, or the handler's events.
    ...effectReportHandlers({
      step: (ctx, command) => step(ctx, { command }),
      exists: async (ctx) => (await ctx.get(STATE.recordIds)) !== null,
      retry: engine.effectRetry,
    }),
  };
  for (const [name, route] of ROUTES) {
    if (route.row.kind === 'command') {
      handlers[name] = restate.handlers.object.exclusive(
        async (ctx: restate.ObjectContext, body: unknown): Promise<StepAnswer> => {
          const args = argsOf(name, body);
          return step(ctx, { command: (session) => forward(session, route, args) });
        },
      );
      continue;
    }
    handlers[name] = restate.handlers.object.shared(
      async (ctx: restate.ObjectSharedContext, body: unknown): Promise<StepAnswer> => {
        const args = argsOf(name, body);
        const state = await loadState(ctx);
        // As of the last stored step: a read never shows what is not stored.
        const at = (await ctx.get<number>(STATE.at)) ?? (await ctx.date.now());
        const outcome = await asTerminal(() =>
          engine.run({
            sessionId: ctx.key,
            state,
            now: at,
            ids: randomIdSource(() => ctx.rand.random()),
            command: (session) => forward(session, route, args),
          }),
        );
        return { result: outcome.result ?? null, events: [] };
      },
    );
  }
  return restate.object({ name: objectName, handlers });
}

/** Where a step's effects go: the object itself (deadlines), the worker service, the event sink. */
interface StepTargets {
  readonly objectName: string;
  readonly workers: SessionObjectOptions['workers'];
  readonly eventSink: SessionObjectOptions['eventSink'];
  readonly effects: SessionObjectOptions['effects'];
}

/**
 * Sends each effect the step delivered (new, or redelivered while pending) to the effect
 * service, keyed by its id: Restate runs one invocation per id, so one sent again is not
 * run again. `emit_message` is not sent: its delivery settles it.
 */
function sendEffects(
  ctx: restate.ObjectContext,
  events: readonly WireHostEvent[],
  objectName: string,
  target: RestateTarget,
): void {
  for (const event of events) {
    if (event.type !== 'effect' || event.effect.type === 'emit_message') continue;
    const request: EffectRequest = {
      effect: event.effect,
      session: { object: objectName, key: ctx.key },
    };
    ctx.genericSend({
      service: target.service,
      method: target.handler ?? 'run',
      parameter: request,
      inputSerde: restate.serde.json,
      idempotencyKey: event.effect.id,
    });
  }
}

/** Stores the step and performs its effects: rounds, cancels, the next deadline, events. */
async function commitStep(
  ctx: restate.ObjectContext,
  before: SessionState,
  outcome: StepOutcome<unknown>,
  now: number,
  targets: StepTargets,
): Promise<void> {
  const { objectName, workers, eventSink } = targets;
  if (outcome.closed) {
    await disarmDeadline(ctx);
    ctx.clearAll();
    return;
  }
  const tasks: Record<string, TaskEntry> = { ...outcome.state.tasks };
  for (const round of outcome.dispatched) {
    if (!workers) continue;
    const request: RoundRequest = {
      ...round,
      session: { object: objectName, key: ctx.key },
    };
    const handle = ctx.genericSend({
      service: workers.service,
      method: workers.handler ?? 'run',
      parameter: request,
      inputSerde: restate.serde.json,
      idempotencyKey: `${ctx.key}/${round.key}`,
    });
    const entry = tasks[round.taskId];
    if (entry) tasks[round.taskId] = { ...entry, invocationId: await handle.invocationId };
  }
  for (const task of outcome.cancelled)
    if (task.invocationId) ctx.cancel(task.invocationId as restate.InvocationId);
  if (targets.effects) sendEffects(ctx, outcome.events, objectName, targets.effects);
  if (outcome.changed || outcome.dispatched.length > 0) {
    // Only what changed is written: a signal rewrites its session's record, not the rest.
    const after = outcome.state.records;
    for (const [id, data] of Object.entries(after))
      if (before.records[id] !== data) ctx.set(recordKey(id), storedRecord(data));
    for (const id of Object.keys(before.records))
      if (!Object.hasOwn(after, id)) ctx.clear(recordKey(id));
    const ids = Object.keys(after);
    const beforeIds = Object.keys(before.records);
    if (ids.length !== beforeIds.length || ids.some((id) => !Object.hasOwn(before.records, id)))
      ctx.set(STATE.recordIds, ids);
    if (outcome.dispatched.length > 0 || JSON.stringify(tasks) !== JSON.stringify(before.tasks))
      ctx.set(STATE.tasks, tasks);
    ctx.set(STATE.at, now);
  }
  // One delayed `deadline` call at a time, for the session's earliest deadline: one no
  // longer wanted (a round ended before its timeout, a loop finished) is cancelled, not
  // left to fire.
  const armed = await ctx.get<number>(STATE.deadlineAt);
  if ((outcome.wakeAt ?? null) !== armed) {
    await disarmDeadline(ctx);
    if (outcome.wakeAt !== undefined) {
      const call = ctx.genericSend({
        service: objectName,
        method: 'deadline',
        key: ctx.key,
        parameter: { at: outcome.wakeAt },
        inputSerde: restate.serde.json,
        delay: Math.max(0, outcome.wakeAt - now),
      });
      ctx.set(STATE.deadlineAt, outcome.wakeAt);
      ctx.set(STATE.deadlineInvocation, await call.invocationId);
    }
  }
  if (eventSink && outcome.events.length > 0) {
    const seq = ((await ctx.get<number>(STATE.seq)) ?? 0) + 1;
    ctx.set(STATE.seq, seq);
    const batch: HostEventBatch = { sessionId: ctx.key, seq, events: outcome.events };
    ctx.genericSend({
      service: eventSink.service,
      method: eventSink.handler ?? 'hostEvents',
      parameter: batch,
      inputSerde: restate.serde.json,
    });
  }
}

/** Cancels the session's pending `deadline` call, if any, and forgets it. */
async function disarmDeadline(ctx: restate.ObjectContext): Promise<void> {
  const pending = await ctx.get<string>(STATE.deadlineInvocation);
  if (typeof pending === 'string') ctx.cancel(pending as restate.InvocationId);
  ctx.clear(STATE.deadlineAt);
  ctx.clear(STATE.deadlineInvocation);
}

/** The session's stored state; a value that is not what rolebox wrote is `invalid_snapshot`. */
async function loadState(ctx: restate.ObjectSharedContext): Promise<SessionState> {
  const ids = await ctx.get<unknown>(STATE.recordIds);
  if (ids === null) return EMPTY_SESSION_STATE;
  const corrupt = () =>
    terminalError(
      new RoleboxError(
        'invalid_snapshot',
        `the state of session ${describeValue(ctx.key)} is not what rolebox stores`,
        { id: ctx.key },
      ),
    );
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) throw corrupt();
  const records: Record<string, string> = {};
  for (const id of ids) {
    const data = recordText(await ctx.get<unknown>(recordKey(id)));
    if (data === undefined) throw corrupt();
    records[id] = data;
  }
  const tasks = await ctx.get<unknown>(STATE.tasks);
  if (tasks !== null && (typeof tasks !== 'object' || Array.isArray(tasks))) throw corrupt();
  return { records, tasks: (tasks ?? {}) as Record<string, TaskEntry> };
}

/** A handler's body: the method's arguments as a JSON array (or nothing, for none). */
function argsOf(handler: string, body: unknown): readonly unknown[] {
  if (body === null || body === undefined) return [];
  if (!Array.isArray(body))
    throw terminalError(
      new RoleboxError(
        'invalid_argument',
        `the body of ${handler} must be a JSON array of its arguments, got ${describeValue(body)}`,
      ),
    );
  return body;
}

function acceptanceModeOf(openOptions: unknown): AcceptanceMode | undefined {
  if (openOptions === undefined || openOptions === null) return undefined;
  if (typeof openOptions !== 'object' || Array.isArray(openOptions))
    throw terminalError(
      new RoleboxError(
        'invalid_argument',
        `open options must be an object, got ${describeValue(openOptions)}`,
      ),
    );
  const mode = (openOptions as { acceptanceMode?: unknown }).acceptanceMode;
  if (mode === undefined) return undefined;
  if (!ACCEPTANCE_MODES.includes(mode as AcceptanceMode))
    throw terminalError(
      new RoleboxError(
        'invalid_argument',
        `acceptanceMode must be one of ${ACCEPTANCE_MODES.join(', ')}, got ${describeValue(mode)}`,
      ),
    );
  return mode as AcceptanceMode;
}

const REPORTED_STATUSES: ReadonlySet<TaskStatus> = new Set(['completed', 'error', 'cancelled']);

function workerReportOf(body: unknown): WorkerReport {
  const report = body as Partial<WorkerReport> | null;
  const result = report?.result as RoundResult | undefined;
  if (
    typeof report !== 'object' ||
    report === null ||
    typeof report.taskId !== 'string' ||
    !REPORTED_STATUSES.has(report.status as TaskStatus) ||
    (result !== undefined &&
      (typeof result !== 'object' ||
        result === null ||
        typeof result.text !== 'string' ||
        typeof result.hadError !== 'boolean'))
  )
    throw terminalError(
      new RoleboxError(
        'invalid_argument',
        `a worker report must be { taskId, status: completed | error | cancelled, result? }, got ${describeValue(body)}`,
      ),
    );
  return report as WorkerReport;
}

function checkTarget(name: string, target: RestateTarget | undefined): void {
  if (target === undefined) return;
  if (typeof target === 'object' && target !== null && !Array.isArray(target))
    checkOptionNames(target, ['service', 'handler'], name);
  if (
    typeof target !== 'object' ||
    target === null ||
    typeof target.service !== 'string' ||
    target.service === '' ||
    (target.handler !== undefined && typeof target.handler !== 'string')
  )
    throw new RoleboxError(
      'invalid_argument',
      `${name} must be { service, handler? } naming a Restate service, got ${describeValue(target)}`,
    );
}
