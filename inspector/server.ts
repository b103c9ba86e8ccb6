/**
 * `rolebox/inspector`: the inspector server behind `rolebox inspect` (a page that shows live
 * actors, and sends their events back when asked).
 *
 * @module rolebox/inspector
 */

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { realClock } from '../src/adapters/real-clock.js';
import { listenError } from '../src/base/listen-error.js';
import { checkOptionNames } from '../src/base/option-names.js';
import { describeValue, RoleboxError } from '../src/errors.js';
import type { Clock, TimerHandle } from '../src/ports/clock.js';
import { RUNTIME_EVENT_TYPES } from '../src/session/runtime-event-schema.js';
import { SIGNAL_TYPES } from '../src/signal/catalogue.js';
import { type Chart, chartFromConfig } from './chart.js';
import { nestsDeeperThan, parseClientJson, Queue } from './json-guard.js';

/** What the page's controls offer for rolebox actors: the agent signals and the session's runtime events. */
const PAGE_CATALOGUE_JSON = JSON.stringify({
  signals: SIGNAL_TYPES,
  runtimeEvents: RUNTIME_EVENT_TYPES,
});

/** The port an inspector listens on unless told otherwise. */
export const DEFAULT_INSPECTOR_PORT = 7070;

/** The defaults of {@link InspectorServerOptions}' bounds (documented in the README). */
export const INSPECTOR_DEFAULTS = {
  historyLimit: 2_000,
  actorLimit: 10_000,
  maxKeptBytes: 64 * 1024 * 1024,
  maxFrameBytes: 16 * 1024 * 1024,
  maxDepth: 64,
  pageBufferBytes: 8 * 1024 * 1024,
  commandTimeoutMs: 30_000,
  maxPendingCommands: 256,
} as const;

/** The largest frame a page may send: its commands are small. */
const PAGE_FRAME_BYTES = 1024 * 1024;
/** What a kept record costs besides its JSON text (ids, maps, object headers), roughly. */
const ACTOR_OVERHEAD_BYTES = 256;
const EVENT_OVERHEAD_BYTES = 64;
const MAX_ID_LENGTH = 256;
const MAX_NAME_LENGTH = 1024;
/** Events per actor kept waiting for their snapshot (an actor's mailbox is rarely deeper). */
const AWAITING_SNAPSHOT_LIMIT = 64;
/** How far back a journal mark looks for its event (it follows that event's frame closely). */
const JOURNAL_MARK_SEARCH = 500;
/** Pipeline runs kept (the newest); each is also counted in `maxKeptBytes`. */
export const TRACE_LIMIT = 200;
/** The largest pipeline trace kept: a run is a handful of nodes, this is thousands. */
export const MAX_TRACE_BYTES = 1024 * 1024;
/** Most nodes (source, signals, actions) a trace may have: the page lays every one out. */
const MAX_TRACE_NODES = 1_000;

/** One app connection, as the inspector tells apps apart. */
export interface InspectedApp {
  /** The server's number for the connection (`app 1`); commands are routed by it. */
  readonly id: number;
  /** What the app called itself in its `rolebox.app` hello, if it sent one. */
  readonly name?: string;
  readonly pid?: number;
  /** Whether the app said it takes commands (rolebox apps do; plain XState apps do not). */
  readonly rolebox: boolean;
  readonly connected: boolean;
  /** When its socket closed (the server clock's time), once it has disconnected. */
  readonly leftAt?: number;
  /** Set for a pseudo-app inside the inspector ({@link InspectorServer.addSource}): read-only. */
  readonly source?: InspectorSource['kind'];
}

/** What the inspector knows of one actor. */
export interface InspectedActor {
  /** The actor's key in the inspector: `<app>/<sessionId>` (two apps never collide). */
  readonly id: string;
  /** The app connection that reported it; commands go to that app only. */
  readonly app: number;
  /** XState's session id of the actor (unique within its app). */
  readonly sessionId: string;
  /** Its id in its parent (for rolebox actors, its systemId: `session:S`, `fn:S:name`, `loop:…`). */
  readonly name: string;
  /** The session ids (in the same app) of its parent and of its root. */
  readonly parentId?: string;
  readonly rootId?: string;
  /** The statechart to draw, when the actor is a state machine. */
  readonly chart?: Chart;
  /** The latest snapshot (plain JSON). */
  readonly snapshot: unknown;
  readonly createdAt: number;
  /** Its app has disconnected: shown, but commands to it are refused. */
  readonly gone: boolean;
}

/** One event in the log. */
export interface InspectedEvent {
  /** Its number in the log (1, 2, …; never reused): snapshots and marks name it. */
  readonly seq: number;
  readonly at: number;
  readonly app: number;
  /** The actor it was sent to, and the one that sent it, when known (session ids in `app`). */
  readonly sessionId: string;
  readonly sourceId?: string;
  readonly type: string;
  readonly event: unknown;
  /** The target actor's snapshot after it (from the app's next `@xstate.snapshot` of that actor). */
  readonly snapshot?: unknown;
  /**
   * Set when a journaled rolebox said this event completed its session's journal entry
   * `index` (0-based, as `rb.fork(sessionId, { atEvent })` counts): the page offers "fork here".
   */
  readonly fork?: { readonly sessionId: string; readonly index: number };
}

/** One pipeline run an app reported (a `rolebox.trace` frame), as the page draws it. */
export interface InspectedTrace {
  readonly at: number;
  readonly app: number;
  readonly runId: string;
  /** The run's trace projection (`projectRun`), with its handler calls. */
  readonly trace: unknown;
}

