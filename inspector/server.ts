/**
 * `rolebox/inspector`: the inspector server behind `rolebox inspect` (a page that shows live
 * actors, and sends their events back when asked).
 *
 * @module rolebox/inspector
 */

import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { realClock } from '../src/adapters/real-clock.js';
import { listenError } from '../src/base/listen-error.js';
import { AppProtocol } from './app-protocol.js';
import { guarded } from './guarded.js';
import type {
  InspectedEvent,
  InspectedTrace,
  InspectorServer,
  InspectorServerOptions,
} from './inspector-types.js';
import { eventJson, inspectedActor, publicApp } from './kept-records.js';
import { KeptStore } from './kept-store.js';
import { PageCommands } from './page-commands.js';
import { Pages } from './pages.js';
import { checkOptions, DEFAULT_INSPECTOR_PORT } from './server-options.js';
import { addSource, sourceFrame, sourcePageMessages } from './sources.js';
import { serveStatic } from './static-files.js';
import { UpgradeGate } from './upgrade.js';

export type {
  InspectedActor,
  InspectedApp,
  InspectedEvent,
  InspectedTrace,
  InspectorServer,
  InspectorServerOptions,
  InspectorSource,
  InspectorStats,
  SourceActor,
  SourceHandle,
} from './inspector-types.js';
export { MAX_TRACE_BYTES, TRACE_LIMIT } from './kept-store.js';
export { DEFAULT_INSPECTOR_PORT, INSPECTOR_DEFAULTS } from './server-options.js';

/** The largest frame a page may send: its commands are small. */
const PAGE_FRAME_BYTES = 1024 * 1024;

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
  const clock = options.clock ?? realClock;
  const log = options.log ?? ((message: string) => console.warn(`[rolebox inspector] ${message}`));
  const token = options.token ?? randomBytes(24).toString('base64url');
  const host = options.host ?? '127.0.0.1';

  // Each part is told only what it needs; `pages` and `commands` name each other through
  // callbacks that run after both exist.
  const broadcast = (text: string) => pages.broadcast(text);
  const store = new KeptStore({ ...settings, clock, log, broadcast });
  const commands: PageCommands = new PageCommands({
    ...settings,
    clock,
    log,
    send: (page, text) => pages.send(page, text),
  });
  const pages: Pages = new Pages({
    ...settings,
    log,
    firstMessages: () => ({ init: store.initMessage(), after: sourcePageMessages(store) }),
    onFrame: (page, frame) => {
      if (frame?.type !== 'replay') return commands.fromPage(page, frame, store.actors);
      const why = sourceFrame(store, frame);
      if (why) log(`dropped a frame from page ${page.id}: ${why}`);
    },
    onDropped: (page) => commands.pageDropped(page),
  });
  const appProtocol = new AppProtocol({ ...settings, store, commands, clock, log, broadcast });

  const appSockets = new WebSocketServer({ noServer: true, maxPayload: settings.maxFrameBytes });
  const pageSockets = new WebSocketServer({ noServer: true, maxPayload: PAGE_FRAME_BYTES });
  const gate = new UpgradeGate({
    token,
    appOrigins: new Set(options.appOrigins ?? []),
    host,
    log,
    acceptPage: (request, socket, head) =>
      pageSockets.handleUpgrade(request, socket, head, (ws) =>
        guarded(log, 'page connection', () => pages.connect(ws)),
      ),
    acceptApp: (request, socket, head) =>
      appSockets.handleUpgrade(request, socket, head, (ws) =>
        guarded(log, 'app connection', () => appProtocol.connect(ws)),
      ),
  });
  const http = createServer((request, response) => void serveStatic(request, response));
  http.on('upgrade', (request, socket, head) => gate.upgrade(request, socket, head));

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
  gate.listening(address.port);
  return {
    url: `http://${urlHost}:${address.port}/?token=${token}`,
    wsUrl: `ws://${urlHost}:${address.port}`,
    port: address.port,
    token,
    apps: () => [...store.apps.values()].map(publicApp),
    actors: () => [...store.actors.values()].map(inspectedActor),
    events: () =>
      store.events.values().map((event) => JSON.parse(eventJson(event)) as InspectedEvent),
    traces: () => store.traces.values().map((trace) => JSON.parse(trace.json) as InspectedTrace),
    stats: () => ({
      frames: appProtocol.frames,
      dropped: appProtocol.dropped,
      refused: gate.refused,
      keptBytes: store.keptBytes,
      peakKeptBytes: store.peakKeptBytes,
      pendingCommands: commands.size,
      pages: pages.size,
    }),
    addSource: (source) => addSource(store, source, log, broadcast),
    stop: async () => {
      commands.stop();
      await stopServer(http, [appSockets, pageSockets]);
    },
  };
}

async function stopServer(http: Server, servers: WebSocketServer[]): Promise<void> {
  for (const sockets of servers) {
    for (const socket of sockets.clients) socket.terminate();
    await new Promise<void>((resolve) => sockets.close(() => resolve()));
  }
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}
