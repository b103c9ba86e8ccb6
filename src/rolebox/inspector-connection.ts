import { createInspector } from '@statelyai/inspect';
import safeStableStringify from 'safe-stable-stringify';
import NodeWebSocket from 'ws';
import type { InspectionEvent, Observer } from 'xstate';
import { currentArgv, currentPid, warnHost } from '../base/host-process.js';
import type { RemoteCommand } from '../session/commands.js';

/**
 * The page's "fork here": `rb.fork(<the actor's session>, { atEvent, as })`, where `atEvent`
 * is the index the app sent in its `rolebox.journal` frame for that event.
 */
export interface InspectorForkCommand {
  readonly kind: 'fork';
  readonly atEvent: number;
  readonly as?: string;
}

/** A command the inspector page sends to an actor of a running rolebox. */
export type InspectorCommand = RemoteCommand | InspectorForkCommand;

/** Runs a command (perhaps asynchronously); throws or rejects (a RoleboxError, typically) to refuse it. */
export type InspectorCommandHandler = (actor: string, command: InspectorCommand) => unknown;

/**
 * The inspection observer that reports each actor to an inspector under its systemId.
 * @statelyai/inspect names an actor by its id in its parent, which is local and repeats for
 * rolebox's children (`fn:<name>`, `loop`: see `functionChildId`); the systemId
 * (`fn:<sessionId>:<name>`, `loop:<loopId>`) is what the page shows and sends commands to.
 */
export function namingActorsBySystemId(
  inspect: Observer<InspectionEvent>,
): Observer<InspectionEvent> {
  return {
    next(event) {
      if (event.type !== '@xstate.actor') return inspect.next?.(event);
      const ref = event.actorRef as { id?: string; systemId?: string };
      // XState announces an actor before it sets its systemId; @statelyai/inspect reads the
      // name a turn later, so it is read then. The real actor stays the prototype: its
      // snapshot, logic and parent read through.
      const named = Object.create(ref, { id: { get: () => ref.systemId ?? ref.id } });
      inspect.next?.({ ...event, actorRef: named });
    },
  };
}

/** A live connection to an inspector server. */
export interface WebSocketInspector {
  /** The XState inspection observer to pass to the actor system. */
  readonly observer: Observer<InspectionEvent>;
  /**
   * Delivers what is still buffered (waiting at most {@link STOP_FLUSH_MS} for the socket to
   * connect and drain), then closes it and cancels any reconnection; events after this are
   * dropped. Frames it could not deliver are counted in one warning.
   */
  stop(): Promise<void>;
  /**
   * Tells the server that the journal recorded entry `index` (0-based among session
   * `sessionId`'s entries, as `rb.fork` counts them): the event `eventType` delivered to the
   * actor XState calls `actor`. Deferred as @statelyai/inspect defers that event's frame, so
   * it follows it and the server marks that very event.
   */
  markJournal(sessionId: string, index: number, actor: string, eventType: string): void;
  /**
   * Sends a finished pipeline run's trace (a `rolebox.trace` frame: `{ runId, trace }`) on
   * the same socket, buffered like the actors' frames; the page draws it as a graph.
   */
  sendTrace(runId: string, trace: unknown): void;
}

const stringify = safeStableStringify.configure({ maximumDepth: 10 });

/**
 * The largest frame sent; the inspector server closes a connection that sends a bigger one
 * (its `maxFrameBytes`, 16 MiB by default), which would cost the app its identity there.
 */
export const MAX_INSPECTOR_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * Frames kept while the socket connects (the oldest go first beyond it): enough for the
 * root's and its first sessions' announcements, or a page never learns of the root.
 */
export const CONNECTING_BUFFER_FRAMES = 5_000;

/**
 * How long `stop()` waits for the inspector to take the frames still buffered: a host that
 * stops right after its work (a script) must not lose the session it just ran, nor hang when
 * no inspector runs.
 */
export const STOP_FLUSH_MS = 2_000;

/** What the app tells the server first: it takes commands, and a name to show (`rolebox demo`). */
function helloFrame(): string {
  const argv = currentArgv();
  const script = (argv[1] ?? 'node')
    .split(/[\\/]/)
    .at(-1)
    ?.replace(/\.[cm]?[jt]s$/, '');
  const name = [script, argv[2]].filter(Boolean).join(' ');
  return JSON.stringify({ type: 'rolebox.app', name, pid: currentPid() });
}

/** Resolves after the callbacks @statelyai/inspect has already scheduled have run. */
function nextIdleTurn(): Promise<void> {
  const idle = (globalThis as { requestIdleCallback?: (callback: () => void) => void })
    .requestIdleCallback;
  return new Promise((resolve) => {
    if (idle !== undefined) idle(() => resolve());
    else setTimeout(resolve, 0);
  });
}

/** A WebSocket as both the page's and `ws` offer it (the WHATWG interface). */
type InspectorSocket = Pick<WebSocket, 'send' | 'close' | 'readyState' | 'addEventListener'>;

const OPEN = 1;

/** In a page the browser's WebSocket (`ws` does not run there), in Node `ws`. */
function openSocket(url: string): InspectorSocket {
  const inPage = typeof (globalThis as { window?: unknown }).window !== 'undefined';
  if (inPage && typeof globalThis.WebSocket === 'function') return new globalThis.WebSocket(url);
  return new NodeWebSocket(url) as unknown as InspectorSocket;
}

