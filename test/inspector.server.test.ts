import { createWebSocketInspector } from '@statelyai/inspect';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { assign, createActor, createMachine } from 'xstate';
import { chartFromConfig } from '../inspector/chart.js';
import { type InspectorServer, startInspectorServer } from '../inspector/server.js';
import { createRolebox, defineFunction, type Rolebox } from '../src/index.js';

/** A page connected to the server's `/ui` socket, with every message it received. */
async function openPage(server: InspectorServer) {
  const socket = new WebSocket(`${server.wsUrl}/ui`);
  const messages: Record<string, unknown>[] = [];
  const waiters: {
    predicate: (message: Record<string, unknown>) => boolean;
    resolve: (message: Record<string, unknown>) => void;
  }[] = [];
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as Record<string, unknown>;
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return {
    socket,
    messages,
    /** The first message (received already or still to come) that matches. */
    next(
      predicate: (message: Record<string, unknown>) => boolean,
    ): Promise<Record<string, unknown>> {
      const seen = messages.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
  };
}

type Page = Awaited<ReturnType<typeof openPage>>;
const actorNamed = (name: string) => (message: Record<string, unknown>) =>
  message.type === 'actor' && (message.actor as { name: string }).name === name;

const traffic = createMachine({
  id: 'traffic',
  initial: 'green',
  context: { changes: 0 },
  states: {
    green: {
      on: {
        TIMER: {
          target: 'yellow',
          guard: 'roadIsClear',
          actions: assign({ changes: ({ context }) => context.changes + 1 }),
        },
      },
    },
    yellow: { on: { TIMER: 'red' } },
    red: {
      initial: 'walk',
      states: { walk: { on: { COUNTDOWN: 'wait' } }, wait: {} },
      on: { TIMER: 'green' },
    },
  },
}).provide({ guards: { roadIsClear: () => true } });

describe('the inspector server', () => {
  let server: InspectorServer;
  let logged: string[];
  const cleanups: (() => unknown)[] = [];

  beforeEach(async () => {
    logged = [];
    server = await startInspectorServer({ port: 0, log: (message) => logged.push(message) });
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await server.stop();
  });

  it('receives actors, events and snapshots from any XState app through createWebSocketInspector', async () => {
    const page = await openPage(server);
    cleanups.push(() => page.socket.close());
    const inspector = createWebSocketInspector({ url: server.wsUrl });
    cleanups.push(() => inspector.stop());
    const actor = createActor(traffic, { inspect: inspector.inspect });
    actor.start();
    actor.send({ type: 'TIMER' });
    actor.send({ type: 'TIMER' });
    actor.send({ type: 'COUNTDOWN' });

    await page.next(
      (message) =>
        message.type === 'snapshot' &&
        JSON.stringify((message.snapshot as { value: unknown }).value) === '{"red":"wait"}',
    );
    actor.stop();
    const [inspected] = server.actors();
    expect(inspected?.sessionId).toBe(actor.sessionId);
    expect(inspected?.name).toBe('traffic');
    expect(inspected?.snapshot).toMatchObject({ value: { red: 'wait' }, context: { changes: 1 } });
    // The statechart comes from the definition the app sent: nested states, labelled edges.
    // (@statelyai/inspect sends the config with its keys sorted.)
    expect(inspected?.chart?.root.children.map((node) => node.key).sort()).toEqual([
      'green',
      'red',
      'yellow',
    ]);
    expect(
      inspected?.chart?.root.children
        .find((node) => node.key === 'red')
        ?.children.map((node) => node.id),
    ).toEqual(['traffic.red.wait', 'traffic.red.walk']);
    expect(inspected?.chart?.edges).toContainEqual(
      expect.objectContaining({
        source: 'traffic.green',
        target: 'traffic.yellow',
        event: 'TIMER',
        guard: 'roadIsClear',
      }),
    );
    expect(inspected?.chart?.edges).toContainEqual(
      expect.objectContaining({
        source: 'traffic.red.walk',
        target: 'traffic.red.wait',
        event: 'COUNTDOWN',
      }),
    );
    expect(server.events().map((entry) => entry.type)).toEqual(
      expect.arrayContaining(['TIMER', 'COUNTDOWN']),
    );
    expect(server.events().filter((entry) => entry.type === 'TIMER')).toHaveLength(2);
    // A page that connects later gets everything so far in its first message.
    const late = await openPage(server);
    cleanups.push(() => late.socket.close());
    const init = await late.next((message) => message.type === 'init');
    expect((init.actors as unknown[]).length).toBe(1);
    expect((init.events as { type: string }[]).some((entry) => entry.type === 'COUNTDOWN')).toBe(
      true,
    );
    expect(server.stats().dropped).toBe(0);
  });

  it('drops malformed frames with a logged reason and keeps serving', async () => {
    const page = await openPage(server);
    cleanups.push(() => page.socket.close());
    const app = new WebSocket(server.wsUrl);
    cleanups.push(() => app.close());
    await new Promise((resolve) => app.once('open', resolve));
    app.send('this is not JSON');
    app.send(JSON.stringify({ sessionId: 'x:1' }));
    app.send(JSON.stringify({ type: '@xstate.snapshot', sessionId: 'x:unknown', snapshot: {} }));
    app.send(JSON.stringify({ type: '@xstate.event', sessionId: 'x:1', event: { no: 'type' } }));
    app.send(JSON.stringify({ type: '@xstate.actor' }));
    app.send(JSON.stringify({ type: 'something.else', sessionId: 'x:1' }));
    app.send(
      JSON.stringify({
        type: '@xstate.actor',
        sessionId: 'x:1',
        name: 'survivor',
        definition: '{"states": ',
      }),
    );
    await page.next(actorNamed('survivor'));

    expect(server.stats()).toEqual({ frames: 7, dropped: 6 });
    expect(logged).toEqual([
      'dropped a frame from app 1: not JSON',
      'dropped a frame from app 1: no type',
      'dropped a frame from app 1: snapshot for unknown actor x:unknown',
      'dropped a frame from app 1: event without a type',
      'dropped a frame from app 1: @xstate.actor without a sessionId',
      'dropped a frame from app 1: unknown type "something.else"',
    ]);
    // A definition that does not parse leaves the actor without a chart, not the server broken.
    expect(server.actors().map((actor) => [actor.name, actor.chart])).toEqual([
      ['survivor', undefined],
    ]);
    expect((await fetch(server.url)).status).toBe(200);
    expect((await fetch(`${server.url}nothing-here`)).status).toBe(404);
  });

  it('serves every script and style of the page itself (no internet needed)', async () => {
    const html = await (await fetch(server.url)).text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset, `${asset} must be local`).not.toMatch(/^(https?:)?\/\//);
      expect((await fetch(new URL(asset, server.url))).status, asset).toBe(200);
    }
  });

  it('relays a page command to the app that owns the actor, and its result back', async () => {
    const page = await openPage(server);
    cleanups.push(() => page.socket.close());
    const app = new WebSocket(server.wsUrl);
    cleanups.push(() => app.close());
    await new Promise((resolve) => app.once('open', resolve));
    app.on('message', (data) => {
      const command = JSON.parse(String(data)) as { requestId: string; actor: string };
      app.send(
        JSON.stringify({
          type: 'rolebox.command_result',
          requestId: command.requestId,
          ok: false,
          error: `no ${command.actor} here`,
        }),
      );
    });
    app.send(JSON.stringify({ type: '@xstate.actor', sessionId: 'x:1', name: 'session:s1' }));
    await page.next(actorNamed('session:s1'));

    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'r1',
        actor: 'session:s1',
        command: { kind: 'idle' },
      }),
    );
    expect(await page.next((message) => message.requestId === 'r1')).toEqual({
      type: 'command_result',
      requestId: 'r1',
      ok: false,
      error: 'no session:s1 here',
    });
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'r2',
        actor: 'session:ghost',
        command: { kind: 'idle' },
      }),
    );
    expect(await page.next((message) => message.requestId === 'r2')).toMatchObject({
      ok: false,
      error: 'no running app owns actor session:ghost',
    });
    page.socket.send('{not json');
    page.socket.send(JSON.stringify({ type: 'hello' }));
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'r3',
        actor: 'session:s1',
        command: { kind: 'idle' },
      }),
    );
    await page.next((message) => message.requestId === 'r3');
    expect(logged).toEqual([
      'dropped a page frame: not JSON',
      'dropped a page frame: not a command',
    ]);
  });
});

