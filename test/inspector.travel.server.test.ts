import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type InspectorServer,
  type InspectorServerOptions,
  startInspectorServer,
} from '../inspector/server.js';
import { createRolebox, defineFunction, type Rolebox } from '../src/index.js';
import { sessionJournal, sessionSnapshotIn } from '../src/persistence/journal.js';
import { SimulatedClock } from '../src/testing/simulated-clock.js';
import { type Message, openSocket } from './support/inspector-clients.js';

type Client = Awaited<ReturnType<typeof openSocket>>;

/** The frames @statelyai/inspect sends for one event that moves `sessionId` to `value`. */
function step(app: Client, sessionId: string, type: string, value: string, extra = {}) {
  app.send({ type: '@xstate.event', sessionId, event: { type, ...extra } });
  app.send({
    type: '@xstate.snapshot',
    sessionId,
    event: { type },
    snapshot: { status: 'active', value, context: { last: type } },
  });
}

const eventTyped = (type: string) => (message: Message) =>
  message.type === 'event' && (message.entry as { type: string }).type === type;

describe('the inspector server keeps the snapshot after each event (time travel)', () => {
  let server: InspectorServer;
  let logged: string[];
  const clients: Client[] = [];
  const start = async (options: InspectorServerOptions = {}) => {
    await server?.stop();
    server = await startInspectorServer({
      port: 0,
      log: (message) => logged.push(message),
      ...options,
    });
  };
  const page = async () => {
    const client = await openSocket(`${server.wsUrl}/ui?token=${server.token}`);
    clients.push(client);
    return client;
  };
  const app = async (hello?: string) => {
    const client = await openSocket(server.wsUrl);
    clients.push(client);
    if (hello) client.send({ type: 'rolebox.app', name: hello, pid: 4242 });
    client.send({
      type: '@xstate.actor',
      sessionId: 'x:1',
      name: 'session:s1',
      snapshot: { status: 'active', value: 'idle' },
    });
    return client;
  };

  beforeEach(async () => {
    logged = [];
    server = await startInspectorServer({ port: 0, log: (message) => logged.push(message) });
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.socket.terminate();
    await server.stop();
  });

  it('numbers events and attaches each actor snapshot to the event it followed, for live and late pages', async () => {
    const live = await page();
    const client = await app();
    // A second event queued before the first is processed: snapshots come in mailbox order.
    client.send({ type: '@xstate.event', sessionId: 'x:1', event: { type: 'go' } });
    client.send({ type: '@xstate.event', sessionId: 'x:1', event: { type: 'again' } });
    client.send({
      type: '@xstate.snapshot',
      sessionId: 'x:1',
      event: { type: 'go' },
      snapshot: { status: 'active', value: 'going' },
    });
    client.send({
      type: '@xstate.snapshot',
      sessionId: 'x:1',
      event: { type: 'again' },
      snapshot: { status: 'active', value: 'again' },
    });
    // A snapshot that names no event (or another one) attaches to nothing.
    client.send({ type: '@xstate.snapshot', sessionId: 'x:1', snapshot: { value: 'x' } });
    step(client, 'x:1', 'last', 'done');
    await live.next((m) => m.type === 'event_snapshot' && m.seq === 3);
    const events = server.events();
    expect(events.map((event) => [event.seq, event.type, event.snapshot])).toEqual([
      [1, 'go', { status: 'active', value: 'going' }],
      [2, 'again', { status: 'active', value: 'again' }],
      [3, 'last', { status: 'active', value: 'done', context: { last: 'last' } }],
    ]);
    expect(live.messages.filter((m) => m.type === 'event_snapshot').map((m) => m.seq)).toEqual([
      1, 2, 3,
    ]);
    const late = await page();
    const init = await late.next((m) => m.type === 'init');
    expect((init.events as { seq: number; snapshot: unknown }[]).map((e) => e.snapshot)).toEqual(
      events.map((event) => event.snapshot),
    );
  });

  it('counts attached snapshots in maxKeptBytes: the oldest events still go first', async () => {
    const maxKeptBytes = 64 * 1024;
    await start({ maxKeptBytes });
    const live = await page();
    const client = await app();
    const big = 'b'.repeat(2_000);
    for (let index = 0; index < 100; index++) step(client, 'x:1', `e${index}`, big);
    await live.next((m) => m.type === 'event_snapshot' && m.seq === 100);
    const events = server.events();
    expect(events.length).toBeLessThan(100);
    expect(events.at(-1)?.snapshot).toMatchObject({ value: big });
    expect(server.stats().peakKeptBytes).toBeLessThanOrEqual(maxKeptBytes);
    const late = await page();
    await late.next((m) => m.type === 'init');
    const kept =
      server.events().reduce((sum, event) => sum + JSON.stringify(event).length, 0) +
      JSON.stringify(server.actors()).length;
    expect(server.stats().keptBytes).toBeGreaterThanOrEqual(kept);
  });

  it('marks the session event a journaled rolebox names, and drops hostile journal frames', async () => {
    const live = await page();
    const client = await app('demo');
    step(client, 'x:1', 'session.message', 'busy');
    step(client, 'x:1', 'other', 'busier');
    // It names its event: the newest of that type to that actor, even with others after it.
    client.send({
      type: 'rolebox.journal',
      sessionId: 's1',
      index: 3,
      actor: 'x:1',
      event: 'session.message',
    });
    const mark = await live.next((m) => m.type === 'event_mark');
    expect(mark).toEqual({ type: 'event_mark', seq: 1, fork: { sessionId: 's1', index: 3 } });
    expect(server.events()[0]?.fork).toEqual({ sessionId: 's1', index: 3 });
    const before = server.stats().dropped;
    const good = {
      type: 'rolebox.journal',
      sessionId: 's1',
      index: 1,
      actor: 'x:1',
      event: 'other',
    };
    for (const hostile of [
      { ...good, index: -1 },
      { ...good, index: 1.5 },
      { ...good, index: '2' },
      { ...good, sessionId: 'x'.repeat(300) },
      { ...good, sessionId: '"><script>' },
      { ...good, sessionId: { toString: 1 } },
      { ...good, actor: 'x'.repeat(300) },
      { ...good, event: ['other'] },
      // No such event to mark (the one marked already is not marked twice).
      { ...good, actor: 'x:nobody' },
      { ...good, event: 'session.message' },
    ])
      client.send(hostile);
    step(client, 'x:1', 'marker', 'after');
    await live.next(eventTyped('marker'));
    await live.next((m) => m.type === 'event_snapshot' && m.seq === 3);
    expect(server.stats().dropped - before).toBe(10);
    expect(logged).toEqual(
      expect.arrayContaining([
        'dropped a frame from app 1: rolebox.journal with a bad index -1',
        'dropped a frame from app 1: rolebox.journal for "s1": no recent "other" event to "x:nobody"',
      ]),
    );
    expect(server.events().map((event) => event.fork)).toEqual([
      { sessionId: 's1', index: 3 },
      undefined,
      undefined,
    ]);
    // A plain XState app (no rolebox.app hello) cannot mark events.
    const plain = await app();
    step(plain, 'x:1', 'plain', 'p');
    plain.send({ ...good, index: 0, event: 'plain' });
    plain.send({ type: '@xstate.event', sessionId: 'x:1', event: { type: 'plain-marker' } });
    await live.next(eventTyped('plain-marker'));
    expect(logged).toContain(
      'dropped a frame from app 2: rolebox.journal from an app that did not say rolebox.app',
    );
  });

  it('records when an app left, and sends it with the app', async () => {
    const clock = new SimulatedClock(1_000_000);
    await start({ clock });
    const live = await page();
    const client = await app('demo');
    await live.next((m) => m.type === 'app' && (m.app as { rolebox: boolean }).rolebox);
    clock.advance(5_000);
    client.socket.close();
    const left = await live.next(
      (m) => m.type === 'app' && (m.app as { connected: boolean }).connected === false,
    );
    expect(left.app).toMatchObject({ id: 1, connected: false, leftAt: 1_005_000 });
    expect(server.apps()).toEqual([expect.objectContaining({ id: 1, leftAt: 1_005_000 })]);
  });
});

