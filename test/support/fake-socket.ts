import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';

/**
 * A stand-in for a `ws` WebSocket, enough for the inspector's parts: what was sent, an
 * unread backlog to set, open or closed, and its events to emit by hand.
 */
export class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  /** Bytes the peer has not read (set it to play a page that does not read). */
  bufferedAmount = 0;
  readonly sent: string[] = [];
  terminated = false;

  send(text: string): void {
    this.sent.push(text);
  }

  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
  }

  /** What was sent, parsed. */
  messages(): Record<string, unknown>[] {
    return this.sent.map((text) => JSON.parse(text) as Record<string, unknown>);
  }

  /** Typed as the `ws` socket the inspector's parts take. */
  get ws(): WebSocket {
    return this as unknown as WebSocket;
  }
}