/** What the server counts (see {@link InspectorServer.stats}). */
export interface InspectorStats {
  /** Frames received from apps. */
  readonly frames: number;
  /** Frames dropped (malformed, hostile, or over a bound), each with a logged reason. */
  readonly dropped: number;
  /** Connections refused at the handshake (foreign Origin, missing or wrong token). */
  readonly refused: number;
  /** Bytes of JSON kept (snapshots, charts, events, plus a small overhead per record). */
  readonly keptBytes: number;
  /** The most `keptBytes` ever was. */
  readonly peakKeptBytes: number;
  /** Commands sent to apps and not answered yet. */
  readonly pendingCommands: number;
  /** Pages connected now. */
  readonly pages: number;
}

/** Options of {@link startInspectorServer}. */
export interface InspectorServerOptions {
  /** TCP port (default {@link DEFAULT_INSPECTOR_PORT}, 7070; 0 picks a free one). */
  readonly port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  readonly host?: string;
  /**
   * The page's secret: a page must connect with it (`/ui?token=…`). Default: 32 random
   * URL-safe characters per run. 16 to 256 characters of `A-Z a-z 0-9 _ -`.
   */
  readonly token?: string;
  /**
   * Browser origins allowed to stream to the app socket (e.g. `http://localhost:5173` for
   * an app served by Vite). Apps that send no Origin (Node) are always allowed; any other
   * Origin is refused, so a web page cannot inject actors. Default: none.
   */
  readonly appOrigins?: readonly string[];
  /** Most events kept in the log (default 2 000). */
  readonly historyLimit?: number;
  /**
   * Most actors kept (default 10 000). At the limit, actors that finished or whose app
   * disconnected are forgotten first (oldest first); a live actor is never evicted, and a
   * new one is dropped instead.
   */
  readonly actorLimit?: number;
  /**
   * Bytes of JSON kept for snapshots, charts and events (default 64 MiB). Over it, the
   * oldest events go first, then actors that finished or whose app disconnected; a frame
   * that still does not fit is dropped.
   */
  readonly maxKeptBytes?: number;
  /** Largest frame an app may send (default 16 MiB); a bigger one closes its connection. */
  readonly maxFrameBytes?: number;
  /** Deepest nesting of a frame or a definition (default 64); deeper ones are dropped. */
  readonly maxDepth?: number;
  /**
   * Bytes that may wait unsent for a page that does not read (default 8 MiB, on top of
   * its first message). Over it the page is disconnected; it reconnects and starts afresh.
   */
  readonly pageBufferBytes?: number;
  /** How long a command waits for its app's answer (default 30 000 ms); then the page is told. */
  readonly commandTimeoutMs?: number;
  /** Most commands waiting for an answer (default 256); over it the oldest expires. */
  readonly maxPendingCommands?: number;
  /** Where time and timers come from (default: the real clock). */
  readonly clock?: Clock;
  /** Where dropped frames, refused connections and errors are reported (default: console.warn). */
  readonly log?: (message: string) => void;
}

/**
 * A pseudo-app inside the inspector: a store being browsed or a recorded run being replayed.
 * It reports actors as a connected app would (the page draws them alike) and takes no commands.
 */
export interface InspectorSource {
  /** `store`: stored sessions (the page says "stored, read-only"); `replay`: a recorded run. */
  readonly kind: 'store' | 'replay';
  /** Shown as the app's name (`store .rolebox/state.db`). */
  readonly name: string;
  /**
   * A page's `{"type":"replay",…}` frame (parsed, within the frame bounds; its fields
   * unchecked). Returns why it was refused (logged, the frame dropped), else undefined.
   */
  readonly onPageFrame?: (frame: Readonly<Record<string, unknown>>) => string | undefined;
  /** A message (JSON text) a page gets right after its first one: e.g. the replay position. */
  readonly pageMessage?: () => string | undefined;
}

/** One actor a source reports (see {@link SourceHandle.actor}). */
export interface SourceActor {
  /** Its id within the source (the server's id is `<app>/<sessionId>`). */
  readonly sessionId: string;
  readonly name: string;
  readonly parentId?: string;
  /** Its machine's config as JSON text (what a live app sends), for the chart. */
  readonly definition?: string;
  /** Its snapshot (plain JSON). */
  readonly snapshot: unknown;
}

/** What a source added with {@link InspectorServer.addSource} reports through. */
export interface SourceHandle {
  /** The app number the source's actors are shown under. */
  readonly app: number;
  /** Reports an actor, or replaces the one with the same `sessionId`. */
  actor(actor: SourceActor): void;
  /** Changes the snapshot of an actor it reported. */
  snapshot(sessionId: string, snapshot: unknown): void;
  /** Removes actors it reported. */
  forget(sessionIds: readonly string[]): void;
  /** Sends a message (JSON text) to every page. */
  broadcast(text: string): void;
}

/** A running inspector server. */
export interface InspectorServer {
  /** The page to open, with its token (`http://127.0.0.1:7070/?token=…`). */
  readonly url: string;
  /** Where apps stream to (`ws://127.0.0.1:7070`): pass it to `createRolebox({ inspect: { url } })`. */
  readonly wsUrl: string;
  readonly port: number;
  /** The page's per-run token (also in `url`). */
  readonly token: string;
  /** The app connections that still have actors, or are connected. */
  apps(): InspectedApp[];
  /** The actors kept. */
  actors(): InspectedActor[];
  /** The events in the log, oldest first. */
  events(): InspectedEvent[];
  /** The pipeline runs kept (at most {@link TRACE_LIMIT}), oldest first. */
  traces(): InspectedTrace[];
  stats(): InspectorStats;
  /** Adds a pseudo-app (a store browsed, a run replayed) whose actors the page shows read-only. */
  addSource(source: InspectorSource): SourceHandle;
  stop(): Promise<void>;
}

const HERE = fileURLToPath(new URL('.', import.meta.url));
// The page is plain files, not compiled: compiled to dist/inspector/, it is served from the
// sources two levels up.
const PAGE_DIR =
  [join(HERE, 'page'), join(HERE, '..', '..', 'inspector', 'page')].find((dir) =>
    existsSync(join(dir, 'index.html')),
  ) ?? join(HERE, 'page');
