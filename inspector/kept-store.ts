// What the inspector keeps of the apps it watches — actors, the event log, pipeline runs —
// bounded in count and in bytes. Over a bound the oldest events go first, then the oldest
// pipeline runs, then actors that finished or whose app is gone; a live actor never goes,
// and a record that still does not fit is dropped (with the reason, through `drop`).

import type { WebSocket } from 'ws';
import { describeValue } from '../src/errors.js';
import type { Clock } from '../src/ports/clock.js';
import { RUNTIME_EVENT_TYPES } from '../src/session/runtime-event-schema.js';
import { SIGNAL_TYPES } from '../src/signal/catalogue.js';
import { type Chart, chartFromConfig } from './chart.js';
import type { InspectorSource } from './inspector-types.js';
import { nestsDeeperThan, Queue } from './json-guard.js';
import {
  type App,
  actorJson,
  appJson,
  eventJson,
  type Frame,
  isGone,
  type KeptActor,
  type KeptEvent,
  type KeptTrace,
} from './kept-records.js';

/** Pipeline runs kept (the newest); each is also counted in `maxKeptBytes`. */
export const TRACE_LIMIT = 200;
/** The largest pipeline trace kept: a run is a handful of nodes, this is thousands. */
export const MAX_TRACE_BYTES = 1024 * 1024;
/** The longest id (a sessionId, a runId, a requestId) a client may send. */
export const MAX_ID_LENGTH = 256;
/** What a kept record costs besides its JSON text (ids, maps, object headers), roughly. */
const ACTOR_OVERHEAD_BYTES = 256;
const EVENT_OVERHEAD_BYTES = 64;
const MAX_NAME_LENGTH = 1024;
/** Events per actor kept waiting for their snapshot (an actor's mailbox is rarely deeper). */
const AWAITING_SNAPSHOT_LIMIT = 64;
/** How far back a journal mark looks for its event (it follows that event's frame closely). */
const JOURNAL_MARK_SEARCH = 500;
/** Most nodes (source, signals, actions) a trace may have: the page lays every one out. */
const MAX_TRACE_NODES = 1_000;

/** What the page's controls offer for rolebox actors: the agent signals and the session's runtime events. */
const PAGE_CATALOGUE_JSON = JSON.stringify({
  signals: SIGNAL_TYPES,
  runtimeEvents: RUNTIME_EVENT_TYPES,
});

/** Says why a frame (or a source's record) was not kept; the caller logs and counts it. */
export type Drop = (why: string) => void;

/** The bounds and the surroundings of a {@link KeptStore}. */
export interface KeptStoreOptions {
  readonly historyLimit: number;
  readonly actorLimit: number;
  readonly maxKeptBytes: number;
  /** Deepest nesting of an actor's definition that is drawn as a chart. */
  readonly maxDepth: number;
  readonly clock: Clock;
  readonly log: (message: string) => void;
  /** Sends a message (JSON text) to every page: each change kept is announced. */
  readonly broadcast: (text: string) => void;
}

/** The inspector's records, bounded in count and in bytes (see the file's opening note). */
export class KeptStore {
  readonly apps = new Map<number, App>();
  readonly actors = new Map<string, KeptActor>();
  readonly events = new Queue<KeptEvent>();
  readonly traces = new Queue<KeptTrace>();
  readonly #options: KeptStoreOptions;
  /** Actors that may be forgotten to make room: finished, or their app is gone; oldest first. */
  readonly #evictable = new Set<string>();
  /** Per actor, its events still waiting for their snapshot, oldest first (bounded). */
  readonly #awaitingSnapshot = new Map<string, KeptEvent[]>();
  #keptBytes = 0;
  #peakKeptBytes = 0;
  #evictedEvents = 0;
  #nextSeq = 1;
  #nextApp = 1;

  constructor(options: KeptStoreOptions) {
    this.#options = options;
  }

  /** Bytes of JSON kept (plus a small overhead per record). */
  get keptBytes(): number {
    return this.#keptBytes;
  }

  /** The most {@link KeptStore.keptBytes} ever was. */
  get peakKeptBytes(): number {
    return this.#peakKeptBytes;
  }

