import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { createWebSocketInspector } from '@statelyai/inspect';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { assign, createActor, createMachine } from 'xstate';
import { chartFromConfig } from '../inspector/chart.js';
import {
  type InspectorServer,
  type InspectorServerOptions,
  startInspectorServer,
} from '../inspector/server.js';
import { createRolebox, defineFunction, isRoleboxError, type Rolebox } from '../src/index.js';
import { SimulatedClock } from '../src/testing/simulated-clock.js';
import { openApp, openPage } from './support/inspector-clients.js';

type Page = Awaited<ReturnType<typeof openPage>>;
const actorNamed = (name: string) => (message: Record<string, unknown>) =>
  message.type === 'actor' && (message.actor as { name: string }).name === name;
/** The server's id (`<app>/<sessionId>`) of the actor in an `actor` message. */
const idOf = (message: Record<string, unknown>) => (message.actor as { id: string }).id;

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
    expect(inspected?.id).toBe(`1/${actor.sessionId}`);
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

    expect(server.stats()).toMatchObject({ frames: 7, dropped: 6 });
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
    expect((await fetch(new URL('/nothing-here', server.url))).status).toBe(404);
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
    app.send(JSON.stringify({ type: 'rolebox.app', name: 'test app', pid: 1 }));
    app.send(JSON.stringify({ type: '@xstate.actor', sessionId: 'x:1', name: 'session:s1' }));
    const s1 = idOf(await page.next(actorNamed('session:s1')));

    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'r1',
        actor: s1,
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
      error: 'no actor "session:ghost"',
    });
    page.socket.send('{not json');
    page.socket.send(JSON.stringify({ type: 'hello' }));
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'r3',
        actor: s1,
        command: { kind: 'idle' },
      }),
    );
    await page.next((message) => message.requestId === 'r3');
    expect(logged).toEqual([
      'dropped a frame from page 1: not JSON',
      'dropped a frame from page 1: not a command',
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
    expect((fn.actor as { app: number }).app).toBe((sessionActor.actor as { app: number }).app);
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
        actor: idOf(fn),
        command: { kind: 'signal', type: 'answer' },
      }),
    );
    expect(await page.next((message) => message.requestId === 'a')).toMatchObject({ ok: true });
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'b',
        actor: idOf(sessionActor),
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

  it('tells the host of a page command before what it caused, and of a refused one with why', async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('awaiting-approval');
    const fn = idOf(await page.next(actorNamed('fn:s1:awaiting-approval')));
    const told: string[] = [];
    rb.on('*', (event) =>
      told.push(
        event.type === 'inspector_command'
          ? `inspector_command ${JSON.stringify(event.command)}${event.refused ? ` refused: ${event.refused}` : ''}`
          : event.type,
      ),
    );
    // A handler of the command sees it done: the signal is recorded when it runs.
    let recordedWhenTold: unknown;
    rb.on('inspector_command', () => {
      recordedWhenTold = session.view().functions[0]?.signals;
    });
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'a',
        actor: fn,
        command: { kind: 'signal', type: 'need_approval' },
      }),
    );
    expect(await page.next((message) => message.requestId === 'a')).toMatchObject({ ok: true });
    expect(told[0]).toBe('inspector_command {"kind":"signal","type":"need_approval"}');
    expect(told.slice(1)).toContain('signal');
    expect(JSON.stringify(recordedWhenTold)).toContain('need_approval');

    told.length = 0;
    const before = session.view();
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'b',
        actor: fn,
        command: { kind: 'signal', type: 'shout' },
      }),
    );
    expect(await page.next((message) => message.requestId === 'b')).toMatchObject({ ok: false });
    expect(told).toEqual([
      expect.stringMatching(
        /^inspector_command \{"kind":"signal","type":"shout"\} refused: .*"shout"/,
      ),
    ]);
    expect(session.view()).toEqual(before);
  });

  it('tells the host of a fork from the page once the new session is made', async () => {
    const journaled = createRolebox({ inspect: { url: server.wsUrl }, journal: true });
    await journaled.start();
    try {
      const session = await journaled.openSession({ id: 'j1' });
      session.send({
        type: 'session_started',
        availableSkills: [{ name: 'write' }],
        initialSkill: 'write',
      });
      const actor = idOf(await page.next(actorNamed('session:j1')));
      const told: { event: unknown; forkOpen: boolean }[] = [];
      journaled.on('inspector_command', (event) =>
        told.push({ event, forkOpen: journaled.sessions().includes('j1-fork') }),
      );
      page.socket.send(
        JSON.stringify({
          type: 'command',
          requestId: 'f',
          actor,
          command: { kind: 'fork', atEvent: 1, as: 'j1-fork' },
        }),
      );
      expect(await page.next((message) => message.requestId === 'f')).toMatchObject({ ok: true });
      expect(told).toEqual([
        {
          event: {
            type: 'inspector_command',
            sessionId: 'j1',
            actor: 'session:j1',
            command: { kind: 'fork', atEvent: 1, as: 'j1-fork' },
          },
          forkOpen: true,
        },
      ]);
    } finally {
      await journaled.stop();
    }
  });

  it('refuses a bad command with the RoleboxError message, changing nothing', async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('awaiting-approval');
    const fn = idOf(await page.next(actorNamed('fn:s1:awaiting-approval')));
    const sessionActor = idOf(await page.next(actorNamed('session:s1')));
    const before = session.view();
    page.socket.send(
      JSON.stringify({
        type: 'command',
        requestId: 'x',
        actor: fn,
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
        actor: sessionActor,
        command: { kind: 'dance' },
      }),
    );
    expect(String((await page.next((message) => message.requestId === 'y')).error)).toContain(
      'unknown command "dance"',
    );
    expect(session.view()).toEqual(before);
  });
});

