import { createInspector } from '@statelyai/inspect';
import safeStableStringify from 'safe-stable-stringify';
import { WebSocketServer } from 'ws';
import type { InspectionEvent, Observer } from 'xstate';
import { nodeBuiltin, warnHost } from '../base/host-process.js';
import { RoleboxError } from '../errors.js';
import { namingActorsBySystemId } from './inspector-connection.js';

/** Where a Node rolebox serves Stately viewers (`inspect: { stately: { port } }`). */
export interface StatelyViewersOptions {
  readonly port: number;
  /** The address it listens on (default 127.0.0.1). */
  readonly host?: string;
  /** The Stately inspector page the served page embeds (default https://stately.ai/inspect). */
  readonly url?: string;
}

/** The server Stately viewers connect to, while the rolebox runs. */
export interface StatelyViewers {
  readonly observer: Observer<InspectionEvent>;
  /** Closes the server and every viewer's socket. */
  stop(): Promise<void>;
}

/** One Stately frame (`@xstate.actor`, `@xstate.snapshot`, `@xstate.event`) as sent. */
interface StatelyFrame {
  readonly type: string;
  readonly sessionId?: string;
  readonly snapshot?: unknown;
  readonly [key: string]: unknown;
}

/** An actor a viewer that joins later is told about: its announcement and its latest snapshot. */
interface KnownActor {
  announced: StatelyFrame;
  snapshot: unknown;
  readonly ref: { getSnapshot(): { status?: string } };
}

const stringify = safeStableStringify.configure({ maximumDepth: 10 });

/** Actors kept before finished ones are looked for and dropped (then twice the live ones). */
const PRUNE_FLOOR = 1_000;

/** The page a person opens: Stately's inspector in a frame, fed from this server's socket. */
function viewerPage(inspectorUrl: string): string {
  const url = JSON.stringify(inspectorUrl);
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>rolebox · Stately inspector</title>
<style>html,body,iframe{margin:0;height:100%;width:100%;border:0}</style></head>
<body><iframe id="stately"></iframe><script>
const frame = document.getElementById('stately');
frame.src = ${url};
const waiting = [];
let ready = false;
// The inspector says it is ready in a message of its own; frames wait for it.
addEventListener('message', (e) => {
  if (e.data && e.data.type === '@statelyai.connected') {
    ready = true;
    for (const data of waiting.splice(0)) frame.contentWindow.postMessage(data, '*');
  }
});
const socket = new WebSocket('ws://' + location.host);
socket.onmessage = (e) => {
  const data = JSON.parse(e.data);
  if (ready) frame.contentWindow.postMessage(data, '*');
  else waiting.push(data);
};
</script></body></html>`;
}

/**
 * Serves Stately viewers from a Node rolebox: `createWebSocketReceiver({ server })` of
 * @statelyai/inspect, or a person at `http://<host>:<port>` (Stately's inspector in a frame).
 * A viewer that connects at any time is first told every live actor — its definition and
 * its current snapshot, parents before children — then gets the live frames, so one that
 * joins after the run sees the system as it is, not the tail of its traffic.
 * Throws: `invalid_argument` in a Node before 20.16 (no `getBuiltinModule`).
 */
export function serveStatelyViewers(options: StatelyViewersOptions): StatelyViewers {
  const http = nodeBuiltin<typeof import('node:http')>('node:http');
  if (http === undefined)
    throw new RoleboxError(
      'invalid_argument',
      'inspect.stately.port needs Node ≥ 20.16 (for getBuiltinModule); use { url } with `rolebox inspect`',
    );
  const actors = new Map<string, KnownActor>();
  // The actor refs of announcements still on their way (@statelyai/inspect converts a turn later).
  const pendingRefs = new Map<string, KnownActor['ref']>();
  const page = viewerPage(options.url ?? 'https://stately.ai/inspect');
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  const viewers = new WebSocketServer({ server });
  const broadcast = (text: string) => {
    for (const viewer of viewers.clients) if (viewer.readyState === 1) viewer.send(text);
  };

  // Finished actors are dropped now and then, not only when a viewer connects: a rolebox
  // that runs for days with nobody watching keeps only what is live.
  let pruneAbove = PRUNE_FLOOR;
  const prune = () => {
    for (const [id, known] of actors)
      if (known.ref.getSnapshot().status !== 'active') actors.delete(id);
    pruneAbove = Math.max(PRUNE_FLOOR, actors.size * 2);
  };

  const record = (frame: StatelyFrame) => {
    const id = frame.sessionId;
    if (typeof id === 'string') {
      if (frame.type === '@xstate.actor') {
        const ref = pendingRefs.get(id);
        pendingRefs.delete(id);
        if (ref) actors.set(id, { announced: frame, snapshot: frame.snapshot, ref });
        if (actors.size > pruneAbove) prune();
      } else if (frame.type === '@xstate.snapshot') {
        const known = actors.get(id);
        if (known) known.snapshot = frame.snapshot;
      }
    }
    broadcast(stringify(frame) as string);
  };

  viewers.on('connection', (socket) => {
    // An actor that stopped or finished is gone from the system: forgotten, not announced.
    prune();
    for (const known of actors.values())
      socket.send(stringify({ ...known.announced, snapshot: known.snapshot }) as string);
  });

  const inspector = createInspector(
    { send: (frame) => record(frame as unknown as StatelyFrame), start() {}, stop() {} },
    { autoStart: true },
  );
  const named = namingActorsBySystemId(inspector.inspect as Observer<InspectionEvent>);
  // The socket server passes its HTTP server's errors on: one listener for both. A port it
  // cannot use is warned about once (start does not wait for the port), never thrown.
  let warned = false;
  viewers.on('error', (error) => {
    if (!warned)
      warnHost(
        `the Stately viewers' port ${options.port} cannot be used (${error.message}); no viewer can connect`,
      );
    warned = true;
  });
  server.listen(options.port, options.host ?? '127.0.0.1');
  server.unref();
  return {
    observer: {
      next(event) {
        if (event.type === '@xstate.actor') {
          const ref = event.actorRef as unknown as KnownActor['ref'] & { sessionId: string };
          pendingRefs.set(ref.sessionId, ref);
        }
        named.next?.(event);
      },
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const viewer of viewers.clients) viewer.terminate();
        viewers.close();
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}
