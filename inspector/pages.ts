// The pages connected to the inspector: what they are sent, bounded per page so that a
// page that does not read is disconnected (it reconnects and starts afresh) instead of
// holding the server's memory.

import type { RawData, WebSocket } from 'ws';
import { listenGuarded, rawText } from './guarded.js';
import { parseClientJson } from './json-guard.js';
import type { Frame } from './kept-records.js';

/** A connected page. */
export interface Page {
  readonly id: number;
  readonly socket: WebSocket;
  /** Bytes that may wait unsent before the page counts as not reading. */
  allowance: number;
}

/** The bounds and the surroundings of {@link Pages}. */
export interface PagesOptions {
  /** Bytes that may wait unsent for a page (on top of its first message). */
  readonly pageBufferBytes: number;
  /** Deepest nesting of a page's frame. */
  readonly maxDepth: number;
  readonly log: (message: string) => void;
  /** A new page's first message (everything kept) and the ones that follow it. */
  readonly firstMessages: () => { readonly init: string; readonly after: readonly string[] };
  /** A page's frame, parsed (its fields unchecked). */
  readonly onFrame: (page: Page, frame: Frame | null) => void;
  /** A page left (closed, or disconnected for not reading). */
  readonly onDropped: (page: Page) => void;
}

/** The connected pages (see the file's opening note). */
export class Pages {
  readonly #pages = new Set<Page>();
  readonly #options: PagesOptions;
  #nextPage = 1;

  constructor(options: PagesOptions) {
    this.#options = options;
  }

  /** Pages connected now. */
  get size(): number {
    return this.#pages.size;
  }

  /** Takes a page's socket (its token already checked): sends it everything kept. */
  connect(socket: WebSocket): Page {
    const { pageBufferBytes, log } = this.#options;
    const page: Page = { id: this.#nextPage++, socket, allowance: pageBufferBytes };
    this.#pages.add(page);
    listenGuarded(socket, log, `page ${page.id}`, {
      error: (error) => log(`page ${page.id} socket error: ${error.message}`),
      message: (data) => this.#onFrame(page, data),
      close: () => this.#drop(page),
    });
    const { init, after } = this.#options.firstMessages();
    page.allowance = pageBufferBytes + Buffer.byteLength(init);
    socket.send(init);
    for (const text of after) this.send(page, text);
    return page;
  }

  /** Sends to a page unless it does not read: then it is disconnected (it reconnects afresh). */
  send(page: Page, text: string) {
    const { pageBufferBytes, log } = this.#options;
    const socket = page.socket;
    if (socket.readyState !== socket.OPEN) return;
    const waiting = socket.bufferedAmount;
    if (waiting > page.allowance) {
      log(
        `disconnected page ${page.id}: it does not read (${waiting} bytes waiting, pageBufferBytes ${pageBufferBytes})`,
      );
      this.#drop(page);
      socket.terminate();
      return;
    }
    // Its first message, however big, has drained: from now on the plain allowance holds.
    if (waiting <= pageBufferBytes) page.allowance = pageBufferBytes;
    socket.send(text);
  }

  /** Sends to every page. */
  broadcast(text: string) {
    for (const page of this.#pages) this.send(page, text);
  }

  #onFrame(page: Page, data: RawData) {
    const parsed = parseClientJson(rawText(data), this.#options.maxDepth);
    if (!parsed.ok)
      return this.#options.log(`dropped a frame from page ${page.id}: ${parsed.reason}`);
    this.#options.onFrame(page, parsed.value as Frame | null);
  }

  #drop(page: Page) {
    this.#pages.delete(page);
    this.#options.onDropped(page);
  }
}
