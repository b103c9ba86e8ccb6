import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import {
  artifactsActorId,
  functionActorId,
  functionChildId,
  parseActorId,
  SYSTEM_ACTOR_ID,
  sessionActorId,
} from '../base/actor-ids.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { FunctionDefinition } from '../function/definition.js';
import type { Clock } from '../ports/clock.js';
import { effectId } from '../session/effect-outbox.js';
import type { RoleboxLimits } from '../system/limits.js';
import { REGISTRY_REPORT_TYPES } from '../system/loop-registry-reports.js';
import { CURRENT_MACHINE_VERSIONS, type MachineVersions } from './envelope.js';

/** The `format` of a recorded run. */
export const RUN_FORMAT = 'rolebox.run';

/**
 * Hears of a journal entry as it is recorded: its target's systemId, the event, and the
 * target's XState session id (what inspection frames name it by).
 */
export type JournalEntryListener = (
  target: string,
  event: Record<string, unknown>,
  actorSessionId: string | undefined,
) => void;

/** One event that entered the actor system from outside its machines, and what followed. */
export interface JournalEntry {
  /** Clock time when it arrived. */
  readonly at: number;
  /** The systemId of the actor it was delivered to (`rolebox` for host commands). */
  readonly target: string;
  /** The event, as JSON (errors become `{ "$error": message }`). */
  readonly event: Record<string, unknown>;
  /** The persisted snapshot of the whole system once it had been processed. */
  readonly after: unknown;
}

/** A recorded run: everything needed to replay it on other code and compare. */
export interface RecordedRun {
  readonly format: typeof RUN_FORMAT;
  readonly version: 1;
  readonly machineVersions: MachineVersions;
  /** The definitions the run used (plain data). */
  readonly functions: readonly FunctionDefinition[];
  readonly limits: RoleboxLimits;
  /** The persisted snapshot of the system when recording started. */
  readonly initial: unknown;
  readonly journal: readonly JournalEntry[];
}

/** The zod schema of a recorded run file. */
export const recordedRunSchema = z.object({
  format: z.literal(RUN_FORMAT),
  version: z.literal(1),
  machineVersions: z.object({
    system: z.number(),
    session: z.number(),
    function: z.number(),
    loop: z.number(),
  }),
  functions: z.array(z.record(z.string(), z.unknown())),
  limits: z.record(z.string(), z.unknown()),
  initial: z.record(z.string(), z.unknown()),
  journal: z.array(
    z.object({
      at: z.number(),
      target: z.string().min(1),
      event: z.object({ type: z.string() }).loose(),
      after: z.record(z.string(), z.unknown()),
    }),
  ),
});

interface ActorLike {
  readonly systemId?: string | undefined;
}

/**
 * Our own actors have systemIds (`rolebox`, `shard:…`, `session:…`, `fn:…`, `loop:…`,
 * `artifacts:…`); invoked ones do not.
 */
function isOurs(actor: ActorLike | undefined): actor is ActorLike & { systemId: string } {
  const id = actor?.systemId;
  return (
    id !== undefined && (id === SYSTEM_ACTOR_ID || /^(shard|session|fn|loop|artifacts):/.test(id))
  );
}

/** The actor logics that are ours; every other child is an invoked actor reaching outside. */
const OUR_ACTOR_SOURCES = new Set(['shard', 'session', 'function', 'loop', 'artifacts']);

/**
 * A persisted snapshot as a replay compares it: invoked actors (the dispatcher calls,
 * timers) are the outside world, so each is kept only as the kind of actor it is; their
 * inner status is not behaviour. Our own actors are kept whole.
 */
export function comparableSnapshot(snapshot: unknown): unknown {
  if (typeof snapshot !== 'object' || snapshot === null) return snapshot;
  const { children, ...rest } = snapshot as {
    children?: Record<string, { src?: unknown; snapshot?: unknown }>;
  };
  if (!children) return JSON.parse(JSON.stringify(snapshot));
  const kept: Record<string, unknown> = {};
  for (const [id, child] of Object.entries(children)) {
    kept[id] =
      typeof child.src === 'string' && OUR_ACTOR_SOURCES.has(child.src)
        ? { ...child, snapshot: comparableSnapshot(child.snapshot) }
        : { src: child.src };
  }
  return JSON.parse(JSON.stringify({ ...rest, children: kept }));
}

/** Events as JSON: an Error (in `xstate.error.actor.*`) is kept as its message. */
function toJson(event: unknown): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(event, (_key, value) =>
      value instanceof Error ? { $error: value.message } : value,
    ),
  );
}

