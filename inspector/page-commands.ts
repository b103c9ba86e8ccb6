// Commands a page sends to an actor: forwarded to the one app that reported the actor,
// and answered to the page exactly once — with the app's result, or with why not (refused,
// timed out, too many waiting, the app gone). Bounded in time and in count.

import { describeValue } from '../src/errors.js';
import type { Clock, TimerHandle } from '../src/ports/clock.js';
import { guarded } from './guarded.js';
import type { App, Frame, KeptActor } from './kept-records.js';
import { type Drop, MAX_ID_LENGTH } from './kept-store.js';
import type { Page } from './pages.js';

/** A command sent to an app and not answered yet. */
interface PendingCommand {
  readonly page: Page;
  /** The page's own id for the command, echoed back (pages pick theirs; they may clash). */
  readonly pageRequestId: string | number;
  readonly app: App;
  readonly timer: TimerHandle;
}

/** The bounds and the surroundings of {@link PageCommands}. */
export interface PageCommandsOptions {
  /** How long a command waits for its app's answer. */
  readonly commandTimeoutMs: number;
  /** Most commands waiting for an answer; over it the oldest expires. */
  readonly maxPendingCommands: number;
  readonly clock: Clock;
  readonly log: (message: string) => void;
  /** Sends a message (JSON text) to one page. */
  readonly send: (page: Page, text: string) => void;
}

/** The commands pages sent, until each is answered (see the file's opening note). */
export class PageCommands {
  readonly #pending = new Map<string, PendingCommand>();
  readonly #options: PageCommandsOptions;
  #nextCommand = 1;

  constructor(options: PageCommandsOptions) {
    this.#options = options;
  }

  /** Commands sent to apps and not answered yet. */
  get size(): number {
    return this.#pending.size;
  }

  /**
   * A page's `{"type":"command",actor,requestId,command}` frame: sent on to the actor's app,
   * or refused to the page (a frame that is not a command is logged and dropped).
   */
  fromPage(page: Page, message: Frame | null, actors: ReadonlyMap<string, KeptActor>) {
    const { log, maxPendingCommands, commandTimeoutMs, clock } = this.#options;
    if (message?.type !== 'command' || typeof message.actor !== 'string')
      return log(`dropped a frame from page ${page.id}: not a command`);
    const requestId = message.requestId;
    if (
      !(typeof requestId === 'string' && requestId.length <= MAX_ID_LENGTH) &&
      !Number.isSafeInteger(requestId)
    )
      return log(`dropped a frame from page ${page.id}: a command without a short requestId`);
    const pageRequestId = requestId as string | number;
    const actor = actors.get(message.actor);
    const why = actor ? refusal(actor) : `no actor ${describeValue(message.actor)}`;
    if (why !== undefined || !actor?.app.socket)
      return this.#result(page, pageRequestId, false, why);
    const app = actor.app;
    const id = `c${this.#nextCommand++}`;
    // Bounded by count as well as by time: the oldest unanswered command gives way.
    for (const [oldest] of this.#pending) {
      if (this.#pending.size < maxPendingCommands) break;
      this.#expire(oldest, `more than ${maxPendingCommands} commands were waiting for an answer`);
    }
    const text = JSON.stringify({
      type: 'rolebox.command',
      requestId: id,
      actor: actor.name,
      sessionId: actor.sessionId,
      command: message.command,
    });
    const timer = clock.setTimeout(
      () =>
        guarded(log, 'command timeout', () =>
          this.#expire(id, `no answer from app ${app.id} within ${commandTimeoutMs} ms`),
        ),
      commandTimeoutMs,
    );
    this.#pending.set(id, { page, pageRequestId, app, timer });
    actor.app.socket.send(text);
  }

  /** An app's `rolebox.command_result`: only the app a command went to may answer, once. */
  answer(app: App, message: Frame, drop: Drop) {
    const id = typeof message.requestId === 'string' ? message.requestId : undefined;
    const command = id === undefined ? undefined : this.#pending.get(id);
    if (!command || command.app !== app)
      return drop(
        `a result for ${describeValue(message.requestId)}, which app ${app.id} is not waiting on`,
      );
    this.#finish(id as string);
    const error = typeof message.error === 'string' ? message.error.slice(0, 2000) : undefined;
    this.#result(command.page, command.pageRequestId, message.ok === true, error);
  }

  /** An app disconnected: the commands it did not answer fail now, not at their timeout. */
  appClosed(app: App) {
    for (const [id, command] of this.#pending)
      if (command.app === app) {
        this.#finish(id);
        this.#result(
          command.page,
          command.pageRequestId,
          false,
          `app ${app.id} disconnected before answering`,
        );
      }
  }

  /** A page left: its commands are forgotten (there is no one to answer). */
  pageDropped(page: Page) {
    for (const [id, command] of this.#pending) {
      if (command.page === page) {
        this.#options.clock.clearTimeout(command.timer);
        this.#pending.delete(id);
      }
    }
  }

  /** Forgets every command and its timer (the server is stopping). */
  stop() {
    for (const command of this.#pending.values()) this.#options.clock.clearTimeout(command.timer);
    this.#pending.clear();
  }

  #result(page: Page, requestId: string | number, ok: boolean, error?: string, expired?: boolean) {
    this.#options.send(
      page,
      JSON.stringify({
        type: 'command_result',
        requestId,
        ok,
        ...(error === undefined ? {} : { error }),
        ...(expired ? { expired: true } : {}),
      }),
    );
  }

  #finish(id: string): PendingCommand | undefined {
    const command = this.#pending.get(id);
    if (!command) return undefined;
    this.#pending.delete(id);
    this.#options.clock.clearTimeout(command.timer);
    return command;
  }

  #expire(id: string, why: string) {
    const command = this.#finish(id);
    if (!command) return;
    this.#options.log(`command ${id} to app ${command.app.id} expired: ${why}`);
    this.#result(command.page, command.pageRequestId, false, why, true);
  }
}

/** Why a command to `actor` cannot be sent (read-only, its app gone or not a rolebox), or undefined. */
function refusal(actor: KeptActor): string | undefined {
  const app = actor.app;
  if (app.source)
    return `${actor.name} is ${app.source.kind === 'store' ? 'stored' : 'replayed'}, read-only`;
  if (!app.socket || app.socket.readyState !== app.socket.OPEN)
    return `app ${app.id}, which reported ${actor.name}, has disconnected`;
  if (!app.rolebox)
    return `app ${app.id}, which reported ${actor.name}, does not take commands (not a rolebox)`;
  return undefined;
}