  /** Adds an app: a connection (its socket) or a source's pseudo-app; pages are told. */
  addApp(socket: WebSocket | undefined, source?: InspectorSource): App {
    const app: App = {
      id: this.#nextApp++,
      socket,
      ...(source ? { name: source.name.slice(0, 200) } : {}),
      rolebox: false,
      actorIds: new Set(),
      ...(source ? { source } : {}),
    };
    this.apps.set(app.id, app);
    this.#options.broadcast(`{"type":"app","app":${appJson(app)}}`);
    return app;
  }

  /**
   * An app's socket closed: its actors may now be forgotten to make room, and it is
   * forgotten itself once it has none.
   */
  appLeft(app: App) {
    for (const id of app.actorIds) this.#evictable.add(id);
    if (app.actorIds.size === 0) this.apps.delete(app.id);
  }

  /** Keeps an actor (`@xstate.actor`), replacing the one with the same id. */
  putActor(app: App, id: string, sessionId: string, message: Frame, drop: Drop) {
    const { actorLimit, maxDepth, clock, log, broadcast } = this.#options;
    const name = typeof message.name === 'string' && message.name !== '' ? message.name : sessionId;
    if (name.length > MAX_NAME_LENGTH)
      return drop(`name longer than ${MAX_NAME_LENGTH} characters`);
    let chart: Chart | undefined;
    if (typeof message.definition === 'string') {
      if (nestsDeeperThan(message.definition, maxDepth))
        log(
          `actor ${describeValue(name)} of app ${app.id}: definition nested deeper than ${maxDepth} levels; no chart`,
        );
      else chart = chartFromConfig(message.definition);
    }
    const meta = JSON.stringify({
      id,
      app: app.id,
      sessionId,
      name,
      ...shortId('parentId', message.parentId),
      ...shortId('rootId', message.rootId),
      ...(chart ? { chart } : {}),
      createdAt: clock.now(),
    }).slice(0, -1);
    const snapshot = JSON.stringify(message.snapshot ?? null);
    const metaBytes = Buffer.byteLength(meta);
    const snapshotBytes = Buffer.byteLength(snapshot);
    const previous = this.actors.get(id);
    if (previous) this.#forgetActor(previous);
    else if (this.actors.size >= actorLimit) {
      const forgotten: string[] = [];
      this.#evictOneActor(undefined, forgotten);
      this.#announceForgotten(forgotten);
      if (this.actors.size >= actorLimit)
        return drop(
          `actor ${describeValue(name)}: actorLimit (${actorLimit}) reached by live actors`,
        );
    }
    const full = this.#makeRoom(metaBytes + snapshotBytes + ACTOR_OVERHEAD_BYTES);
    if (full) {
      // The record it replaced is gone as well: the page must not keep showing it.
      if (previous) broadcast(`{"type":"forget","actors":${JSON.stringify([id])}}`);
      return drop(`actor ${describeValue(name)}: ${full}`);
    }
    const actor: KeptActor = { id, app, sessionId, name, meta, metaBytes, snapshot, snapshotBytes };
    this.actors.set(id, actor);
    app.actorIds.add(id);
    this.#keep(metaBytes + snapshotBytes + ACTOR_OVERHEAD_BYTES);
    if (isFinished(message.snapshot) || isGone(app)) this.#evictable.add(id);
    broadcast(`{"type":"actor","actor":${actorJson(actor)}}`);
  }

