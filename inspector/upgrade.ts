// Who may open a WebSocket to the inspector. A page (`/ui`) needs the per-run token, and a
// browser page must come from the inspector's own origin; an app (any other path) that sends
// an Origin — a browser — must come from an allowed one. Anything else is answered 401/403,
// counted and logged, before a WebSocket exists.

import { timingSafeEqual } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { describeValue } from '../src/errors.js';

/** Takes an upgrade this gate let through (the WebSocket server's `handleUpgrade`). */
export type Accept = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** What an {@link UpgradeGate} checks against, and where it sends what it lets in. */
export interface UpgradeGateOptions {
  /** The page's secret. */
  readonly token: string;
  /** Browser origins an app may stream from. */
  readonly appOrigins: ReadonlySet<string>;
  /** The interface the server listens on. */
  readonly host: string;
  readonly log: (message: string) => void;
  readonly acceptPage: Accept;
  readonly acceptApp: Accept;
}

/** The checks every WebSocket upgrade passes (see the file's opening note). */
export class UpgradeGate {
  readonly #options: UpgradeGateOptions;
  readonly #tokenBytes: Buffer;
  #ownOrigins = new Set<string>();
  #refused = 0;

  constructor(options: UpgradeGateOptions) {
    this.#options = options;
    this.#tokenBytes = Buffer.from(options.token);
  }

  /** Connections refused at the handshake (foreign Origin, missing or wrong token). */
  get refused(): number {
    return this.#refused;
  }

  /** The server listens on `port`: the page's own origins are known from now on. */
  listening(port: number) {
    this.#ownOrigins = originsOf(this.#options.host, port);
  }

  /** An HTTP `upgrade`: let in, or refused. Never throws (a bad request destroys its socket). */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer) {
    try {
      this.#check(request, socket, head);
    } catch (error) {
      this.#options.log(`refused a connection: ${(error as Error).message}`);
      socket.destroy();
    }
  }

  #check(request: IncomingMessage, socket: Duplex, head: Buffer) {
    const { host, appOrigins } = this.#options;
    const url = new URL(request.url ?? '/', 'http://inspector');
    const origin = request.headers.origin;
    if (url.pathname === '/ui') {
      // A client that sends no Origin is not a browser (and could send any Origin it
      // liked): the token is what lets it in.
      if (
        origin !== undefined &&
        !this.#ownOrigins.has(origin) &&
        !sameHostOrigin(origin, request, host)
      )
        return this.#refuse(
          socket,
          403,
          `page from origin ${describeValue(origin)} (only the inspector's own page may connect)`,
        );
      const given = url.searchParams.get('token');
      if (!given)
        return this.#refuse(
          socket,
          401,
          'page without a token (open the URL the inspector printed)',
        );
      if (!this.#sameToken(given)) return this.#refuse(socket, 401, 'page with a wrong token');
      return this.#options.acceptPage(request, socket, head);
    }
    if (origin !== undefined && !appOrigins.has(origin))
      return this.#refuse(
        socket,
        403,
        `app from browser origin ${describeValue(origin)} (allow it with appOrigins)`,
      );
    this.#options.acceptApp(request, socket, head);
  }

  #refuse(socket: Duplex, status: 401 | 403, reason: string) {
    this.#refused++;
    this.#options.log(`refused a connection: ${reason}`);
    const body = `${reason}\n`;
    socket.on('error', () => {});
    socket.once('finish', () => socket.destroy());
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }

  // Compared in constant time: how long a refusal takes says nothing of the token.
  #sameToken(given: string): boolean {
    const bytes = Buffer.from(given);
    return bytes.length === this.#tokenBytes.length && timingSafeEqual(bytes, this.#tokenBytes);
  }
}

/** The origins the page is served from: the host it binds, and its loopback aliases. */
export function originsOf(host: string, port: number): Set<string> {
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
