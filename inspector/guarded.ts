// Socket callbacks run what a client sent: nothing in them may throw out into the event
// loop (an uncaught error there ends the process).

import type { RawData } from 'ws';

/** Runs a handler so that nothing a client sent can throw out of an event callback: it is logged. */
export function guarded(log: (message: string) => void, where: string, handler: () => void) {
  try {
    handler();
  } catch (error) {
    log(`${where}: ${(error as Error)?.message ?? String(error)}`);
  }
}

/** A WebSocket message's data as text, whichever of its shapes `ws` handed over. */
export function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString();
  if (Array.isArray(data)) return Buffer.concat(data).toString();
  return Buffer.from(data).toString();
}
