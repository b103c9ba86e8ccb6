// The app protocol on its own: an app's frames reach the store or the commands, anything
// else is dropped and counted with its reason, and a closing app is marked gone.
import { describe, expect, it } from 'vitest';
import { AppProtocol } from '../inspector/app-protocol.js';
import { KeptStore } from '../inspector/kept-store.js';
import { PageCommands } from '../inspector/page-commands.js';
import type { Page } from '../inspector/pages.js';
import { SimulatedClock } from '../src/testing/simulated-clock.js';
import { FakeSocket } from './support/fake-socket.js';

function setup() {
  const clock = new SimulatedClock(5_000);
  const logged: string[] = [];
  const toPages: Record<string, unknown>[] = [];
  const log = (message: string) => logged.push(message);
  const broadcast = (text: string) => toPages.push(JSON.parse(text) as Record<string, unknown>);
  const store = new KeptStore({
    historyLimit: 100,
    actorLimit: 100,
    maxKeptBytes: 1024 * 1024,
    maxDepth: 8,
    clock,
    log,
    broadcast,
  });
  const toPage: Record<string, unknown>[] = [];
  const commands = new PageCommands({
    commandTimeoutMs: 1_000,
    maxPendingCommands: 10,
    clock,
    log,
    send: (_page, text) => toPage.push(JSON.parse(text) as Record<string, unknown>),
  });
  const protocol = new AppProtocol({
    store,
    commands,
    maxDepth: 8,
    maxFrameBytes: 1_000,
    clock,
    log,
    broadcast,
  });
  const socket = new FakeSocket();
  const app = protocol.connect(socket.ws);
  const frame = (value: unknown) =>
    socket.emit('message', Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)));
  return { clock, logged, toPages, toPage, store, commands, protocol, socket, app, frame };
}

describe('the app protocol', () => {
  it('keeps the actors, snapshots and events an app streams, keyed <app>/<sessionId>', () => {
    const { store, frame, protocol, app } = setup();
    frame({
      type: '@xstate.actor',
      sessionId: 'x:0',
      name: 'traffic',
      snapshot: { value: 'green' },
    });
    frame({ type: '@xstate.event', sessionId: 'x:0', event: { type: 'TIMER' } });
    frame({
      type: '@xstate.snapshot',
      sessionId: 'x:0',
      snapshot: { value: 'yellow' },
      event: { type: 'TIMER' },
    });
    expect([...store.actors.keys()]).toEqual([`${app.id}/x:0`]);
    expect(store.events.values().map((event) => [event.type, event.snapshot])).toEqual([
      ['TIMER', '{"value":"yellow"}'],
    ]);
    expect(protocol.frames).toBe(3);
    expect(protocol.dropped).toBe(0);
  });

  it('drops, counts and logs a frame that is not JSON, too deep, untyped, unknown or without a sessionId', () => {
    const { frame, protocol, logged, store } = setup();
    frame('not json');
    frame('[[[[[[[[[[1]]]]]]]]]]');
    frame({ no: 'type' });
    frame({ type: 'evil' });
    frame({ type: '@xstate.actor' });
    frame({ type: '@xstate.actor', sessionId: 's'.repeat(257) });
    expect(protocol.frames).toBe(6);
    expect(protocol.dropped).toBe(6);
    expect(logged.slice(1)).toEqual([
      'dropped a frame from app 1: nested deeper than 8 levels',
      'dropped a frame from app 1: no type',
      'dropped a frame from app 1: unknown type "evil"',
      'dropped a frame from app 1: @xstate.actor without a sessionId',
      'dropped a frame from app 1: sessionId longer than 256 characters',
    ]);
    expect(store.actors.size).toBe(0);
  });

  it('a rolebox.app hello makes the app take commands, with its name and pid', () => {
    const { frame, toPages, app } = setup();
    frame({ type: 'rolebox.app', name: 'n'.repeat(300), pid: 42 });
    expect(app.rolebox).toBe(true);
    expect(app.name).toHaveLength(200);
    expect(toPages.at(-1)).toMatchObject({ type: 'app', app: { id: 1, pid: 42, rolebox: true } });
  });

  it('routes a command result to the command it answers', () => {
    const { frame, commands, store, toPage, socket } = setup();
    frame({ type: 'rolebox.app' });
    frame({ type: '@xstate.actor', sessionId: 's', snapshot: {} });
    commands.fromPage(
      { id: 1 } as Page,
      { type: 'command', actor: '1/s', requestId: 9 },
      store.actors,
    );
    const sent = socket.messages().at(-1) as { requestId: string };
    frame({ type: 'rolebox.command_result', requestId: sent.requestId, ok: false, error: 'nope' });
    expect(toPage).toEqual([{ type: 'command_result', requestId: 9, ok: false, error: 'nope' }]);
  });

  it('a closed app is shown gone: its actors may be evicted and its commands fail', () => {
    const { frame, socket, app, toPages, toPage, commands, store } = setup();
    frame({ type: 'rolebox.app' });
    frame({ type: '@xstate.actor', sessionId: 's', snapshot: {} });
    commands.fromPage(
      { id: 1 } as Page,
      { type: 'command', actor: '1/s', requestId: 'r' },
      store.actors,
    );
    socket.emit('close');
    expect(app.socket).toBeUndefined();
    expect(app.leftAt).toBe(5_000);
    expect(toPages.at(-1)).toMatchObject({
      type: 'app',
      app: { id: 1, connected: false, leftAt: 5_000 },
    });
    expect(toPage).toEqual([
      {
        type: 'command_result',
        requestId: 'r',
        ok: false,
        error: 'app 1 disconnected before answering',
      },
    ]);
  });

  it('counts a frame over maxFrameBytes (ws closes the connection) and logs other socket errors', () => {
    const { socket, protocol, logged } = setup();
    socket.emit(
      'error',
      Object.assign(new Error('too big'), { code: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' }),
    );
    socket.emit('error', new Error('reset'));
    expect(protocol.dropped).toBe(1);
    expect(logged).toEqual([
      'app 1 sent a frame over maxFrameBytes (1000); connection closed',
      'app 1 socket error: reset',
    ]);
  });
});