  /** Replaces a kept actor's snapshot (`@xstate.snapshot`), and keeps it as its event's. */
  putSnapshot(id: string, sessionId: string, message: Frame, drop: Drop) {
    const actor = this.actors.get(id);
    if (!actor) return drop(`snapshot for unknown actor ${sessionId}`);
    const snapshot = JSON.stringify(message.snapshot ?? null);
    const snapshotBytes = Buffer.byteLength(snapshot);
    const growth = snapshotBytes - actor.snapshotBytes;
    if (growth > 0) {
      const full = this.#makeRoom(growth, id);
      if (full) return drop(`snapshot of ${describeValue(actor.name)}: ${full}`);
    }
    actor.snapshot = snapshot;
    actor.snapshotBytes = snapshotBytes;
    this.#keep(growth);
    if (isFinished(message.snapshot)) this.#evictable.add(id);
    this.#options.broadcast(
      `{"type":"snapshot","id":${JSON.stringify(id)},"app":${actor.app.id},"sessionId":${JSON.stringify(sessionId)},"snapshot":${snapshot}}`,
    );
    this.#attachSnapshot(id, message, snapshot, snapshotBytes);
  }

  /**
   * Adds an event (`@xstate.event`) to the log, at `at` (default: now; a replay gives the
   * recorded time). Returns its number in the log, or undefined when it was dropped.
   */
  putEvent(
    app: App,
    id: string,
    sessionId: string,
    message: Frame,
    drop: Drop,
    at = this.#options.clock.now(),
  ): number | undefined {
    const event = message.event as { type?: unknown } | undefined;
    if (typeof event?.type !== 'string') {
      drop('event without a type');
      return undefined;
    }
    if (event.type.length > MAX_NAME_LENGTH) {
      drop(`event type longer than ${MAX_NAME_LENGTH} characters`);
      return undefined;
    }
    const seq = this.#nextSeq++;
    const json = JSON.stringify({
      seq,
      at,
      app: app.id,
      sessionId,
      ...shortId('sourceId', message.sourceId),
      type: event.type,
      event,
    });
    const bytes = Buffer.byteLength(json) + EVENT_OVERHEAD_BYTES;
    const full = this.#makeRoom(bytes);
    if (full) {
      drop(`event ${describeValue(event.type)}: ${full}`);
      return undefined;
    }
    const kept: KeptEvent = { seq, app, target: id, type: event.type, json, bytes };
    this.events.push(kept);
    this.#keep(bytes);
    while (this.events.length > this.#options.historyLimit) this.#evictOldestEvent();
    if (this.actors.has(id)) {
      const waiting = this.#awaitingSnapshot.get(id) ?? [];
      waiting.push(kept);
      if (waiting.length > AWAITING_SNAPSHOT_LIMIT) waiting.shift();
      this.#awaitingSnapshot.set(id, waiting);
    }
    this.#options.broadcast(`{"type":"event","entry":${json}}`);
    return seq;
  }

  /**
   * Marks the event a `rolebox.journal` frame names as completing its session's journal
   * entry `index` (the page offers "fork here").
   */
  markJournal(app: App, message: Frame, drop: Drop) {
    const { sessionId, index, actor, event: eventType } = message;
    if (!app.rolebox) return drop('rolebox.journal from an app that did not say rolebox.app');
    if (typeof sessionId !== 'string' || !/^[\w.:-]{1,256}$/.test(sessionId))
      return drop(`rolebox.journal with a bad sessionId ${describeValue(sessionId)}`);
    if (!Number.isSafeInteger(index) || (index as number) < 0)
      return drop(`rolebox.journal with a bad index ${describeValue(index)}`);
    if (typeof actor !== 'string' || actor.length > MAX_ID_LENGTH)
      return drop(`rolebox.journal with a bad actor ${describeValue(actor)}`);
    if (typeof eventType !== 'string' || eventType.length > MAX_NAME_LENGTH)
      return drop(`rolebox.journal with a bad event type ${describeValue(eventType)}`);
    // It follows its event's frame: the newest event of that type to that actor, not marked yet.
    const target = `${app.id}/${actor}`;
    const recent = this.events.values().slice(-JOURNAL_MARK_SEARCH);
    let marked: KeptEvent | undefined;
    for (let at = recent.length - 1; at >= 0 && !marked; at--) {
      const event = recent[at] as KeptEvent;
      if (event.target === target && event.type === eventType && event.fork === undefined)
        marked = event;
    }
    if (!marked)
      return drop(
        `rolebox.journal for ${describeValue(sessionId)}: no recent ${describeValue(eventType)} event to ${describeValue(actor)}`,
      );
    const fork = JSON.stringify({ sessionId, index });
    const bytes = Buffer.byteLength(fork) - Buffer.byteLength(marked.fork ?? '');
    if (bytes > 0 && this.#makeRoom(bytes))
      return drop('rolebox.journal: inspector memory is full');
    if (marked.evicted) return;
    marked.fork = fork;
    marked.bytes += bytes;
    this.#keep(bytes);
    this.#options.broadcast(`{"type":"event_mark","seq":${marked.seq},"fork":${fork}}`);
  }

  /** Keeps a pipeline run (`rolebox.trace`), the newest {@link TRACE_LIMIT} of them. */
  putTrace(app: App, message: Frame, drop: Drop) {
    const { runId, trace } = message;
    if (typeof runId !== 'string' || runId === '' || runId.length > MAX_ID_LENGTH)
      return drop(`rolebox.trace without a runId of 1 to ${MAX_ID_LENGTH} characters`);
    const invalid = traceProblem(trace);
    if (invalid) return drop(`rolebox.trace ${describeValue(runId)}: ${invalid}`);
    const json = JSON.stringify({ at: this.#options.clock.now(), app: app.id, runId, trace });
    const bytes = Buffer.byteLength(json) + EVENT_OVERHEAD_BYTES;
    if (bytes > MAX_TRACE_BYTES)
      return drop(
        `rolebox.trace ${describeValue(runId)}: ${bytes} bytes is more than ${MAX_TRACE_BYTES}`,
      );
    const full = this.#makeRoom(bytes);
    if (full) return drop(`rolebox.trace ${describeValue(runId)}: ${full}`);
    this.traces.push({ json, bytes });
    this.#keep(bytes);
    while (this.traces.length > TRACE_LIMIT)
      this.#keptBytes -= (this.traces.shift() as KeptTrace).bytes;
    this.#options.broadcast(`{"type":"trace","entry":${json}}`);
  }

  /** Forgets actors of `app` by their session ids; pages are told which went. */
  forget(app: App, sessionIds: readonly string[]) {
    const gone = sessionIds
      .map((sessionId) => this.actors.get(`${app.id}/${sessionId}`))
      .filter((actor) => actor !== undefined);
    for (const actor of gone) this.#forgetActor(actor);
    if (gone.length > 0)
      this.#options.broadcast(
        `{"type":"forget","actors":${JSON.stringify(gone.map((actor) => actor.id))}}`,
      );
  }

  /**
   * A page's first message: everything kept. Built from the JSON kept for each record:
   * nothing a client sent is stringified again, so no frame can make it throw.
   */
  initMessage(): string {
    const appList = [...this.apps.values()].map(appJson).join(',');
    const actorList = [...this.actors.values()].map(actorJson).join(',');
    const eventList = this.events.values().map(eventJson).join(',');
    const traceList = this.traces
      .values()
      .map((trace) => trace.json)
      .join(',');
    return `{"type":"init","apps":[${appList}],"actors":[${actorList}],"events":[${eventList}],"traces":[${traceList}],"catalogue":${PAGE_CATALOGUE_JSON}}`;
  }

  #keep(bytes: number) {
    this.#keptBytes += bytes;
    if (this.#keptBytes > this.#peakKeptBytes) this.#peakKeptBytes = this.#keptBytes;
  }

  #forgetActor(actor: KeptActor) {
    this.actors.delete(actor.id);
    this.#evictable.delete(actor.id);
    actor.app.actorIds.delete(actor.id);
    this.#awaitingSnapshot.delete(actor.id);
    this.#keptBytes -= actor.metaBytes + actor.snapshotBytes + ACTOR_OVERHEAD_BYTES;
    if (isGone(actor.app) && actor.app.actorIds.size === 0) this.apps.delete(actor.app.id);
  }

  #evictOldestEvent() {
    const event = this.events.shift();
    if (!event) return;
    event.evicted = true;
    this.#keptBytes -= event.bytes;
    // Oldest first here and in each actor's queue: if it still waits, it heads its queue,
    // and must not stay reachable (its JSON uncounted) once it has left the log.
    const waiting = this.#awaitingSnapshot.get(event.target);
    if (waiting?.[0] === event) {
      waiting.shift();
      if (waiting.length === 0) this.#awaitingSnapshot.delete(event.target);
    }
  }

  /** Forgets the oldest evictable actor other than `keepId`; false when there is none. */
  #evictOneActor(keepId: string | undefined, forgotten: string[]): boolean {
    for (const id of this.#evictable) {
      if (id === keepId) continue;
      const actor = this.actors.get(id);
      if (actor) {
        this.#forgetActor(actor);
        forgotten.push(id);
      } else this.#evictable.delete(id);
      return true;
    }
    return false;
  }

  #announceForgotten(forgotten: string[]) {
    if (forgotten.length === 0) return;
    this.#options.log(
      `forgot ${forgotten.length} finished or disconnected actor(s) to stay within bounds`,
    );
    this.#options.broadcast(`{"type":"forget","actors":${JSON.stringify(forgotten)}}`);
  }

  /**
   * Makes room for `bytes` more: the oldest events first, then finished or disconnected
   * actors (never `keepId`, the one being updated). Returns why it cannot, or undefined.
   */
  #makeRoom(bytes: number, keepId?: string): string | undefined {
    const { maxKeptBytes, log } = this.#options;
    if (bytes > maxKeptBytes) return `${bytes} bytes is more than maxKeptBytes (${maxKeptBytes})`;
    let evicted = 0;
    while (this.#keptBytes + bytes > maxKeptBytes && this.events.length > 0) {
      this.#evictOldestEvent();
      evicted++;
    }
    if (evicted > 0) {
      // Logged on the first and then every thousandth, not for every frame of a long run.
      const before = this.#evictedEvents;
      this.#evictedEvents += evicted;
      if (before === 0 || Math.floor(before / 1000) !== Math.floor(this.#evictedEvents / 1000))
        log(
          `dropped the oldest events to stay under ${maxKeptBytes} bytes (${this.#evictedEvents} so far)`,
        );
    }
    // Then the oldest pipeline runs: like events, a record of the past.
    while (this.#keptBytes + bytes > maxKeptBytes && this.traces.length > 0)
      this.#keptBytes -= (this.traces.shift() as KeptTrace).bytes;
    const forgotten: string[] = [];
    while (this.#keptBytes + bytes > maxKeptBytes && this.#evictOneActor(keepId, forgotten));
    this.#announceForgotten(forgotten);
    if (this.#keptBytes + bytes > maxKeptBytes)
      return `inspector memory is full (${this.#keptBytes} of ${maxKeptBytes} bytes kept for live actors)`;
    return undefined;
  }

  /**
   * Keeps the snapshot as the one after its event: the oldest event of that actor still
   * waiting, of the type the frame names (an actor takes its events in order; one that never
   * got its snapshot, say it reached a stopped actor, gives way).
   */
  #attachSnapshot(id: string, message: Frame, snapshot: string, bytes: number) {
    const type = (message.event as { type?: unknown } | undefined)?.type;
    const waiting = this.#awaitingSnapshot.get(id);
    if (typeof type !== 'string' || !waiting) return;
    const at = waiting.findIndex((event) => !event.evicted && event.type === type);
    if (at < 0) return;
    const event = waiting[at] as KeptEvent;
    waiting.splice(0, at + 1);
    if (waiting.length === 0) this.#awaitingSnapshot.delete(id);
    // Over the bound the log's oldest go first, perhaps this very event: then it is not kept.
    if (this.#makeRoom(bytes, id) || event.evicted) return;
    event.snapshot = snapshot;
    event.bytes += bytes;
    this.#keep(bytes);
    this.#options.broadcast(`{"type":"event_snapshot","seq":${event.seq},"snapshot":${snapshot}}`);
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Why a `rolebox.trace` is not one the page can draw (a trace projection, version 1, of
 * bounded size), or undefined.
 */
export function traceProblem(trace: unknown): string | undefined {
  if (!isRecord(trace)) return `the trace is ${describeValue(trace)}, not an object`;
  if (trace.version !== 1) return `trace version ${describeValue(trace.version)}, not 1`;
  const source = trace.source;
  if (
    !isRecord(source) ||
    typeof source.sourceId !== 'string' ||
    typeof source.sourceType !== 'string'
  )
    return 'a trace without a source { sourceId, sourceType }';
  for (const key of ['signals', 'actions', 'results', 'edges'] as const) {
    const list = trace[key];
    if (!Array.isArray(list) || !list.every(isRecord))
      return `a trace whose ${key} is not a list of objects`;
  }
  const nodes = (trace.signals as unknown[]).length + (trace.actions as unknown[]).length + 1;
  if (nodes > MAX_TRACE_NODES) return `${nodes} nodes, more than ${MAX_TRACE_NODES}`;
  if (!isRecord(trace.metadata) || typeof trace.metadata.status !== 'string')
    return 'a trace without metadata { status }';
  return undefined;
}

function shortId(key: string, value: unknown): Record<string, string> {
  return typeof value === 'string' && value.length <= MAX_ID_LENGTH ? { [key]: value } : {};
}

function isFinished(snapshot: unknown): boolean {
  const status = (snapshot as { status?: unknown } | null)?.status;
  return status === 'done' || status === 'error' || status === 'stopped';
}