const ELK_BUNDLE = createRequire(import.meta.url).resolve('elkjs/lib/elk.bundled.js');
const PAGE_TYPES: Readonly<Record<string, string>> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};
// The page's modules and styles, listed once: only these names are served (no path from a
// request ever reaches the file system).
const STATIC: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: join(PAGE_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  ...Object.fromEntries(
    (existsSync(PAGE_DIR) ? readdirSync(PAGE_DIR) : [])
      .filter((name) => /^[a-z][a-z0-9-]*\.(js|css)$/.test(name))
      .map((name) => [
        `/${name}`,
        {
          file: join(PAGE_DIR, name),
          type: PAGE_TYPES[name.split('.').at(-1) as string] as string,
        },
      ]),
  ),
  '/vendor/elk.bundled.js': { file: ELK_BUNDLE, type: 'text/javascript; charset=utf-8' },
};

interface App {
  readonly id: number;
  socket: WebSocket | undefined;
  name?: string;
  pid?: number;
  rolebox: boolean;
  leftAt?: number;
  readonly actorIds: Set<string>;
  readonly source?: InspectorSource;
}

interface KeptActor {
  readonly id: string;
  readonly app: App;
  readonly sessionId: string;
  readonly name: string;
  /** The public actor as JSON, without its snapshot and without the closing brace. */
  readonly meta: string;
  readonly metaBytes: number;
  snapshot: string;
  snapshotBytes: number;
}

/** A pipeline run's trace as kept: its JSON for pages, and what it counts in `keptBytes`. */
interface KeptTrace {
  readonly json: string;
  readonly bytes: number;
}

interface KeptEvent {
  readonly seq: number;
  readonly app: App;
  /** The server id (`<app>/<sessionId>`) of its target. */
  readonly target: string;
  readonly type: string;
  /** The entry as JSON, without its snapshot and mark (added when it is sent). */
  readonly json: string;
  bytes: number;
  snapshot?: string;
  fork?: string;
  evicted?: boolean;
}

interface Page {
  readonly id: number;
  readonly socket: WebSocket;
  /** Bytes that may wait unsent before the page counts as not reading. */
  allowance: number;
}

interface PendingCommand {
  readonly page: Page;
  /** The page's own id for the command, echoed back (pages pick theirs; they may clash). */
  readonly pageRequestId: string | number;
  readonly app: App;
  readonly timer: TimerHandle;
}

type Frame = Record<string, unknown>;

/**
 * Starts rolebox's offline inspector: a local HTTP server for the page (every script and
 * style served from here, no internet needed) and a WebSocket endpoint that speaks the
 * @statelyai/inspect protocol, so any XState v5 app can stream to it with
 * `createWebSocketInspector({ url })`. Apps connect at `/`, pages at `/ui?token=…`.
 *
 * Nothing a client sends can stop it: a page connects only from the server's own origin
 * and with its per-run token, a browser app only from an allowed origin; hostile frames
 * (not JSON, too big, too deep, unknown) are dropped with a logged reason; what it keeps is
 * bounded in bytes; commands go only to the app that reported the actor.
 * Throws: `invalid_argument` for an option out of range, an unknown option name, or an
 * address this machine cannot listen on (nothing is started); `port_in_use` when another
 * process holds the port.
 */
