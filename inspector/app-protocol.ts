// The app side of the inspector: an app's connection and the frames it sends — the
// @statelyai/inspect protocol (`@xstate.actor`, `@xstate.snapshot`, `@xstate.event`) and
// rolebox's own (`rolebox.app`, `rolebox.command_result`, `rolebox.journal`,
// `rolebox.trace`). A frame that is not JSON, too deep or unknown is dropped and counted,
// with its reason logged.

import type { RawData, WebSocket } from 'ws';
import { describeValue } from '../src/errors.js';
import type { Clock } from '../src/ports/clock.js';
import { listenGuarded, rawText } from './guarded.js';
import { parseClientJson } from './json-guard.js';
import { type App, appJson, type Frame } from './kept-records.js';
import { type KeptStore, MAX_ID_LENGTH } from './kept-store.js';
import type { PageCommands } from './page-commands.js';

/** What {@link AppProtocol} works with. */
export interface AppProtocolOptions {
  readonly store: KeptStore;
  readonly commands: PageCommands;
  /** Deepest nesting of a frame. */
  readonly maxDepth: number;
  /** Largest frame an app may send (`ws` closes the connection over it; logged here). */
  readonly maxFrameBytes: number;
  readonly clock: Clock;
  readonly log: (message: string) => void;
  /** Sends a message (JSON text) to every page. */
  readonly broadcast: (text: string) => void;
}

/** The apps' connections and frames (see the file's opening note). */
export class AppProtocol {
  readonly #options: AppProtocolOptions;
  #frames = 0;
  #dropped = 0;

  constructor(options: AppProtocolOptions) {
    this.#options = options;
  }

  /** Frames received from apps. */
  get frames(): number {
    return this.#frames;
  }

  /** Frames dropped (malformed, hostile, or over a bound). */
  get dropped(): number {
    return this.#dropped;
  }

  /** Takes an app's socket (its origin already checked). */
  connect(socket: WebSocket): App {
    const { store, log, maxFrameBytes } = this.#options;
    const app = store.addApp(socket);
    listenGuarded(socket, log, `app ${app.id}`, {
      error: (error) => {
        this.#dropped += error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? 1 : 0;
        log(
          error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'
            ? `app ${app.id} sent a frame over maxFrameBytes (${maxFrameBytes}); connection closed`
            : `app ${app.id} socket error: ${error.message}`,
        );
      },
      message: (data) => this.onFrame(app, data),
      close: () => this.#closed(app),
    });
    return app;
  }

  /** One frame from `app`: kept, answered or dropped. */
  onFrame(app: App, data: RawData) {
    const { store, commands, maxDepth } = this.#options;
    this.#frames++;
    const drop = (why: string) => {
      this.#dropped++;
      this.#options.log(`dropped a frame from app ${app.id}: ${why}`);
    };
    const parsed = parseClientJson(rawText(data), maxDepth);
    if (!parsed.ok) return drop(parsed.reason);
    const message = parsed.value as Frame;
    if (typeof message !== 'object' || message === null || typeof message.type !== 'string')
      return drop('no type');
    switch (message.type) {
      case 'rolebox.app':
        return this.#hello(app, message);
      case 'rolebox.command_result':
        return commands.answer(app, message, drop);
      case 'rolebox.journal':
        return store.markJournal(app, message, drop);
      case 'rolebox.trace':
        return store.putTrace(app, message, drop);
      case '@xstate.actor':
      case '@xstate.snapshot':
      case '@xstate.event':
        break;
      default:
        return drop(`unknown type ${describeValue(message.type)}`);
    }
    const sessionId = message.sessionId;
    if (typeof sessionId !== 'string' || sessionId === '')
      return drop(`${message.type} without a sessionId`);
    if (sessionId.length > MAX_ID_LENGTH)
      return drop(`sessionId longer than ${MAX_ID_LENGTH} characters`);
    const id = `${app.id}/${sessionId}`;
    if (message.type === '@xstate.actor') return store.putActor(app, id, sessionId, message, drop);
    if (message.type === '@xstate.snapshot') return store.putSnapshot(id, sessionId, message, drop);
    store.putEvent(app, id, sessionId, message, drop);
  }

  /** `rolebox.app`: the app is a rolebox (it takes commands), and says its name and pid. */
  #hello(app: App, message: Frame) {
    app.rolebox = true;
    if (typeof message.name === 'string') app.name = message.name.slice(0, 200);
    if (Number.isSafeInteger(message.pid)) app.pid = message.pid as number;
    this.#options.broadcast(`{"type":"app","app":${appJson(app)}}`);
  }

  #closed(app: App) {
    app.socket = undefined;
    app.leftAt = this.#options.clock.now();
    this.#options.store.appLeft(app);
    this.#options.commands.appClosed(app);
    this.#options.broadcast(`{"type":"app","app":${appJson(app)}}`);
  }
}
