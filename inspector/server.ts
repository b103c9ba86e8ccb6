import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type WebSocket, WebSocketServer } from 'ws';
import { RUNTIME_EVENT_TYPES } from '../src/session/runtime-event-schema.js';
import { SIGNAL_TYPES } from '../src/signal/catalogue.js';
import { type Chart, chartFromConfig } from './chart.js';

/** What the page's controls offer for rolebox actors: the agent signals and the session's runtime events. */
const PAGE_CATALOGUE = { signals: SIGNAL_TYPES, runtimeEvents: RUNTIME_EVENT_TYPES };

/** What the inspector knows of one actor. */
export interface InspectedActor {
  /** XState's session id of the actor (unique per run). */
  readonly sessionId: string;
  /** Its id in its parent (for rolebox actors, its systemId: `session:S`, `fn:S:name`, `loop:…`). */
  readonly name: string;
  readonly parentId?: string;
  readonly rootId?: string;
  /** The statechart to draw, when the actor is a state machine. */
  readonly chart?: Chart;
  /** The latest snapshot (plain JSON). */
  snapshot: unknown;
  readonly createdAt: number;
  /** Which app connection reported it (commands go back there). */
  readonly connection: number;
}

/** One event in the log. */
export interface InspectedEvent {
  readonly at: number;
  /** The actor it was sent to, and the one that sent it, when known. */
  readonly sessionId: string;
  readonly sourceId?: string;
  readonly type: string;
  readonly event: unknown;
}

/** Options of {@link startInspectorServer}. */
export interface InspectorServerOptions {
  /** TCP port (default 7070; 0 picks a free one). */
  readonly port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  readonly host?: string;
  /** Most events kept in the log (default 2 000). */
  readonly historyLimit?: number;
  /** Most actors kept (default 10 000; the oldest go first). */
  readonly actorLimit?: number;
  /** Where dropped frames and errors are reported (default: console.warn). */
  readonly log?: (message: string) => void;
}

/** A running inspector server. */
export interface InspectorServer {
  /** The page to open (`http://127.0.0.1:7070/`). */
  readonly url: string;
  /** Where apps stream to (`ws://127.0.0.1:7070`): pass it to `createRolebox({ inspect: { url } })`. */
  readonly wsUrl: string;
  readonly port: number;
  /** The actors seen so far. */
  actors(): InspectedActor[];
  /** The events in the log, oldest first. */
  events(): InspectedEvent[];
  /** Frames received and dropped (malformed). */
  stats(): { frames: number; dropped: number };
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
const STATIC: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: join(PAGE_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  '/app.js': { file: join(PAGE_DIR, 'app.js'), type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: join(PAGE_DIR, 'app.css'), type: 'text/css; charset=utf-8' },
  '/vendor/elk.bundled.js': { file: ELK_BUNDLE, type: 'text/javascript; charset=utf-8' },
};

/**
 * Starts rolebox's offline inspector: a local HTTP server for the page (every script and
 * style served from here, no internet needed) and a WebSocket endpoint that speaks the
 * @statelyai/inspect protocol, so any XState v5 app can stream to it with
 * `createWebSocketInspector({ url })`. Apps connect at `/`, pages at `/ui`. Malformed
 * frames are dropped with a logged reason and never break the server.
 */
export async function startInspectorServer(
  options: InspectorServerOptions = {},
): Promise<InspectorServer> {
  const historyLimit = options.historyLimit ?? 2_000;
  const actorLimit = options.actorLimit ?? 10_000;
  const log = options.log ?? ((message: string) => console.warn(`[rolebox inspector] ${message}`));
  const actors = new Map<string, InspectedActor>();
  const events: InspectedEvent[] = [];
  const pages = new Set<WebSocket>();
  const apps = new Map<number, WebSocket>();
  const pendingCommands = new Map<string, WebSocket>();
  let nextConnection = 1;
  let frames = 0;
  let dropped = 0;

  const broadcast = (message: unknown) => {
    const text = JSON.stringify(message);
    for (const page of pages) if (page.readyState === page.OPEN) page.send(text);
  };

  const onAppFrame = (connection: number, data: string) => {
    frames++;
    const drop = (why: string) => {
      dropped++;
      log(`dropped a frame from app ${connection}: ${why}`);
    };
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(data);
    } catch {
      return drop('not JSON');
    }
    if (typeof message !== 'object' || message === null || typeof message.type !== 'string')
      return drop('no type');
    const sessionId = message.sessionId;
    if (message.type === 'rolebox.command_result') {
      const requestId = String(message.requestId);
      const page = pendingCommands.get(requestId);
      pendingCommands.delete(requestId);
      if (page?.readyState === page?.OPEN)
        page?.send(
          JSON.stringify({
            type: 'command_result',
            requestId,
            ok: message.ok,
            error: message.error,
          }),
        );
      return;
    }
    if (typeof sessionId !== 'string' || sessionId === '')
      return drop(`${message.type} without a sessionId`);
    switch (message.type) {
      case '@xstate.actor': {
        const actor: InspectedActor = {
          sessionId,
          name: typeof message.name === 'string' ? message.name : sessionId,
          ...(typeof message.parentId === 'string' ? { parentId: message.parentId } : {}),
          ...(typeof message.rootId === 'string' ? { rootId: message.rootId } : {}),
          ...withChart(
            chartFromConfig(
              typeof message.definition === 'string' ? message.definition : undefined,
            ),
          ),
          snapshot: message.snapshot ?? null,
          createdAt: Date.now(),
          connection,
        };
        actors.set(sessionId, actor);
        if (actors.size > actorLimit) actors.delete(actors.keys().next().value as string);
        broadcast({ type: 'actor', actor: publicActor(actor) });
        return;
      }
      case '@xstate.snapshot': {
        const actor = actors.get(sessionId);
        if (!actor) return drop(`snapshot for unknown actor ${sessionId}`);
        actor.snapshot = message.snapshot ?? null;
        broadcast({ type: 'snapshot', sessionId, snapshot: actor.snapshot });
        return;
      }
      case '@xstate.event': {
        const event = message.event as { type?: unknown } | undefined;
        if (typeof event?.type !== 'string') return drop('event without a type');
        const entry: InspectedEvent = {
          at: Date.now(),
          sessionId,
          ...(typeof message.sourceId === 'string' ? { sourceId: message.sourceId } : {}),
          type: event.type,
          event,
        };
        events.push(entry);
        if (events.length > historyLimit) events.splice(0, events.length - historyLimit);
        broadcast({ type: 'event', entry });
        return;
      }
      default:
        return drop(`unknown type ${JSON.stringify(message.type)}`);
    }
  };