describe('a rolebox streaming to the inspector ({ inspect: { url } })', () => {
  let server: InspectorServer;
  let rb: Rolebox;
  let page: Page;

  beforeEach(async () => {
    server = await startInspectorServer({ port: 0, log: () => {} });
    page = await openPage(server);
    rb = createRolebox({
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

  it('shows the actor tree with statecharts, and runs the signals a page sends', async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('awaiting-approval');
    session.signal({ type: 'need_approval' });
    session.idle();
    const fn = await page.next(actorNamed('fn:s1:awaiting-approval'));
    const sessionActor = await page.next(actorNamed('session:s1'));
    expect((fn.actor as { parentId: string }).parentId).toBe(
      (sessionActor.actor as { sessionId: string }).sessionId,
    );
    expect(
      (fn.actor as { chart: { root: { children: { key: string }[] } } }).chart.root.children.map(
        (node) => node.key,
      ),
    ).toEqual(expect.arrayContaining(['active', 'gated', 'complete']));
    const fnId = (fn.actor as { sessionId: string }).sessionId;
    await page.next(
      (message) =>
        message.type === 'snapshot' &&
        message.sessionId === fnId &&
        (message.snapshot as { value: unknown }).value === 'gated',
    );

    const commands: string[] = [];
    rb.on('inspector_command', (event) =>
      commands.push(`${event.actor} ${JSON.stringify(event.command)}`),
    );
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'a',
        actor: 'fn:s1:awaiting-approval',
        command: { kind: 'signal', type: 'answer' },
      }),
    );
    expect(await page.next((message) => message.requestId === 'a')).toMatchObject({ ok: true });
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'b',
        actor: 'session:s1',
        command: { kind: 'idle' },
      }),
    );
    expect(await page.next((message) => message.requestId === 'b')).toMatchObject({ ok: true });
    await page.next(
      (message) =>
        message.type === 'snapshot' &&
        message.sessionId === fnId &&
        (message.snapshot as { value: unknown }).value === 'complete',
    );
    expect(session.view().functions).toEqual([
      expect.objectContaining({ name: 'awaiting-approval', phase: 'complete' }),
    ]);
    expect(commands).toEqual([
      'fn:s1:awaiting-approval {"kind":"signal","type":"answer"}',
      'session:s1 {"kind":"idle"}',
    ]);
  });

  it('refuses a bad command with the RoleboxError message, changing nothing', async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('awaiting-approval');
    await page.next(actorNamed('fn:s1:awaiting-approval'));
    const before = session.view();
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'x',
        actor: 'fn:s1:awaiting-approval',
        command: { kind: 'signal', type: 'shout' },
      }),
    );
    const result = await page.next((message) => message.requestId === 'x');
    expect(result).toMatchObject({ ok: false });
    expect(String(result.error)).toContain('"shout"');
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'y',
        actor: 'session:s1',
        command: { kind: 'dance' },
      }),
    );
    expect(String((await page.next((message) => message.requestId === 'y')).error)).toContain(
      'unknown command "dance"',
    );
    expect(session.view()).toEqual(before);
  });
});

describe('chartFromConfig', () => {
  it('turns a machine config (JSON) into nested states and transitions, eventless ones included', () => {
    // What @statelyai/inspect sends as `definition`: the machine's config, as JSON.
    const config = createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { always: { target: 'b', guard: 'ready' } }, b: { type: 'final' } },
    }).config;
    const chart = chartFromConfig(JSON.stringify(config));
    expect(chart?.root.children.map((node) => [node.key, node.type])).toEqual([
      ['a', 'atomic'],
      ['b', 'final'],
    ]);
    expect(chart?.edges).toEqual([
      expect.objectContaining({ source: 'm.a', target: 'm.b', event: '', guard: 'ready' }),
    ]);
    expect(chartFromConfig('not json')).toBeUndefined();
    expect(chartFromConfig(undefined)).toBeUndefined();
  });
});