/** Turns a recorded event back into the event to send (errors revived). */
export function reviveEvent(
  event: Record<string, unknown>,
): Record<string, unknown> & { type: string } {
  return JSON.parse(JSON.stringify(event), (_key, value) =>
    value !== null &&
    typeof value === 'object' &&
    typeof value.$error === 'string' &&
    Object.keys(value).length === 1
      ? new Error(value.$error)
      : value,
  );
}

/**
 * Records the events that enter the system from outside its machines: host commands to
 * the root, and what invoked actors (the dispatcher's answers, timers) send back. Every
 * other event is a consequence of these, so replaying them in order on the same snapshots
 * reproduces the run. Each entry keeps the system's persisted snapshot after it.
 */
export class JournalRecorder {
  readonly #clock: Clock;
  readonly #snapshot: () => unknown;
  readonly #entries: {
    at: number;
    target: string;
    event: Record<string, unknown>;
    after?: unknown;
  }[] = [];
  #initial: unknown;
  readonly #onEntry: JournalEntryListener | undefined;

  /** `onEntry` hears of each entry as it is recorded (the inspector marks it for "fork here"). */
  constructor(clock: Clock, snapshot: () => unknown, onEntry?: JournalEntryListener) {
    this.#clock = clock;
    this.#snapshot = snapshot;
    this.#onEntry = onEntry;
  }

  /** Starts the journal from the system as it is now. */
  begin(): void {
    this.#initial = this.#snapshot();
  }

  /** The inspection observer. */
  readonly observe = (inspection: InspectionEvent): void => {
    if (inspection.type !== '@xstate.event' || this.#initial === undefined) return;
    const target = inspection.actorRef as unknown as ActorLike;
    const source = inspection.sourceRef as unknown as ActorLike | undefined;
    if (!isOurs(target) || isOurs(source) || inspection.event.type === 'xstate.init') return;
    // The runtime's reports to the loop registry follow from a loop's own step (what it
    // emitted); a replay derives them again, so they are not outside events.
    if (target.systemId === SYSTEM_ACTOR_ID && REGISTRY_REPORT_TYPES.has(inspection.event.type))
      return;
    // Outside events arrive only when the system is idle, so the previous one is done.
    this.#settlePrevious();
    const entry = {
      at: this.#clock.now(),
      target: target.systemId,
      event: toJson(inspection.event),
    };
    this.#entries.push(entry);
    this.#onEntry?.(entry.target, entry.event, (target as { sessionId?: string }).sessionId);
  };

  /** The run so far. */
  finish(functions: readonly FunctionDefinition[], limits: RoleboxLimits): RecordedRun {
    if (this.#initial === undefined)
      throw new RoleboxError('not_started', 'the journal starts with rb.start()');
    this.#settlePrevious();
    return {
      format: RUN_FORMAT,
      version: 1,
      machineVersions: CURRENT_MACHINE_VERSIONS,
      functions: structuredClone([...functions]),
      limits,
      initial: this.#initial,
      journal: this.#entries.map((entry) => ({
        at: entry.at,
        target: entry.target,
        event: entry.event,
        after: entry.after,
      })),
    };
  }

  #settlePrevious(): void {
    const previous = this.#entries.at(-1);
    if (previous && previous.after === undefined)
      previous.after = comparableSnapshot(this.#snapshot());
  }
}

/** Checks a recorded run read from a file. Throws: `invalid_argument` naming what is wrong. */
export function parseRecordedRun(value: unknown, where = 'recorded run'): RecordedRun {
  const parsed = recordedRunSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    throw new RoleboxError(
      'invalid_argument',
      `${where} is not a rolebox run: ${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`,
      {
        where,
        got: describeValue(issue.path.length ? undefined : value),
      },
    );
  }
  return parsed.data as unknown as RecordedRun;
}

/** A persisted machine snapshot as the fork helpers read it. */
interface SnapshotNode {
  readonly children?: Record<
    string,
    { readonly snapshot?: unknown; readonly src?: unknown; readonly systemId?: unknown }
  >;
}

/**
 * The snapshot of session `sessionId`'s subtree inside a recorded system snapshot (the
 * root, its shards), or undefined when the session was not live there.
 */