describe('a journaled rolebox streaming to the inspector: "fork here"', () => {
  let server: InspectorServer;
  let rb: Rolebox;
  let page: Client;

  beforeEach(async () => {
    server = await startInspectorServer({ port: 0, log: () => {} });
    page = await openSocket(`${server.wsUrl}/ui?token=${server.token}`);
    rb = createRolebox({
      journal: true,
      inspect: { url: server.wsUrl },
      functions: [
        defineFunction({
          name: 'awaiting-approval',
          gate: 'signal_observed(answer)',
          continue_until: 'signal_observed(answer)',
        }),
      ],
    });
    await rb.start();
  });

  afterEach(async () => {
    await rb.stop();
    page.socket.close();
    await server.stop();
  });

  type Entry = {
    seq: number;
    sessionId: string;
    snapshot?: { context?: unknown };
    fork?: { sessionId: string; index: number };
  };

  it("marks each of a session's journal entries on its events, and forks from a mark as rb.fork does", async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('awaiting-approval');
    session.signal({ type: 'need_approval' });
    session.idle();
    const run = rb.recordRun();
    const entries = sessionJournal(run, 's1');
    expect(entries.length).toBeGreaterThan(2);
    await page.next(
      (m) => m.type === 'event_mark' && (m.fork as { index: number }).index === entries.length - 1,
    );
    const marks = page.messages
      .filter((m) => m.type === 'event_mark')
      .map((m) => (m.fork as { sessionId: string; index: number }).index);
    expect(marks).toEqual(entries.map((_, index) => index));
    // Each mark sits on its journal entry's own event (the one that came from outside).
    const sessionActor = server.actors().find((actor) => actor.name === 'session:s1');
    const marked = (server.events() as unknown as (Entry & { type: string })[]).filter(
      (event) => event.fork,
    );
    expect(marked.map((event) => event.type)).toEqual(
      entries.map((entry) => entry.entry.event.type),
    );
    expect(marked.map((event) => event.fork?.index)).toEqual(entries.map((_, index) => index));
    // When that event reached the session itself, the journal's snapshot after it is the one kept.
    for (const event of marked.filter((e) => e.sessionId === sessionActor?.sessionId)) {
      const entry = entries[event.fork?.index as number];
      const past = sessionSnapshotIn(run.journal[entry?.index as number]?.after, 's1') as {
        value: unknown;
      };
      expect(event.snapshot).toMatchObject({ value: past.value });
    }

    const atEvent = 2;
    const command = (requestId: string, body: Record<string, unknown>) => {
      page.send({ type: 'command', requestId, actor: sessionActor?.id, command: body });
      return page.next((m) => m.type === 'command_result' && m.requestId === requestId);
    };
    expect(await command('f', { kind: 'fork', atEvent, as: 'f1' })).toMatchObject({ ok: true });
    const host = await rb.fork('s1', { atEvent, as: 'f2' });
    const view = (id: string) => {
      const { id: _id, ...rest } = rb.session(id).view() as { id: string };
      return JSON.stringify(rest).replaceAll(id, '<id>');
    };
    expect(view('f1')).toEqual(view(host.id));
    // Refused with the RoleboxError's message, creating nothing.
    const refused = await command('bad', { kind: 'fork', atEvent: 99, as: 'f3' });
    expect(refused).toMatchObject({ ok: false });
    expect(String(refused.error)).toContain('atEvent must be an integer from 0 to');
    const badId = await command('bad-id', { kind: 'fork', atEvent, as: '../x' });
    expect(badId).toMatchObject({ ok: false });
    const unknown = await command('bad-name', { kind: 'fork', atEvent, at: 1 });
    expect(String(unknown.error)).toMatch(/"at"/);
    expect(() => rb.session('f3')).toThrow();
  });
});