export async function startInspectorServer(
  options: InspectorServerOptions = {},
): Promise<InspectorServer> {
  const settings = checkOptions(options);
  const { historyLimit, actorLimit, maxKeptBytes, maxDepth, pageBufferBytes } = settings;
  const clock = options.clock ?? realClock;
  const log = options.log ?? ((message: string) => console.warn(`[rolebox inspector] ${message}`));
  const token = options.token ?? randomBytes(24).toString('base64url');
  const tokenBytes = Buffer.from(token);
  const appOrigins = new Set(options.appOrigins ?? []);
  const host = options.host ?? '127.0.0.1';

  const apps = new Map<number, App>();
  const actors = new Map<string, KeptActor>();
  /** Actors that may be forgotten to make room: finished, or their app is gone; oldest first. */
  const evictable = new Set<string>();
  const events = new Queue<KeptEvent>();
  const traces = new Queue<KeptTrace>();
  const pages = new Set<Page>();
  const pending = new Map<string, PendingCommand>();
  let nextApp = 1;
  let nextPage = 1;
  let nextCommand = 1;
  let frames = 0;
  let dropped = 0;
  let refused = 0;
  let keptBytes = 0;
  let peakKeptBytes = 0;
  let evictedEvents = 0;
  let nextSeq = 1;
  /** Per actor, its events still waiting for their snapshot, oldest first (bounded). */
  const awaitingSnapshot = new Map<string, KeptEvent[]>();

  // ---- Kept data, bounded in bytes ----

  const keep = (bytes: number) => {
    keptBytes += bytes;
    if (keptBytes > peakKeptBytes) peakKeptBytes = keptBytes;
  };

  const isGone = (app: App) => app.socket === undefined && app.source === undefined;

  const forgetActor = (actor: KeptActor) => {
    actors.delete(actor.id);
    evictable.delete(actor.id);
    actor.app.actorIds.delete(actor.id);
    awaitingSnapshot.delete(actor.id);
    keptBytes -= actor.metaBytes + actor.snapshotBytes + ACTOR_OVERHEAD_BYTES;
    if (isGone(actor.app) && actor.app.actorIds.size === 0) apps.delete(actor.app.id);
  };

  const evictOldestEvent = () => {
    const event = events.shift();
    if (!event) return;
    event.evicted = true;
    keptBytes -= event.bytes;
    // Oldest first here and in each actor's queue: if it still waits, it heads its queue,
    // and must not stay reachable (its JSON uncounted) once it has left the log.
    const waiting = awaitingSnapshot.get(event.target);
    if (waiting?.[0] === event) {
      waiting.shift();
      if (waiting.length === 0) awaitingSnapshot.delete(event.target);
    }
  };

  /** Forgets the oldest evictable actor other than `keepId`; false when there is none. */
  const evictOneActor = (keepId: string | undefined, forgotten: string[]): boolean => {
    for (const id of evictable) {
      if (id === keepId) continue;
      const actor = actors.get(id);
      if (actor) {
        forgetActor(actor);
        forgotten.push(id);
      } else evictable.delete(id);
      return true;
    }
    return false;
  };

  const announceForgotten = (forgotten: string[]) => {
    if (forgotten.length === 0) return;
    log(`forgot ${forgotten.length} finished or disconnected actor(s) to stay within bounds`);
    broadcast(`{"type":"forget","actors":${JSON.stringify(forgotten)}}`);
  };

  /**
   * Makes room for `bytes` more: the oldest events first, then finished or disconnected
   * actors (never `keepId`, the one being updated). Returns why it cannot, or undefined.
   */
  const makeRoom = (bytes: number, keepId?: string): string | undefined => {
    if (bytes > maxKeptBytes) return `${bytes} bytes is more than maxKeptBytes (${maxKeptBytes})`;
    let evicted = 0;
    while (keptBytes + bytes > maxKeptBytes && events.length > 0) {
      evictOldestEvent();
      evicted++;
    }
    if (evicted > 0) {
      // Logged on the first and then every thousandth, not for every frame of a long run.
      const before = evictedEvents;
      evictedEvents += evicted;
      if (before === 0 || Math.floor(before / 1000) !== Math.floor(evictedEvents / 1000))
        log(
          `dropped the oldest events to stay under ${maxKeptBytes} bytes (${evictedEvents} so far)`,
        );
    }
    // Then the oldest pipeline runs: like events, a record of the past.
    while (keptBytes + bytes > maxKeptBytes && traces.length > 0)
      keptBytes -= (traces.shift() as KeptTrace).bytes;
    const forgotten: string[] = [];
    while (keptBytes + bytes > maxKeptBytes && evictOneActor(keepId, forgotten));
    announceForgotten(forgotten);
    if (keptBytes + bytes > maxKeptBytes)
      return `inspector memory is full (${keptBytes} of ${maxKeptBytes} bytes kept for live actors)`;
    return undefined;
  };

  // ---- Pages ----

  /** Sends to a page unless it does not read: then it is disconnected (it reconnects afresh). */
  const sendToPage = (page: Page, text: string) => {
    const socket = page.socket;
    if (socket.readyState !== socket.OPEN) return;
    const waiting = socket.bufferedAmount;
    if (waiting > page.allowance) {
      log(
        `disconnected page ${page.id}: it does not read (${waiting} bytes waiting, pageBufferBytes ${pageBufferBytes})`,
      );
      dropPage(page);
      socket.terminate();
      return;
    }
    // Its first message, however big, has drained: from now on the plain allowance holds.
    if (waiting <= pageBufferBytes) page.allowance = pageBufferBytes;
    socket.send(text);
  };

  const broadcast = (text: string) => {
    for (const page of pages) sendToPage(page, text);
  };

  const dropPage = (page: Page) => {
    pages.delete(page);
    for (const [id, command] of pending) {
      if (command.page === page) {
        clock.clearTimeout(command.timer);
        pending.delete(id);
      }
    }
  };

  const actorJson = (actor: KeptActor) => `${actor.meta},"snapshot":${actor.snapshot}}`;
  const appJson = (app: App) => JSON.stringify(publicApp(app));
  // Both parts are JSON the server made (a snapshot it stringified, a mark it built).
  const eventJson = (event: KeptEvent) =>
    event.snapshot === undefined && event.fork === undefined
      ? event.json
      : `${event.json.slice(0, -1)}${event.snapshot === undefined ? '' : `,"snapshot":${event.snapshot}`}${event.fork === undefined ? '' : `,"fork":${event.fork}`}}`;

  // Built from the JSON kept for each record: nothing a client sent is stringified again,
  // so no frame can make a page's first message throw.
  const initMessage = () => {
    const appList = [...apps.values()].map(appJson).join(',');
    const actorList = [...actors.values()].map(actorJson).join(',');
    const eventList = events.values().map(eventJson).join(',');
    const traceList = traces
      .values()
      .map((trace) => trace.json)
      .join(',');
    return `{"type":"init","apps":[${appList}],"actors":[${actorList}],"events":[${eventList}],"traces":[${traceList}],"catalogue":${PAGE_CATALOGUE_JSON}}`;
  };

  const commandResult = (
    page: Page,
    requestId: string | number,
    ok: boolean,
    error?: string,
    expired?: boolean,
  ) =>
    sendToPage(
      page,
      JSON.stringify({
        type: 'command_result',
        requestId,
        ok,
        ...(error === undefined ? {} : { error }),
        ...(expired ? { expired: true } : {}),
      }),
    );

  const finishCommand = (id: string): PendingCommand | undefined => {
    const command = pending.get(id);
    if (!command) return undefined;
    pending.delete(id);
    clock.clearTimeout(command.timer);
    return command;
  };

  const expireCommand = (id: string, why: string) => {
    const command = finishCommand(id);
    if (!command) return;
    log(`command ${id} to app ${command.app.id} expired: ${why}`);
    commandResult(command.page, command.pageRequestId, false, why, true);
  };

  // ---- Frames from apps ----

  const onAppFrame = (app: App, data: RawData) => {
    frames++;
    const drop = (why: string) => {
      dropped++;
      log(`dropped a frame from app ${app.id}: ${why}`);
    };
    const parsed = parseClientJson(rawText(data), maxDepth);
    if (!parsed.ok) return drop(parsed.reason);
    const message = parsed.value as Frame;
    if (typeof message !== 'object' || message === null || typeof message.type !== 'string')
      return drop('no type');
    switch (message.type) {
      case 'rolebox.app':
        return onHello(app, message);
      case 'rolebox.command_result':
        return onCommandResult(app, message, drop);
      case 'rolebox.journal':
        return onJournalMark(app, message, drop);
      case 'rolebox.trace':
        return onTrace(app, message, drop);
      case '@xstate.actor':
      case '@xstate.snapshot':
      case '@xstate.event':
        break;
      default:
        return drop(`unknown type ${describeValue(message.type)}`);
    }
    const sessionId = message.sessionId;
    if (typeof sessionId !== 'string' || sessionId === '')
      return drop(`${message.type} without a sessionId`);
    if (sessionId.length > MAX_ID_LENGTH)
      return drop(`sessionId longer than ${MAX_ID_LENGTH} characters`);
    const id = `${app.id}/${sessionId}`;
    if (message.type === '@xstate.actor') return onActor(app, id, sessionId, message, drop);
    if (message.type === '@xstate.snapshot') return onSnapshot(id, sessionId, message, drop);
    return onEvent(app, id, sessionId, message, drop);
  };

  const onHello = (app: App, message: Frame) => {
    app.rolebox = true;
    if (typeof message.name === 'string') app.name = message.name.slice(0, 200);
    if (Number.isSafeInteger(message.pid)) app.pid = message.pid as number;
    broadcast(`{"type":"app","app":${appJson(app)}}`);
  };

  const onCommandResult = (app: App, message: Frame, drop: (why: string) => void) => {
    const id = typeof message.requestId === 'string' ? message.requestId : undefined;
    const command = id === undefined ? undefined : pending.get(id);
    // Only the app a command went to may answer it, and only once.
    if (!command || command.app !== app)
      return drop(
        `a result for ${describeValue(message.requestId)}, which app ${app.id} is not waiting on`,
      );
    finishCommand(id as string);
    const error = typeof message.error === 'string' ? message.error.slice(0, 2000) : undefined;
    commandResult(command.page, command.pageRequestId, message.ok === true, error);
  };

  const onActor = (
    app: App,
    id: string,
    sessionId: string,
    message: Frame,
    drop: (why: string) => void,
  ) => {
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
    const previous = actors.get(id);
    if (previous) forgetActor(previous);
    else if (actors.size >= actorLimit) {
      const forgotten: string[] = [];
      evictOneActor(undefined, forgotten);
      announceForgotten(forgotten);
      if (actors.size >= actorLimit)
        return drop(
          `actor ${describeValue(name)}: actorLimit (${actorLimit}) reached by live actors`,
        );
    }
    const full = makeRoom(metaBytes + snapshotBytes + ACTOR_OVERHEAD_BYTES);
    if (full) {
      // The record it replaced is gone as well: the page must not keep showing it.
      if (previous) broadcast(`{"type":"forget","actors":${JSON.stringify([id])}}`);
      return drop(`actor ${describeValue(name)}: ${full}`);
    }
    const actor: KeptActor = { id, app, sessionId, name, meta, metaBytes, snapshot, snapshotBytes };
    actors.set(id, actor);
    app.actorIds.add(id);
    keep(metaBytes + snapshotBytes + ACTOR_OVERHEAD_BYTES);
    if (isFinished(message.snapshot) || isGone(app)) evictable.add(id);
    broadcast(`{"type":"actor","actor":${actorJson(actor)}}`);
  };

  const onSnapshot = (
    id: string,
    sessionId: string,
    message: Frame,
    drop: (why: string) => void,
  ) => {
    const actor = actors.get(id);
    if (!actor) return drop(`snapshot for unknown actor ${sessionId}`);
    const snapshot = JSON.stringify(message.snapshot ?? null);
    const snapshotBytes = Buffer.byteLength(snapshot);
    const growth = snapshotBytes - actor.snapshotBytes;
    if (growth > 0) {
      const full = makeRoom(growth, id);
      if (full) return drop(`snapshot of ${describeValue(actor.name)}: ${full}`);
    }
    actor.snapshot = snapshot;
    actor.snapshotBytes = snapshotBytes;
    keep(growth);
    if (isFinished(message.snapshot)) evictable.add(id);
    broadcast(
      `{"type":"snapshot","id":${JSON.stringify(id)},"app":${actor.app.id},"sessionId":${JSON.stringify(sessionId)},"snapshot":${snapshot}}`,
    );
    attachSnapshot(id, message, snapshot, snapshotBytes);
  };

  /**
   * Keeps the snapshot as the one after its event: the oldest event of that actor still
   * waiting, of the type the frame names (an actor takes its events in order; one that never
   * got its snapshot, say it reached a stopped actor, gives way).
   */
  const attachSnapshot = (id: string, message: Frame, snapshot: string, bytes: number) => {
    const type = (message.event as { type?: unknown } | undefined)?.type;
    const waiting = awaitingSnapshot.get(id);
    if (typeof type !== 'string' || !waiting) return;
    const at = waiting.findIndex((event) => !event.evicted && event.type === type);
    if (at < 0) return;
    const event = waiting[at] as KeptEvent;
    waiting.splice(0, at + 1);
    if (waiting.length === 0) awaitingSnapshot.delete(id);
    // Over the bound the log's oldest go first, perhaps this very event: then it is not kept.
    if (makeRoom(bytes, id) || event.evicted) return;
    event.snapshot = snapshot;
    event.bytes += bytes;
    keep(bytes);
    broadcast(`{"type":"event_snapshot","seq":${event.seq},"snapshot":${snapshot}}`);
  };

  const onJournalMark = (app: App, message: Frame, drop: (why: string) => void) => {
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
    const recent = events.values().slice(-JOURNAL_MARK_SEARCH);
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
    if (bytes > 0 && makeRoom(bytes)) return drop('rolebox.journal: inspector memory is full');
    if (marked.evicted) return;
    marked.fork = fork;
    marked.bytes += bytes;
    keep(bytes);
    broadcast(`{"type":"event_mark","seq":${marked.seq},"fork":${fork}}`);
  };

  const onEvent = (
    app: App,
    id: string,
    sessionId: string,
    message: Frame,
    drop: (why: string) => void,
  ) => {
    const event = message.event as { type?: unknown } | undefined;
    if (typeof event?.type !== 'string') return drop('event without a type');
    if (event.type.length > MAX_NAME_LENGTH)
      return drop(`event type longer than ${MAX_NAME_LENGTH} characters`);
    const seq = nextSeq++;
    const json = JSON.stringify({
      seq,
      at: clock.now(),
      app: app.id,
      sessionId,
      ...shortId('sourceId', message.sourceId),
      type: event.type,
      event,
    });
    const bytes = Buffer.byteLength(json) + EVENT_OVERHEAD_BYTES;
    const full = makeRoom(bytes);
    if (full) return drop(`event ${describeValue(event.type)}: ${full}`);
    const kept: KeptEvent = { seq, app, target: id, type: event.type, json, bytes };
    events.push(kept);
    keep(bytes);
    while (events.length > historyLimit) evictOldestEvent();
    if (actors.has(id)) {
      const waiting = awaitingSnapshot.get(id) ?? [];
      waiting.push(kept);
      if (waiting.length > AWAITING_SNAPSHOT_LIMIT) waiting.shift();
      awaitingSnapshot.set(id, waiting);
    }
    broadcast(`{"type":"event","entry":${json}}`);
  };

  const onTrace = (app: App, message: Frame, drop: (why: string) => void) => {
    const { runId, trace } = message;
    if (typeof runId !== 'string' || runId === '' || runId.length > MAX_ID_LENGTH)
      return drop(`rolebox.trace without a runId of 1 to ${MAX_ID_LENGTH} characters`);
    const invalid = traceProblem(trace);
    if (invalid) return drop(`rolebox.trace ${describeValue(runId)}: ${invalid}`);
    const json = JSON.stringify({ at: clock.now(), app: app.id, runId, trace });
    const bytes = Buffer.byteLength(json) + EVENT_OVERHEAD_BYTES;
    if (bytes > MAX_TRACE_BYTES)
      return drop(
        `rolebox.trace ${describeValue(runId)}: ${bytes} bytes is more than ${MAX_TRACE_BYTES}`,
      );
    const full = makeRoom(bytes);
    if (full) return drop(`rolebox.trace ${describeValue(runId)}: ${full}`);
    traces.push({ json, bytes });
    keep(bytes);
    while (traces.length > TRACE_LIMIT) keptBytes -= (traces.shift() as KeptTrace).bytes;
    broadcast(`{"type":"trace","entry":${json}}`);
  };

  const onAppClosed = (app: App) => {
    app.socket = undefined;
    app.leftAt = clock.now();
    for (const id of app.actorIds) evictable.add(id);
    for (const [id, command] of pending)
      if (command.app === app) {
        finishCommand(id);
        commandResult(
          command.page,
          command.pageRequestId,
          false,
          `app ${app.id} disconnected before answering`,
        );
      }
    if (app.actorIds.size === 0) apps.delete(app.id);
    broadcast(`{"type":"app","app":${appJson(app)}}`);
  };

  // ---- Frames from pages ----

  const onPageFrame = (page: Page, data: RawData) => {
    const parsed = parseClientJson(rawText(data), maxDepth);
    if (!parsed.ok) return log(`dropped a frame from page ${page.id}: ${parsed.reason}`);
    const message = parsed.value as Frame | null;
    if (message?.type === 'replay') return onSourceFrame(page, message);
    if (message?.type !== 'command' || typeof message.actor !== 'string')
      return log(`dropped a frame from page ${page.id}: not a command`);
    const requestId = message.requestId;
    if (
      !(typeof requestId === 'string' && requestId.length <= MAX_ID_LENGTH) &&
      !Number.isSafeInteger(requestId)
    )
      return log(`dropped a frame from page ${page.id}: a command without a short requestId`);
    const pageRequestId = requestId as string | number;
    const refuse = (why: string) => commandResult(page, pageRequestId, false, why);
    const actor = actors.get(message.actor);
    if (!actor) return refuse(`no actor ${describeValue(message.actor)}`);
    const app = actor.app;
    if (app.source)
      return refuse(
        `${actor.name} is ${app.source.kind === 'store' ? 'stored' : 'replayed'}, read-only`,
      );
    if (!app.socket || app.socket.readyState !== app.socket.OPEN)
      return refuse(`app ${app.id}, which reported ${actor.name}, has disconnected`);
    if (!app.rolebox)
      return refuse(
        `app ${app.id}, which reported ${actor.name}, does not take commands (not a rolebox)`,
      );
    const id = `c${nextCommand++}`;
    // Bounded by count as well as by time: the oldest unanswered command gives way.
    for (const [oldest] of pending) {
      if (pending.size < settings.maxPendingCommands) break;
      expireCommand(
        oldest,
        `more than ${settings.maxPendingCommands} commands were waiting for an answer`,
      );
    }
    const text = JSON.stringify({
      type: 'rolebox.command',
      requestId: id,
      actor: actor.name,
      sessionId: actor.sessionId,
      command: message.command,
    });
    const timer = clock.setTimeout(
      () =>
        guard('command timeout', () =>
          expireCommand(id, `no answer from app ${app.id} within ${settings.commandTimeoutMs} ms`),
        ),
      settings.commandTimeoutMs,
    );
    pending.set(id, { page, pageRequestId, app, timer });
    app.socket.send(text);
  };

  const onSourceFrame = (page: Page, message: Frame) => {
    const source = [...apps.values()].find((app) => app.source?.onPageFrame)?.source;
    const why = source?.onPageFrame?.(message) ?? (source ? undefined : 'no replay running');
    if (why) log(`dropped a frame from page ${page.id}: ${why}`);
  };

  const addSource = (source: InspectorSource): SourceHandle => {
    const app: App = {
      id: nextApp++,
      socket: undefined,
      name: source.name.slice(0, 200),
      rolebox: false,
      actorIds: new Set(),
      source,
    };
    apps.set(app.id, app);
    broadcast(`{"type":"app","app":${appJson(app)}}`);
    // Our own records: a bound they overstep is logged like an app's frame.
    const drop = (why: string) => log(`source ${app.name}: ${why}`);
    return {
      app: app.id,
      actor: (actor) =>
        onActor(app, `${app.id}/${actor.sessionId}`, actor.sessionId, { ...actor }, drop),
      snapshot: (sessionId, snapshot) =>
        onSnapshot(`${app.id}/${sessionId}`, sessionId, { snapshot }, drop),
      forget: (sessionIds) => {
        const gone = sessionIds
          .map((sessionId) => actors.get(`${app.id}/${sessionId}`))
          .filter((actor) => actor !== undefined);
        for (const actor of gone) forgetActor(actor);
        if (gone.length > 0)
          broadcast(`{"type":"forget","actors":${JSON.stringify(gone.map((actor) => actor.id))}}`);
      },
      broadcast,
    };
  };

  // ---- Connections ----

  /** Runs a handler so that nothing a client sent can throw out of an event callback. */
  const guard = (where: string, handler: () => void) => {
    try {
      handler();
    } catch (error) {
      log(`${where}: ${(error as Error)?.message ?? String(error)}`);
    }
  };

  const appSockets = new WebSocketServer({ noServer: true, maxPayload: settings.maxFrameBytes });
  const pageSockets = new WebSocketServer({ noServer: true, maxPayload: PAGE_FRAME_BYTES });

  const onAppConnection = (socket: WebSocket) => {
    const app: App = { id: nextApp++, socket, rolebox: false, actorIds: new Set() };
    apps.set(app.id, app);
    socket.on('error', (error: Error & { code?: string }) =>
      guard(`app ${app.id}`, () => {
        dropped += error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? 1 : 0;
        log(
          error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'
            ? `app ${app.id} sent a frame over maxFrameBytes (${settings.maxFrameBytes}); connection closed`
            : `app ${app.id} socket error: ${error.message}`,
        );
      }),
    );
    socket.on('message', (data) =>
      guard(`a frame from app ${app.id}`, () => onAppFrame(app, data)),
    );
    socket.on('close', () => guard(`app ${app.id} closing`, () => onAppClosed(app)));
    broadcast(`{"type":"app","app":${appJson(app)}}`);
  };

  const onPageConnection = (socket: WebSocket) => {
    const page: Page = { id: nextPage++, socket, allowance: pageBufferBytes };
    pages.add(page);
    socket.on('error', (error) =>
      guard(`page ${page.id}`, () => log(`page ${page.id} socket error: ${error.message}`)),
    );
    socket.on('message', (data) =>
      guard(`a frame from page ${page.id}`, () => onPageFrame(page, data)),
    );
    socket.on('close', () => guard(`page ${page.id} closing`, () => dropPage(page)));
    const init = initMessage();
    page.allowance = pageBufferBytes + Buffer.byteLength(init);
    socket.send(init);
    for (const app of apps.values()) {
      const text = app.source?.pageMessage?.();
      if (text !== undefined) sendToPage(page, text);
    }
  };

  let ownOrigins = new Set<string>();
  const refuse = (socket: Duplex, status: 401 | 403, reason: string) => {
    refused++;
    log(`refused a connection: ${reason}`);
    const body = `${reason}\n`;
    socket.on('error', () => {});
    socket.once('finish', () => socket.destroy());
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  };

  const sameToken = (given: string) => {
    const bytes = Buffer.from(given);
    return bytes.length === tokenBytes.length && timingSafeEqual(bytes, tokenBytes);
  };

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://inspector');
    const origin = request.headers.origin;
    if (url.pathname === '/ui') {
      // A client that sends no Origin is not a browser (and could send any Origin it
      // liked): the token is what lets it in.
      if (origin !== undefined && !ownOrigins.has(origin) && !sameHostOrigin(origin, request, host))
        return refuse(
          socket,
          403,
          `page from origin ${describeValue(origin)} (only the inspector's own page may connect)`,
        );
      const given = url.searchParams.get('token');
      if (!given)
        return refuse(socket, 401, 'page without a token (open the URL the inspector printed)');
      if (!sameToken(given)) return refuse(socket, 401, 'page with a wrong token');
      pageSockets.handleUpgrade(request, socket, head, (ws) =>
        guard('page connection', () => onPageConnection(ws)),
      );
      return;
    }
    if (origin !== undefined && !appOrigins.has(origin))
      return refuse(
        socket,
        403,
        `app from browser origin ${describeValue(origin)} (allow it with appOrigins)`,
      );
    appSockets.handleUpgrade(request, socket, head, (ws) =>
      guard('app connection', () => onAppConnection(ws)),
    );
  };

  const http = createServer((request, response) => void serveStatic(request, response));
  http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      onUpgrade(request, socket, head);
    } catch (error) {
      log(`refused a connection: ${(error as Error).message}`);
      socket.destroy();
    }
  });

  const port = options.port ?? DEFAULT_INSPECTOR_PORT;
  try {
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, host, () => {
        http.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await stopServer(http, [appSockets, pageSockets]);
    throw listenError(error, host, port);
  }
  // Not a listen failure any more: say so instead of letting it end the process.
  http.on('error', (error) => log(`server error: ${error.message}`));
  const address = http.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  ownOrigins = originsOf(host, address.port);
  return {
    url: `http://${urlHost}:${address.port}/?token=${token}`,
    wsUrl: `ws://${urlHost}:${address.port}`,
    port: address.port,
    token,
    apps: () => [...apps.values()].map(publicApp),
    actors: () => [...actors.values()].map(inspectedActor),
    events: () => events.values().map((event) => JSON.parse(eventJson(event)) as InspectedEvent),
    traces: () => traces.values().map((trace) => JSON.parse(trace.json) as InspectedTrace),
    stats: () => ({
      frames,
      dropped,
      refused,
      keptBytes,
      peakKeptBytes,
      pendingCommands: pending.size,
      pages: pages.size,
    }),
    addSource,
    stop: async () => {
      for (const command of pending.values()) clock.clearTimeout(command.timer);
      pending.clear();
      await stopServer(http, [appSockets, pageSockets]);
    },
  };
}

