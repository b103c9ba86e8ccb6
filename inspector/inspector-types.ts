// The inspector's public records and options: what {@link startInspectorServer} takes and
// what a running server reports. Re-exported by `rolebox/inspector` (server.ts).

import type { Clock } from '../src/ports/clock.js';
import type { Chart } from './chart.js';

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
  /**
   * Adds an event sent to its actor `sessionId` to the log (a replay's recorded events), at
   * `at` (default: now). Returns its number in the log, or undefined when it was dropped.
   */
  event(sessionId: string, event: { readonly type: string }, at?: number): number | undefined;
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