  const onPageFrame = (page: WebSocket, data: string) => {
    let message: { type?: unknown; requestId?: unknown; actor?: unknown; command?: unknown };
    try {
      message = JSON.parse(data);
    } catch {
      return log('dropped a page frame: not JSON');
    }
    if (message.type !== 'command' || typeof message.actor !== 'string')
      return log('dropped a page frame: not a command');
    const requestId = String(message.requestId ?? Math.random());
    const target = [...actors.values()].find(
      (actor) => actor.name === message.actor || actor.sessionId === message.actor,
    );
    const app = target ? apps.get(target.connection) : undefined;
    if (!app || app.readyState !== app.OPEN) {
      page.send(
        JSON.stringify({
          type: 'command_result',
          requestId,
          ok: false,
          error: `no running app owns actor ${message.actor}`,
        }),
      );
      return;
    }
    pendingCommands.set(requestId, page);
    app.send(
      JSON.stringify({
        type: 'rolebox.command',
        requestId,
        actor: target?.name,
        command: message.command,
      }),
    );
  };

  const http = createServer((request, response) => void serveStatic(request, response));
  const sockets = new WebSocketServer({ server: http });
  sockets.on('connection', (socket, request) => {
    socket.on('error', (error) => log(`socket error: ${error.message}`));
    if (request.url?.startsWith('/ui')) {
      pages.add(socket);
      socket.send(
        JSON.stringify({
          type: 'init',
          actors: [...actors.values()].map(publicActor),
          events,
          catalogue: PAGE_CATALOGUE,
        }),
      );
      socket.on('message', (data) => onPageFrame(socket, String(data)));
      socket.on('close', () => pages.delete(socket));
      return;
    }
    const connection = nextConnection++;
    apps.set(connection, socket);
    socket.on('message', (data) => {
      try {
        onAppFrame(connection, String(data));
      } catch (error) {
        dropped++;
        log(`dropped a frame from app ${connection}: ${(error as Error).message}`);
      }
    });
    socket.on('close', () => apps.delete(connection));
  });

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 7070, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = http.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';
  return {
    url: `http://${host}:${address.port}/`,
    wsUrl: `ws://${host}:${address.port}`,
    port: address.port,
    actors: () => [...actors.values()],
    events: () => [...events],
    stats: () => ({ frames, dropped }),
    stop: () => stopServer(http, sockets),
  };
}

function withChart(chart: Chart | undefined): { chart?: Chart } {
  return chart ? { chart } : {};
}

/** An actor as the page receives it (without the server's bookkeeping). */
function publicActor(actor: InspectedActor) {
  const { connection: _connection, ...rest } = actor;
  return rest;
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
    response.writeHead(200, { 'content-type': entry.type, 'cache-control': 'no-store' }).end(body);
  } catch (error) {
    response
      .writeHead(500, { 'content-type': 'text/plain' })
      .end(`cannot read ${path}: ${(error as Error).message}`);
  }
}

async function stopServer(http: Server, sockets: WebSocketServer): Promise<void> {
  for (const socket of sockets.clients) socket.terminate();
  await new Promise<void>((resolve) => sockets.close(() => resolve()));
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}