type Settings = Required<
  Pick<
    InspectorServerOptions,
    | 'historyLimit'
    | 'actorLimit'
    | 'maxKeptBytes'
    | 'maxFrameBytes'
    | 'maxDepth'
    | 'pageBufferBytes'
    | 'commandTimeoutMs'
    | 'maxPendingCommands'
  >
>;

/** The bounds in effect; throws `invalid_argument` naming an option out of range. */
const INSPECTOR_OPTION_NAMES = Object.keys({
  port: true,
  host: true,
  token: true,
  appOrigins: true,
  historyLimit: true,
  actorLimit: true,
  maxKeptBytes: true,
  maxFrameBytes: true,
  maxDepth: true,
  pageBufferBytes: true,
  commandTimeoutMs: true,
  maxPendingCommands: true,
  clock: true,
  log: true,
} satisfies Record<keyof InspectorServerOptions, true>);

function checkOptions(options: InspectorServerOptions): Settings {
  checkOptionNames(options, INSPECTOR_OPTION_NAMES, 'startInspectorServer options');
  const settings = { ...INSPECTOR_DEFAULTS } as Record<keyof Settings, number>;
  for (const key of Object.keys(INSPECTOR_DEFAULTS) as (keyof Settings)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RoleboxError(
        'invalid_argument',
        `inspector option ${key} must be a positive whole number, got ${describeValue(value)}`,
        { option: key, value },
      );
    settings[key] = value;
  }
  if (options.token !== undefined && !/^[\w-]{16,256}$/.test(String(options.token)))
    throw new RoleboxError(
      'invalid_argument',
      `inspector option token must be 16 to 256 characters of A-Z a-z 0-9 _ -, got ${typeof options.token === 'string' ? `${options.token.length} character(s)` : describeValue(options.token)}`,
      { option: 'token' },
    );
  for (const origin of options.appOrigins ?? []) {
    let parsed: string | undefined;
    try {
      parsed = new URL(String(origin)).origin;
    } catch {}
    if (parsed !== origin || parsed === 'null')
      throw new RoleboxError(
        'invalid_argument',
        `inspector option appOrigins must list origins like http://localhost:5173, got ${describeValue(origin)}`,
        { option: 'appOrigins', value: origin },
      );
  }
  return settings;
}

