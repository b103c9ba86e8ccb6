// Socket callbacks run what a client sent: nothing in them may throw out into the event
// loop (an uncaught error there ends the process).

import type { RawData, WebSocket } from 'ws';

/** Runs a handler so that nothing a client sent can throw out of an event callback: it is logged. */
export function guarded(log: (message: string) => void, where: string, handler: () => void) {
  try {
    handler();
  } catch (error) {
    log(`${where}: ${(error as Error)?.message ?? String(error)}`);
  }
}

/** What a client's socket does on each of its events (see {@link listenGuarded}). */
export interface SocketHandlers {
  error(error: Error & { code?: string }): void;
  message(data: RawData): void;
  close(): void;
}

/**
 * Listens to a client's socket (an app's or a page's, named `who`: `app 3`, `page 2`), each
 * callback guarded: what it throws is logged as where it happened, never thrown out.
 */
export function listenGuarded(
  socket: WebSocket,
  log: (message: string) => void,
  who: string,
  handlers: SocketHandlers,
): void {
  socket.on('error', (error) => guarded(log, who, () => handlers.error(error)));
  socket.on('message', (data) => guarded(log, `a frame from ${who}`, () => handlers.message(data)));
  socket.on('close', () => guarded(log, `${who} closing`, () => handlers.close()));
}

/** A WebSocket message's data as text, whichever of its shapes `ws` handed over. */
export function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString();
  if (Array.isArray(data)) return Buffer.concat(data).toString();
  return Buffer.from(data).toString();
}