/** Answers a WebSocket handshake got: `'open'`, or the HTTP status it was refused with. */
function handshake(url: string, origin?: string): Promise<number | 'open'> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, origin ? { origin } : {});
    socket.once('open', () => {
      socket.close();
      resolve('open');
    });
    socket.once('unexpected-response', (request, response) => {
      resolve(response.statusCode ?? 0);
      request.destroy();
    });
    socket.once('error', reject);
  });
}

/** A client-to-server WebSocket text frame (masked, as clients must send them). */
function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const length =
    payload.length < 126
      ? Buffer.from([0x80 | payload.length])
      : Buffer.from([0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const masked = payload.map((byte, at) => byte ^ (mask[at % 4] as number));
  return Buffer.concat([Buffer.from([0x81]), length, mask, masked]);
}

/**
 * Sends a WebSocket handshake with a frame right behind it, in the same packet, as a
 * hostile client would; returns the head of the server's answer.
 */
async function pipelinedHandshake(
  port: number,
  path: string,
  origin: string | undefined,
  frame: string,
): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const head = [
    `GET ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    'Sec-WebSocket-Version: 13',
    ...(origin ? [`Origin: ${origin}`] : []),
    '',
    '',
  ].join('\r\n');
  socket.write(Buffer.concat([Buffer.from(head), maskedTextFrame(frame)]));
  let answer = '';
  for await (const chunk of socket) {
    answer += String(chunk);
    if (answer.includes('\r\n\r\n')) break;
  }
  socket.destroy();
  return answer.split('\r\n')[0] as string;
}

describe('the inspector server against hostile clients', () => {
  let server: InspectorServer;
  let logged: string[];
  const cleanups: (() => unknown)[] = [];
  const start = async (options: InspectorServerOptions = {}) => {
    server = await startInspectorServer({
      port: 0,
      log: (message) => logged.push(message),
      ...options,
    });
    return server;
  };

  beforeEach(() => {
    logged = [];
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await server?.stop();
  });

  /** Connects and remembers to close it after the test. */
  const track = <T extends { socket: WebSocket }>(client: T): T => {
    cleanups.push(() => client.socket.terminate());
    return client;
  };

  it('prints a page URL with a random per-run token', async () => {
    await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/?token=${server.token}`);
    const other = await startInspectorServer({ port: 0, log: () => {} });
    cleanups.push(() => other.stop());
    expect(other.token).not.toBe(server.token);
  });

  it('lets a page in only from its own origin and with its token; refuses others before reading a frame', async () => {
    await start({ token: 'the-token-of-this-run' });
    const ui = `${server.wsUrl}/ui`;
    // The page as a browser opens it (either name of the loopback), and a script (no Origin).
    expect(
      await handshake(`${ui}?token=the-token-of-this-run`, `http://127.0.0.1:${server.port}`),
    ).toBe('open');
    expect(
      await handshake(`${ui}?token=the-token-of-this-run`, `http://localhost:${server.port}`),
    ).toBe('open');
    expect(await handshake(`${ui}?token=the-token-of-this-run`)).toBe('open');
    // Any other web page, even one that knows the token; and no token, or a wrong one.
    expect(await handshake(`${ui}?token=the-token-of-this-run`, 'https://evil.example')).toBe(403);
    expect(await handshake(`${ui}?token=the-token-of-this-run`, 'http://127.0.0.1:1')).toBe(403);
    expect(await handshake(ui, `http://127.0.0.1:${server.port}`)).toBe(401);
    expect(await handshake(`${ui}?token=the-token-of-this-run!`)).toBe(401);
    expect(await handshake(`${ui}?token=THE-TOKEN-OF-THIS-RUN`)).toBe(401);
    expect(logged).toEqual([
      'refused a connection: page from origin "https://evil.example" (only the inspector\'s own page may connect)',
      'refused a connection: page from origin "http://127.0.0.1:1" (only the inspector\'s own page may connect)',
      'refused a connection: page without a token (open the URL the inspector printed)',
      'refused a connection: page with a wrong token',
      'refused a connection: page with a wrong token',
    ]);

    // A command pipelined behind a refused handshake is never read: the app gets nothing.
    const page = track(await openPage(server));
    const app = track(await openApp(server, 'app'));
    app.send({ type: '@xstate.actor', sessionId: 'x:0', name: 'session:approval' });
    await page.next(actorNamed('session:approval'));
    const command = JSON.stringify({
      type: 'command',
      requestId: 'evil',
      actor: '1/x:0',
      command: { kind: 'signal', type: 'answer' },
    });
    expect(await pipelinedHandshake(server.port, '/ui?token=wrong', undefined, command)).toBe(
      'HTTP/1.1 401 Unauthorized',
    );
    expect(
      await pipelinedHandshake(
        server.port,
        '/ui?token=the-token-of-this-run',
        'https://evil.example',
        command,
      ),
    ).toBe('HTTP/1.1 403 Forbidden');
    // The same command from the real page does reach the app (so the one above could have).
    page.send({ ...JSON.parse(command), requestId: 'real' });
    await app.next((message) => message.type === 'rolebox.command');
    expect(app.messages.map((message) => message.type)).toEqual(['rolebox.command']);
    expect(server.stats()).toMatchObject({ refused: 7, pendingCommands: 1 });
  });

  it('refuses an app connection from a foreign browser origin, so a web page cannot inject actors', async () => {
    await start({ appOrigins: ['http://localhost:5173'] });
    const inject = JSON.stringify({
      type: '@xstate.actor',
      sessionId: 'x:evil',
      name: 'session:fake',
    });
    expect(await pipelinedHandshake(server.port, '/', 'https://evil.example', inject)).toBe(
      'HTTP/1.1 403 Forbidden',
    );
    expect(await handshake(server.wsUrl, `http://127.0.0.1:${server.port}`)).toBe(403);
    expect(server.stats()).toMatchObject({ frames: 0, refused: 2 });
    expect(server.actors()).toEqual([]);
    expect(logged).toEqual([
      'refused a connection: app from browser origin "https://evil.example" (allow it with appOrigins)',
      `refused a connection: app from browser origin "http://127.0.0.1:${server.port}" (allow it with appOrigins)`,
    ]);
    // A Node app (no Origin) and a browser app from an allowed origin stream as before.
    expect(await pipelinedHandshake(server.port, '/', undefined, inject)).toBe(
      'HTTP/1.1 101 Switching Protocols',
    );
    expect(await handshake(server.wsUrl, 'http://localhost:5173')).toBe('open');
    await expect.poll(() => server.actors().map((actor) => actor.name)).toEqual(['session:fake']);
  });

  it('refuses options out of range with invalid_argument, starting nothing', async () => {
    const refusals: [InspectorServerOptions, RegExp][] = [
      [{ token: 'short' }, /token must be 16 to 256 characters .* got 5 character\(s\)/],
      [{ token: 'has spaces in it, sixteen+' }, /token must be/],
      [{ appOrigins: ['localhost:5173'] }, /appOrigins must list origins .* got "localhost:5173"/],
      [{ appOrigins: ['http://localhost:5173/app'] }, /got "http:\/\/localhost:5173\/app"/],
      [{ maxKeptBytes: -1 }, /maxKeptBytes must be a positive whole number, got -1/],
      [{ commandTimeoutMs: 1.5 }, /commandTimeoutMs must be a positive whole number, got 1.5/],
    ];
    for (const [options, message] of refusals) {
      const error = await startInspectorServer({ port: 0, log: () => {}, ...options }).catch(
        (caught: unknown) => caught,
      );
      expect(isRoleboxError(error, 'invalid_argument'), String(error)).toBe(true);
      expect((error as Error).message).toMatch(message);
    }
  });

  it('drops hostile frames (huge, 100 000 deep, not a machine, unknown) with a logged reason and stays up', async () => {
    await start({ maxFrameBytes: 256 * 1024 });
    const page = track(await openPage(server));
    const app = track(await openApp(server));
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    app.send('{"type": "@xstate.event", "sessionId": "x:1", "event": {"type": "CUT');
    app.send(`{"type":"@xstate.event","sessionId":"x:1","event":{"type":"DEEP","data":${deep}}}`);
    app.send(`{"type":"@xstate.snapshot","sessionId":"x:1","snapshot":${deep}}`);
    app.send({ type: 'rolebox.whatever', sessionId: 'x:1' });
    app.send({ type: { nested: 'type' } });
    app.send([1, 2, 3]);
    app.send(null);
    // Definitions that are not machines: the actor is kept, without a chart.
    const notMachines = [
      '{"states": 5}',
      '{"initial": "nowhere", "states": {"a": {}}}',
      '{"initial": "a", "states": {"a": {"on": {"GO": "#nowhere"}}}}',
      '[1, 2]',
      '"a string"',
      deep,
    ];
    for (const [index, definition] of notMachines.entries())
      app.send({
        type: '@xstate.actor',
        sessionId: `x:${index}`,
        name: `odd-${index}`,
        definition,
      });
    app.send({ type: '@xstate.actor', sessionId: 'x:last', name: 'survivor' });
    await page.next(actorNamed('survivor'));
    expect(logged).toEqual([
      'dropped a frame from app 1: not JSON',
      'dropped a frame from app 1: nested deeper than 64 levels',
      'dropped a frame from app 1: nested deeper than 64 levels',
      'dropped a frame from app 1: unknown type "rolebox.whatever"',
      'dropped a frame from app 1: no type',
      'dropped a frame from app 1: no type',
      'dropped a frame from app 1: no type',
      'actor "odd-5" of app 1: definition nested deeper than 64 levels; no chart',
    ]);
    expect(server.actors().map((actor) => [actor.name, actor.chart])).toEqual([
      ...notMachines.map((_, index) => [`odd-${index}`, undefined]),
      ['survivor', undefined],
    ]);

    // Over maxFrameBytes: the connection is closed (ws cannot skip a frame), nothing else.
    const closed = new Promise((resolve) => app.socket.once('close', resolve));
    app.send({
      type: '@xstate.event',
      sessionId: 'x:1',
      event: { type: 'BIG', data: 'x'.repeat(300_000) },
    });
    expect(await closed).toBe(1009);
    await expect
      .poll(() => logged.at(-1))
      .toBe('app 1 sent a frame over maxFrameBytes (262144); connection closed');

    // Still serving: the page, a page that connects now, and new apps.
    const late = track(await openPage(server));
    const init = await late.next((message) => message.type === 'init');
    expect((init.actors as unknown[]).length).toBe(7);
    expect(init.events).toEqual([]);
    const next = track(await openApp(server));
    next.send({ type: '@xstate.actor', sessionId: 'x:1', name: 'after' });
    await late.next(actorNamed('after'));
    expect((await fetch(server.url)).status).toBe(200);
    expect(server.stats()).toMatchObject({ frames: 15, dropped: 8 });
  });

  it('sends a command only to the app that owns the actor: same names in two apps never collide', async () => {
    await start();
    const page = track(await openPage(server));
    const first = track(await openApp(server, 'first'));
    const second = track(await openApp(server, 'second'));
    first.send({ type: '@xstate.actor', sessionId: 'x:0', name: 'session:approval' });
    await page.next((message) => message.type === 'actor' && idOf(message) === '1/x:0');
    second.send({ type: '@xstate.actor', sessionId: 'x:0', name: 'session:approval' });
    await page.next((message) => message.type === 'actor' && idOf(message) === '2/x:0');
    expect(server.actors().map((actor) => [actor.id, actor.app, actor.name])).toEqual([
      ['1/x:0', 1, 'session:approval'],
      ['2/x:0', 2, 'session:approval'],
    ]);
    expect(server.apps()).toEqual([
      { id: 1, name: 'first', pid: 4242, rolebox: true, connected: true },
      { id: 2, name: 'second', pid: 4242, rolebox: true, connected: true },
    ]);

    page.send({ type: 'command', requestId: 'to-2', actor: '2/x:0', command: { kind: 'idle' } });
    const command = await second.next((message) => message.type === 'rolebox.command');
    expect(command).toMatchObject({
      actor: 'session:approval',
      sessionId: 'x:0',
      command: { kind: 'idle' },
    });
    // The first app cannot answer it in the second's place.
    first.send({ type: 'rolebox.command_result', requestId: command.requestId, ok: true });
    second.send({
      type: 'rolebox.command_result',
      requestId: command.requestId,
      ok: false,
      error: 'no',
    });
    expect(await page.next((message) => message.requestId === 'to-2')).toEqual({
      type: 'command_result',
      requestId: 'to-2',
      ok: false,
      error: 'no',
    });
    expect(first.messages).toEqual([]);
    expect(logged).toEqual([
      `dropped a frame from app 1: a result for ${JSON.stringify(command.requestId)}, which app 1 is not waiting on`,
    ]);

    // Two pages may pick the same requestId: each gets its own answer.
    const other = track(await openPage(server));
    page.send({ type: 'command', requestId: 'same', actor: '1/x:0', command: { kind: 'idle' } });
    other.send({ type: 'command', requestId: 'same', actor: '2/x:0', command: { kind: 'idle' } });
    const toFirst = await first.next((message) => message.type === 'rolebox.command');
    const toSecond = await second.next(
      (message) => message.type === 'rolebox.command' && message.requestId !== command.requestId,
    );
    first.send({
      type: 'rolebox.command_result',
      requestId: toFirst.requestId,
      ok: false,
      error: 'first',
    });
    second.send({
      type: 'rolebox.command_result',
      requestId: toSecond.requestId,
      ok: false,
      error: 'second',
    });
    expect(await page.next((message) => message.requestId === 'same')).toMatchObject({
      error: 'first',
    });
    expect(await other.next((message) => message.requestId === 'same')).toMatchObject({
      error: 'second',
    });
  });

  it('never hands commands to an app that floods 10 001 actors and then registers the same name', async () => {
    await start();
    const page = track(await openPage(server));
    const owner = track(await openApp(server, 'owner'));
    owner.send({ type: '@xstate.actor', sessionId: 'x:0', name: 'session:approval' });
    await page.next(actorNamed('session:approval'));
    const flooder = track(await openApp(server, 'flooder'));
    for (let index = 0; index < 10_001; index++)
      flooder.send({ type: '@xstate.actor', sessionId: `x:${index}`, name: `flood:${index}` });
    flooder.send({ type: '@xstate.actor', sessionId: 'x:late', name: 'session:approval' });
    flooder.send({ type: '@xstate.event', sessionId: 'x:late', event: { type: 'marker' } });
    await page.next((message) => message.type === 'event');

    // The owner's actor stayed (live actors are never evicted); the flood over the limit did not.
    expect(server.actors().filter((actor) => actor.name === 'session:approval')).toEqual([
      expect.objectContaining({ id: '1/x:0', app: 1 }),
    ]);
    expect(server.actors()).toHaveLength(10_000);
    expect(logged.at(-1)).toBe(
      'dropped a frame from app 2: actor "session:approval": actorLimit (10000) reached by live actors',
    );
    page.send({
      type: 'command',
      requestId: 'a',
      actor: '1/x:0',
      command: { kind: 'signal', type: 'answer' },
    });
    await owner.next((message) => message.type === 'rolebox.command');
    expect(flooder.messages).toEqual([]);

    // When the owner goes, its actors are shown as gone and take no commands; nobody else gets them.
    owner.socket.close();
    await page.next(
      (message) =>
        message.type === 'app' && (message.app as { connected: boolean }).connected === false,
    );
    expect(await page.next((message) => message.requestId === 'a')).toMatchObject({
      ok: false,
      error: 'app 1 disconnected before answering',
    });
    expect(server.actors().find((actor) => actor.id === '1/x:0')?.gone).toBe(true);
    page.send({ type: 'command', requestId: 'b', actor: '1/x:0', command: { kind: 'idle' } });
    expect(await page.next((message) => message.requestId === 'b')).toMatchObject({
      ok: false,
      error: 'app 1, which reported session:approval, has disconnected',
    });
    expect(flooder.messages).toEqual([]);
  });

  it('does not send commands to an app that did not say it takes them (a plain XState app)', async () => {
    await start();
    const page = track(await openPage(server));
    const plain = track(await openApp(server));
    plain.send({ type: '@xstate.actor', sessionId: 'x:0', name: 'session:lookalike' });
    await page.next(actorNamed('session:lookalike'));
    page.send({ type: 'command', requestId: 'p', actor: '1/x:0', command: { kind: 'idle' } });
    expect(await page.next((message) => message.requestId === 'p')).toMatchObject({
      ok: false,
      error: 'app 1, which reported session:lookalike, does not take commands (not a rolebox)',
    });
    expect(plain.messages).toEqual([]);
  });

  it('keeps what it holds under maxKeptBytes: drops the oldest events, then finished actors, then the frame', async () => {
    const maxKeptBytes = 64 * 1024;
    await start({ maxKeptBytes });
    const page = track(await openPage(server));
    const app = track(await openApp(server));
    app.send({
      type: '@xstate.actor',
      sessionId: 'x:live',
      name: 'live',
      snapshot: { status: 'active' },
    });
    app.send({
      type: '@xstate.actor',
      sessionId: 'x:done',
      name: 'done',
      snapshot: { status: 'active' },
    });
    app.send({
      type: '@xstate.snapshot',
      sessionId: 'x:done',
      snapshot: { status: 'done', output: 'd'.repeat(8_000) },
    });
    const kilobyte = 'k'.repeat(1024);
    for (let index = 0; index < 200; index++)
      app.send({
        type: '@xstate.event',
        sessionId: 'x:live',
        event: { type: `e${index}`, kilobyte },
      });
    await page.next(
      (message) => message.type === 'event' && (message.entry as { type: string }).type === 'e199',
    );
    const events = server.events();
    expect(events.length).toBeLessThan(200);
    expect(events.at(-1)?.type).toBe('e199');
    expect(events[0]?.type).not.toBe('e0');
    expect(server.stats().peakKeptBytes).toBeLessThanOrEqual(maxKeptBytes);
    expect(logged).toContain(
      `dropped the oldest events to stay under ${maxKeptBytes} bytes (1 so far)`,
    );

    // A live actor's big snapshot: every event goes, then the finished actor; the live one stays.
    app.send({
      type: '@xstate.snapshot',
      sessionId: 'x:live',
      snapshot: { status: 'active', big: 'b'.repeat(58_000) },
    });
    await page.next((message) => message.type === 'forget');
    expect(server.actors().map((actor) => actor.name)).toEqual(['live']);
    expect(server.events()).toEqual([]);
    expect(logged).toContain('forgot 1 finished or disconnected actor(s) to stay within bounds');
    // Nothing left to let go: a frame that does not fit is dropped, with the reason.
    app.send({
      type: '@xstate.actor',
      sessionId: 'x:new',
      name: 'new',
      snapshot: { big: 'n'.repeat(10_000) },
    });
    app.send({
      type: '@xstate.event',
      sessionId: 'x:live',
      event: { type: 'huge', data: 'h'.repeat(70_000) },
    });
    app.send({ type: '@xstate.event', sessionId: 'x:live', event: { type: 'marker' } });
    await page.next(
      (message) =>
        message.type === 'event' && (message.entry as { type: string }).type === 'marker',
    );
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^dropped a frame from app 1: actor "new": inspector memory is full \(\d+ of 65536 bytes kept for live actors\)$/,
        ),
        expect.stringMatching(
          /^dropped a frame from app 1: event "huge": \d+ bytes is more than maxKeptBytes \(65536\)$/,
        ),
      ]),
    );
    expect(server.stats().peakKeptBytes).toBeLessThanOrEqual(maxKeptBytes);
    // What the server counts is what it keeps.
    const late = track(await openPage(server));
    await late.next((message) => message.type === 'init');
    expect(server.stats().keptBytes).toBeLessThanOrEqual(maxKeptBytes);
  });

  it('disconnects a page that does not read, with a logged reason, and keeps serving the others', async () => {
    const maxKeptBytes = 1024 * 1024;
    await start({ maxKeptBytes, pageBufferBytes: 256 * 1024 });
    const stuck = track(await openPage(server));
    await stuck.next((message) => message.type === 'init');
    stuck.socket.pause();
    const reader = track(await openPage(server));
    const app = track(await openApp(server));
    const chunk = 'c'.repeat(64 * 1024);
    // Enough to fill the kernel's socket buffers, then the server's own: at most 64 MB.
    let sent = 0;
    while (!logged.some((line) => line.startsWith('disconnected page 1')) && sent < 1_000) {
      for (let index = 0; index < 20; index++)
        app.send({ type: '@xstate.event', sessionId: 'x:1', event: { type: `e${sent++}`, chunk } });
      const last = `e${sent - 1}`;
      await reader.next(
        (message) => message.type === 'event' && (message.entry as { type: string }).type === last,
      );
    }
    const disconnects = logged.filter((line) => line.startsWith('disconnected page'));
    expect(disconnects).toEqual([
      expect.stringMatching(
        /^disconnected page 1: it does not read \(\d+ bytes waiting, pageBufferBytes 262144\)$/,
      ),
    ]);
    expect(server.stats()).toMatchObject({ pages: 1 });
    expect(server.stats().peakKeptBytes).toBeLessThanOrEqual(maxKeptBytes);
    app.send({ type: '@xstate.event', sessionId: 'x:1', event: { type: 'after' } });
    await reader.next(
      (message) => message.type === 'event' && (message.entry as { type: string }).type === 'after',
    );
  });

  it('expires a command its app never answers, and tells the page (time and count bounded)', async () => {
    const clock = new SimulatedClock(1_000);
    await start({ clock, commandTimeoutMs: 30_000, maxPendingCommands: 2 });
    const page = track(await openPage(server));
    const app = track(await openApp(server, 'silent'));
    app.send({ type: '@xstate.actor', sessionId: 'x:0', name: 'session:s' });
    await page.next(actorNamed('session:s'));
    const commands = () => app.messages.filter((message) => message.type === 'rolebox.command');

    page.send({ type: 'command', requestId: 1, actor: '1/x:0', command: { kind: 'idle' } });
    await expect.poll(() => commands().length).toBe(1);
    clock.advance(29_999);
    expect(server.stats().pendingCommands).toBe(1);
    clock.advance(1);
    expect(await page.next((message) => message.requestId === 1)).toEqual({
      type: 'command_result',
      requestId: 1,
      ok: false,
      error: 'no answer from app 1 within 30000 ms',
      expired: true,
    });
    expect(server.stats().pendingCommands).toBe(0);
    // A late answer finds nobody waiting.
    app.send({ type: 'rolebox.command_result', requestId: commands()[0]?.requestId, ok: true });

    // More than maxPendingCommands waiting: the oldest gives way at once.
    for (const requestId of [2, 3, 4])
      page.send({ type: 'command', requestId, actor: '1/x:0', command: { kind: 'idle' } });
    expect(await page.next((message) => message.requestId === 2)).toMatchObject({
      ok: false,
      expired: true,
      error: 'more than 2 commands were waiting for an answer',
    });
    await expect.poll(() => commands().length).toBe(4);
    expect(server.stats().pendingCommands).toBe(2);
    // A page that leaves takes its waiting commands with it.
    page.socket.close();
    await expect.poll(() => server.stats().pendingCommands).toBe(0);
    expect(logged).toEqual([
      `command ${commands()[0]?.requestId} to app 1 expired: no answer from app 1 within 30000 ms`,
      `dropped a frame from app 1: a result for ${JSON.stringify(commands()[0]?.requestId)}, which app 1 is not waiting on`,
      `command ${commands()[1]?.requestId} to app 1 expired: more than 2 commands were waiting for an answer`,
    ]);
    expect(clock.pendingTimers).toBe(0);
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