/** The origins the page is served from: the host it binds, and its loopback aliases. */
function originsOf(host: string, port: number): Set<string> {
  const loopback = ['127.0.0.1', 'localhost', '::1'];
  const names = loopback.includes(host) ? loopback : [host];
  return new Set(names.map((name) => `http://${name.includes(':') ? `[${name}]` : name}:${port}`));
}

/**
 * Bound to every interface, the page may be opened under any of the machine's names: then
 * the page's own origin is the one it asked for (the token still has to match).
 */
function sameHostOrigin(origin: string, request: IncomingMessage, host: string): boolean {
  const anyInterface = host === '0.0.0.0' || host === '::' || host === '';
  return (
    anyInterface &&
    request.headers.host !== undefined &&
    origin === `http://${request.headers.host}`
  );
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Why a `rolebox.trace` is not one the page can draw (a trace projection, version 1, of
 * bounded size), or undefined.
 */
function traceProblem(trace: unknown): string | undefined {
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

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString();
  if (Array.isArray(data)) return Buffer.concat(data).toString();
  return Buffer.from(data).toString();
}

function publicApp(app: App): InspectedApp {
  return {
    id: app.id,
    ...(app.name === undefined ? {} : { name: app.name }),
    ...(app.pid === undefined ? {} : { pid: app.pid }),
    rolebox: app.rolebox,
    connected: app.socket !== undefined || app.source !== undefined,
    ...(app.leftAt === undefined ? {} : { leftAt: app.leftAt }),
    ...(app.source ? { source: app.source.kind } : {}),
  };
}

function inspectedActor(actor: KeptActor): InspectedActor {
  const parsed = JSON.parse(`${actor.meta},"snapshot":${actor.snapshot}}`) as Omit<
    InspectedActor,
    'gone'
  >;
  return { ...parsed, gone: actor.app.socket === undefined && actor.app.source === undefined };
}

async function serveStatic(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '/').split('?')[0] as string;
  if (path === '/favicon.ico') {
    response.writeHead(204).end();
    return;
  }
  const entry = STATIC[path];
  if (!entry || request.method !== 'GET') {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    return;
  }
  try {
    const body = await readFile(entry.file);
    // The page's URL carries its token: never send it on as a referrer.
    response
      .writeHead(200, {
        'content-type': entry.type,
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
      })
      .end(body);
  } catch (error) {
    response
      .writeHead(500, { 'content-type': 'text/plain' })
      .end(`cannot read ${path}: ${(error as Error).message}`);
  }
}

async function stopServer(http: Server, servers: WebSocketServer[]): Promise<void> {
  for (const sockets of servers) {
    for (const socket of sockets.clients) socket.terminate();
    await new Promise<void>((resolve) => sockets.close(() => resolve()));
  }
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}
