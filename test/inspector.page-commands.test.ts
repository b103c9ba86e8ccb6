// A page's commands on their own: sent only to the app that reported the actor, answered
// exactly once — by that app, or with why not — and bounded in time and in count.
import { describe, expect, it } from 'vitest';
import type { App, KeptActor } from '../inspector/kept-records.js';
import { PageCommands } from '../inspector/page-commands.js';
import type { Page } from '../inspector/pages.js';
import { SimulatedClock } from '../src/testing/simulated-clock.js';
import { FakeSocket } from './support/fake-socket.js';

function setup(options: { commandTimeoutMs?: number; maxPendingCommands?: number } = {}) {
  const clock = new SimulatedClock();
  const toPages: [number, Record<string, unknown>][] = [];
  const logged: string[] = [];
  const commands = new PageCommands({
    commandTimeoutMs: options.commandTimeoutMs ?? 1_000,
    maxPendingCommands: options.maxPendingCommands ?? 10,
    clock,
    log: (message) => logged.push(message),
    send: (page, text) => toPages.push([page.id, JSON.parse(text) as Record<string, unknown>]),
  });
  const appSocket = new FakeSocket();
  const app: App = { id: 1, socket: appSocket.ws, rolebox: true, actorIds: new Set(['1/s']) };
  const actor = { id: '1/s', app, sessionId: 's', name: 'session:a' } as KeptActor;
  const actors = new Map([[actor.id, actor]]);
  const page = { id: 7 } as Page;
  const command = (requestId: unknown = 'r1', target = '1/s') =>
    commands.fromPage(
      page,
      { type: 'command', actor: target, requestId, command: { type: 'GO' } },
      actors,
    );
  /** The server's request id of the last command the app was sent. */
  const lastSent = () => (appSocket.messages().at(-1) as { requestId: string }).requestId;
  return { clock, commands, toPages, logged, app, appSocket, actor, page, command, lastSent };
}

describe('page commands', () => {
  it('sends a command to the actor’s app under its own id, and echoes the page’s id with the answer', () => {
    const { commands, appSocket, app, toPages, command, lastSent } = setup();
    command('page-1');
    expect(appSocket.messages()).toEqual([
      {
        type: 'rolebox.command',
        requestId: 'c1',
        actor: 'session:a',
        sessionId: 's',
        command: { type: 'GO' },
      },
    ]);
    expect(commands.size).toBe(1);
    const dropped: string[] = [];
    commands.answer(app, { requestId: lastSent(), ok: true }, (why) => dropped.push(why));
    expect(toPages).toEqual([[7, { type: 'command_result', requestId: 'page-1', ok: true }]]);
    expect(commands.size).toBe(0);
    // Only once: a second answer is dropped.
    commands.answer(app, { requestId: 'c1', ok: true }, (why) => dropped.push(why));
    expect(dropped).toEqual(['a result for "c1", which app 1 is not waiting on']);
  });

  it('drops an answer from an app the command did not go to', () => {
    const { commands, command, toPages } = setup();
    command();
    const other: App = { id: 2, socket: undefined, rolebox: true, actorIds: new Set() };
    const dropped: string[] = [];
    commands.answer(other, { requestId: 'c1', ok: true }, (why) => dropped.push(why));
    expect(dropped).toEqual(['a result for "c1", which app 2 is not waiting on']);
    expect(toPages).toEqual([]);
    expect(commands.size).toBe(1);
  });

  it('refuses, changing nothing, a command to an unknown, read-only, gone or non-rolebox actor', () => {
    const { command, toPages, app, appSocket, commands } = setup();
    command('a', '1/none');
    (app as { source?: unknown }).source = { kind: 'store', name: 'db' };
    command('b');
    delete (app as { source?: unknown }).source;
    app.rolebox = false;
    command('c');
    app.socket = undefined;
    command('d');
    expect(toPages.map(([, message]) => [message.requestId, message.error])).toEqual([
      ['a', 'no actor "1/none"'],
      ['b', 'session:a is stored, read-only'],
      ['c', 'app 1, which reported session:a, does not take commands (not a rolebox)'],
      ['d', 'app 1, which reported session:a, has disconnected'],
    ]);
    expect(appSocket.sent).toEqual([]);
    expect(commands.size).toBe(0);
  });

  it('drops a frame that is not a command, or has no short requestId, with a logged reason', () => {
    const { commands, command, page, logged, toPages } = setup();
    commands.fromPage(page, { type: 'other' }, new Map());
    commands.fromPage(page, null, new Map());
    command('x'.repeat(257));
    command(1.5);
    expect(logged).toEqual([
      'dropped a frame from page 7: not a command',
      'dropped a frame from page 7: not a command',
      'dropped a frame from page 7: a command without a short requestId',
      'dropped a frame from page 7: a command without a short requestId',
    ]);
    expect(toPages).toEqual([]);
  });

  it('expires a command its app does not answer within commandTimeoutMs', () => {
    const { clock, command, toPages, logged, commands } = setup({ commandTimeoutMs: 500 });
    command('late');
    clock.advance(499);
    expect(toPages).toEqual([]);
    clock.advance(1);
    expect(toPages).toEqual([
      [
        7,
        {
          type: 'command_result',
          requestId: 'late',
          ok: false,
          error: 'no answer from app 1 within 500 ms',
          expired: true,
        },
      ],
    ]);
    expect(logged).toEqual(['command c1 to app 1 expired: no answer from app 1 within 500 ms']);
    expect(commands.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('over maxPendingCommands, the oldest waiting command expires', () => {
    const { command, toPages, commands } = setup({ maxPendingCommands: 2 });
    command('one');
    command('two');
    command('three');
    expect(commands.size).toBe(2);
    expect(toPages).toEqual([
      [
        7,
        {
          type: 'command_result',
          requestId: 'one',
          ok: false,
          error: 'more than 2 commands were waiting for an answer',
          expired: true,
        },
      ],
    ]);
  });

  it('fails the commands of an app that disconnects, and forgets those of a page that left', () => {
    const { clock, command, commands, toPages, app, page } = setup();
    command('a');
    commands.appClosed(app);
    expect(toPages).toEqual([
      [
        7,
        {
          type: 'command_result',
          requestId: 'a',
          ok: false,
          error: 'app 1 disconnected before answering',
        },
      ],
    ]);
    command('b');
    commands.pageDropped(page);
    expect(commands.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    command('c');
    commands.stop();
    expect(commands.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });
});