/**
 * Streams a rolebox's actors to an inspector server that speaks the @statelyai/inspect
 * WebSocket protocol (rolebox's own, or Stately's), and takes the page's commands on the
 * same socket. It says `rolebox.app` first (its name and pid), so the server knows it takes
 * commands; a frame over {@link MAX_INSPECTOR_FRAME_BYTES} is not sent. Events wait in a
 * bounded buffer ({@link CONNECTING_BUFFER_FRAMES}) while the socket connects; a lost
 * connection is retried every second (the first failure is warned once) until `stop()`, which
 * delivers what is buffered within a bound and cancels everything, so a stopped rolebox never
 * keeps its process alive.
 */
export function connectWebSocketInspector(
  url: string,
  onCommand: InspectorCommandHandler,
): WebSocketInspector {
  const buffer: string[] = [];
  let socket: InspectorSocket | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  // closing: stop() has begun (no more reconnecting); stopped: nothing more is sent.
  let closing = false;
  let stopped = false;
  let warned = false;
  // Settles whoever waits in stop() for the socket to open (or to fail).
  let onSettled: (() => void) | undefined;
  const warnOnce = (message: string) => {
    if (warned) return;
    warned = true;
    warnHost(message);
  };

  const connect = () => {
    if (closing) return;
    const ws = openSocket(url);
    socket = ws;
    ws.addEventListener('open', () => {
      ws.send(helloFrame());
      for (const frame of buffer.splice(0)) ws.send(frame);
      onSettled?.();
    });
    ws.addEventListener(
      'message',
      (event) => void answerCommand(ws, String(event.data), onCommand),
    );
    ws.addEventListener('error', () => {
      warnOnce(
        `the inspector at ${url} cannot be reached (is \`rolebox inspect\` running?); retrying every second`,
      );
    });
    ws.addEventListener('close', () => {
      onSettled?.();
      if (closing) return;
      retry = setTimeout(connect, 1_000);
      // In Node a retry alone must not keep the process alive (a page has no unref).
      (retry as { unref?: () => void }).unref?.();
    });
  };

  const deliver = (frame: string) => {
    if (socket?.readyState === OPEN) socket.send(frame);
    else {
      buffer.push(frame);
      if (buffer.length > CONNECTING_BUFFER_FRAMES) buffer.shift();
    }
  };

  const sendFrame = (event: unknown) => {
    if (stopped) return;
    const frame = stringify(event) as string;
    // Dropped whole (a cut frame is not JSON) and here, so the connection stays open.
    if (
      frame.length > MAX_INSPECTOR_FRAME_BYTES / 3 &&
      new TextEncoder().encode(frame).length > MAX_INSPECTOR_FRAME_BYTES
    )
      return;
    deliver(frame);
  };

  const inspector = createInspector(
    {
      send: sendFrame,
      start: connect,
      stop() {},
    },
    { autoStart: true },
  );
  inspector.start();
  return {
    observer: namingActorsBySystemId(inspector.inspect as Observer<InspectionEvent>),
    markJournal(sessionId, index, actor, eventType) {
      const frame = JSON.stringify({
        type: 'rolebox.journal',
        sessionId,
        index,
        actor,
        event: eventType,
      });
      void nextIdleTurn().then(() => {
        if (!stopped) deliver(frame);
      });
    },
    sendTrace(runId, trace) {
      sendFrame({ type: 'rolebox.trace', runId, trace });
    },
    async stop() {
      if (closing) return;
      closing = true;
      if (retry) clearTimeout(retry);
      // @statelyai/inspect hands each event over a turn later (setTimeout 0; an idle callback
      // in a page): let the ones already scheduled reach the buffer first.
      await nextIdleTurn();
      const deadline = Date.now() + STOP_FLUSH_MS;
      const waitFor = (ready: () => boolean) =>
        new Promise<void>((resolve) => {
          const check = () => {
            if (ready() || Date.now() >= deadline) return resolve();
            // The socket reports open or close through onSettled; draining it has no event.
            const timer = setTimeout(check, 10);
            onSettled = () => {
              clearTimeout(timer);
              check();
            };
          };
          check();
        });
      // Still connecting with frames to send: give it the bound to open.
      if (buffer.length > 0 && socket?.readyState === 0) {
        await waitFor(() => socket?.readyState !== 0);
      }
      if (socket?.readyState === OPEN) {
        const sending = socket as InspectorSocket & { bufferedAmount?: number };
        await waitFor(() => (sending.bufferedAmount ?? 0) === 0);
      }
      onSettled = undefined;
      if (buffer.length > 0) {
        warned = false;
        warnOnce(
          `the inspector at ${url} was not reached before the rolebox stopped: ${buffer.length} frame(s) not delivered`,
        );
      }
      stopped = true;
      buffer.length = 0;
      socket?.close();
    },
  };
}

/**
 * Runs a `rolebox.command` frame the server sent and answers it with a
 * `rolebox.command_result` (ok, or the error's message); other frames are ignored.
 */
async function answerCommand(
  ws: InspectorSocket,
  data: string,
  onCommand: InspectorCommandHandler,
): Promise<void> {
  let message: { type?: unknown; requestId?: unknown; actor?: unknown; command?: unknown };
  try {
    message = JSON.parse(data);
  } catch {
    return;
  }
  if (message.type !== 'rolebox.command') return;
  let result: { ok: boolean; error?: string };
  try {
    await onCommand(String(message.actor), message.command as InspectorCommand);
    result = { ok: true };
  } catch (error) {
    // Anything may be thrown, null included: the page still gets an answer.
    result = { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  ws.send(
    JSON.stringify({ type: 'rolebox.command_result', requestId: message.requestId, ...result }),
  );
}