export function sessionSnapshotIn(systemSnapshot: unknown, sessionId: string): unknown {
  const wanted = sessionActorId(sessionId);
  const pending: unknown[] = [systemSnapshot];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (typeof node !== 'object' || node === null) continue;
    for (const [childId, child] of Object.entries((node as SnapshotNode).children ?? {})) {
      if (childId === wanted) return child.snapshot;
      // Only the root and its shards hold sessions.
      if (childId.startsWith('shard:')) pending.push(child.snapshot);
    }
  }
  return undefined;
}

/** The systemIds (`loop:…`) of the loop actors of a session subtree snapshot. */
function loopActorsOf(sessionSnapshot: unknown): string[] {
  const children = (sessionSnapshot as SnapshotNode | undefined)?.children ?? {};
  // The child id is local (`loop`); the systemId names the loop, as journal targets do.
  return Object.values(children).flatMap((child) =>
    child.src === 'loop' && typeof child.systemId === 'string' ? [child.systemId] : [],
  );
}

/**
 * The entries of a recorded run that are session `sessionId`'s events, in order: the host
 * commands naming it (to the root or its shard) and the events delivered to its own actors (its
 * session, functions and artifact store, and a loop it ran, seen in its snapshot before or
 * after the event). Each keeps its index in `run.journal`. `rb.fork(sessionId, { atEvent })`
 * counts these, from 0.
 */
export function sessionJournal(
  run: RecordedRun,
  sessionId: string,
): { readonly index: number; readonly entry: JournalEntry }[] {
  const own = new Set([sessionActorId(sessionId), artifactsActorId(sessionId)]);
  const mine: { index: number; entry: JournalEntry }[] = [];
  let before: unknown = run.initial;
  run.journal.forEach((entry, index) => {
    const parsed = parseActorId(entry.target);
    // A shard (`shard:N`) is handed a session's spawn, its commands and its stop.
    const concerns =
      parsed?.kind === 'system' || entry.target.startsWith('shard:')
        ? entry.event.sessionId === sessionId ||
          (entry.event.input as { sessionId?: unknown } | undefined)?.sessionId === sessionId
        : parsed?.kind === 'function'
          ? parsed.sessionId === sessionId
          : parsed?.kind === 'loop'
            ? [before, entry.after].some((snapshot) =>
                loopActorsOf(sessionSnapshotIn(snapshot, sessionId)).includes(entry.target),
              )
            : own.has(entry.target);
    if (concerns) mine.push({ index, entry });
    before = entry.after;
  });
  return mine;
}

/** A function's persisted snapshot as a rename reads it. */
interface FunctionNode {
  context: { sessionId: string; name: string };
}

/** A pending effect as a rename reads it. */
interface EffectNode {
  id: string;
  effect: { id: string };
}

/**
 * A copy of a session subtree snapshot as session `to`'s, a new incarnation with nonce
 * `nonce`: every place a stored session names its own id (what `checkSessionSnapshot`
 * checks) renamed, and its pending effects numbered as `to`'s (same number, new id), so a
 * handler running one for the copy never shares an idempotency key with the original.
 * A subtree with a loop child is not renamed here: a fork refuses it first.
 */
export function renamedSessionSnapshot(snapshot: unknown, to: string, nonce: string): unknown {
  const copy = structuredClone(snapshot) as {
    context: {
      sessionId: string;
      effectNonce: string | null;
      pendingEffects?: EffectNode[];
      lastLoop: { originSessionId: string } | null;
      retiredFunctions: Record<string, FunctionNode>;
    };
    children: Record<string, { src?: unknown; systemId?: string; snapshot?: unknown }>;
  };
  copy.context.sessionId = to;
  copy.context.effectNonce = nonce;
  for (const entry of copy.context.pendingEffects ?? []) {
    const n = Number(/:e(\d+)$/.exec(entry.id)?.[1] ?? 0);
    entry.id = effectId(to, nonce, n);
    entry.effect.id = entry.id;
  }
  if (copy.context.lastLoop) copy.context.lastLoop.originSessionId = to;
  for (const retired of Object.values(copy.context.retiredFunctions ?? {}))
    retired.context.sessionId = to;
  const children: typeof copy.children = {};
  for (const [childId, child] of Object.entries(copy.children ?? {})) {
    if (child.src === 'function') {
      const fn = child.snapshot as FunctionNode;
      fn.context.sessionId = to;
      children[functionChildId(fn.context.name)] = {
        ...child,
        systemId: functionActorId(to, fn.context.name),
      };
    } else if (child.src === 'artifacts') {
      children[childId] = { ...child, systemId: artifactsActorId(to) };
    } else {
      children[childId] = child;
    }
  }
  copy.children = children;
  return copy;
}
