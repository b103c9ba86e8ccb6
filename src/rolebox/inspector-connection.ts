import { createInspector } from '@statelyai/inspect';
import safeStableStringify from 'safe-stable-stringify';
import NodeWebSocket from 'ws';
import type { InspectionEvent, Observer } from 'xstate';
import { currentArgv, currentPid } from '../base/host-process.js';
import type { RemoteCommand } from '../session/commands.js';

/** A command the inspector page sends to an actor of a running rolebox. */
export type InspectorCommand = RemoteCommand;

/** Runs a command; throws (a RoleboxError, typically) to refuse it. */
export type InspectorCommandHandler = (actor: string, command: InspectorCommand) => void;

/** A live connection to an inspector server. */
export interface WebSocketInspector {
  /** The XState inspection observer to pass to the actor system. */
  readonly observer: Observer<InspectionEvent>;
  /** Closes the connection and cancels any reconnection; events after this are dropped. */
  stop(): void;
}

const stringify = safeStableStringify.configure({ maximumDepth: 10 });

/**
 * The largest frame sent; the inspector server closes a connection that sends a bigger one
 * (its `maxFrameBytes`, 16 MiB by default), which would cost the app its identity there.
 */
export const MAX_INSPECTOR_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * Frames kept while the socket connects (the oldest go first beyond it). A rolebox's start
 * alone sends about three frames per shard (256 by default): the bound must hold them and
 * the root's, or a page never learns of the root.
 */
export const CONNECTING_BUFFER_FRAMES = 5_000;

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
 * bounded buffer ({@link CONNECTING_BUFFER_FRAMES}) while the socket connects; a lost connection is retried every
 * second until `stop()`, which cancels everything, so a stopped rolebox never keeps its
 * process alive.
 */
export function connectWebSocketInspector(
  url: string,
  onCommand: InspectorCommandHandler,
): WebSocketInspector {
  const buffer: string[] = [];
  let socket: InspectorSocket | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  const connect = () => {
    if (stopped) return;
    const ws = openSocket(url);
    socket = ws;
    ws.addEventListener('open', () => {
      ws.send(helloFrame());
      for (const frame of buffer.splice(0)) ws.send(frame);
    });
    ws.addEventListener('message', (event) => handleCommand(ws, String(event.data)));
    ws.addEventListener('error', () => {});
    ws.addEventListener('close', () => {
      if (stopped) return;
      retry = setTimeout(connect, 1_000);
      // In Node a retry alone must not keep the process alive (a page has no unref).
      (retry as { unref?: () => void }).unref?.();
    });
  };

  const handleCommand = (ws: InspectorSocket, data: string) => {
    let message: { type?: unknown; requestId?: unknown; actor?: unknown; command?: unknown };
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (message.type !== 'rolebox.command') return;
    let result: { ok: boolean; error?: string };
    try {
      onCommand(String(message.actor), message.command as InspectorCommand);
      result = { ok: true };
    } catch (error) {
      result = { ok: false, error: (error as Error).message };
    }
    ws.send(
      JSON.stringify({ type: 'rolebox.command_result', requestId: message.requestId, ...result }),
    );
  };

  const inspector = createInspector(
    {
      send(event: unknown) {
        if (stopped) return;
        const frame = stringify(event) as string;
        // Dropped whole (a cut frame is not JSON) and here, so the connection stays open.
        if (
          frame.length > MAX_INSPECTOR_FRAME_BYTES / 3 &&
          new TextEncoder().encode(frame).length > MAX_INSPECTOR_FRAME_BYTES
        )
          return;
        if (socket?.readyState === OPEN) socket.send(frame);
        else {
          buffer.push(frame);
          if (buffer.length > CONNECTING_BUFFER_FRAMES) buffer.shift();
        }
      },
      start: connect,
      stop() {},
    },
    { autoStart: true },
  );
  inspector.start();
  return {
    observer: inspector.inspect as Observer<InspectionEvent>,
    stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      socket?.close();
    },
  };
}
