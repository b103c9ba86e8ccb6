// The inspector page approves and rejects approval requests (issue 25 item 5): its
// `approve` / `reject` commands go over the page socket, which the server lets in only with
// the run's token and from its own origin, and rolebox runs them through session.approve /
// session.reject, so the audit trail records who and the note, and a stale or bad one is
// refused with why, changing nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type InspectorServer, startInspectorServer } from '../inspector/server.js';
import { createRolebox, defineFunction, type Rolebox } from '../src/index.js';
import { type Message, openPage, openSocket } from './support/inspector-clients.js';

type Client = Awaited<ReturnType<typeof openSocket>>;

describe('approve and reject from the inspector page', () => {
  let server: InspectorServer;
  let rb: Rolebox;
  let page: Client;
  const logged: string[] = [];

  beforeEach(async () => {
    server = await startInspectorServer({ port: 0, log: (message) => logged.push(message) });
    page = await openPage(server);
    rb = createRolebox({
      inspect: { url: server.wsUrl },
      functions: [
        defineFunction({ name: 'deploy', gate: 'signal_observed(answer)' }),
        defineFunction({ name: 'review', gate: 'signal_observed(answer)' }),
      ],
    });
    await rb.start();
  });

  afterEach(async () => {
    await rb.stop();
    page.socket.close();
    await server.stop();
  });

  /** The server's id of actor `name`, once the app reported it. */
  async function actorId(name: string): Promise<string> {
    await page.next((m) => m.type === 'actor' && (m.actor as { name?: string }).name === name);
    return server.actors().find((actor) => actor.name === name)?.id as string;
  }

  let seq = 0;
  async function command(actor: string, body: Record<string, unknown>): Promise<Message> {
    const requestId = `p${++seq}`;
    page.send({ type: 'command', requestId, actor, command: body });
    return page.next((m) => m.type === 'command_result' && m.requestId === requestId);
  }

  it('records who approved with the note and the version seen, and who rejected with the reason', async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('deploy');
    session.activate('review');
    session.signal({ type: 'need_approval', payload: { reason: 'ship it' } });
    const target = await actorId('fn:s1:deploy');

    expect(
      await command(target, {
        kind: 'approve',
        requestId: 'deploy:r1',
        by: 'ana',
        note: 'checked',
        seenVersion: 1,
      }),
    ).toMatchObject({ ok: true });
    // Any actor of the session takes it: the function named by the request id is answered.
    const sessionActor = await actorId('session:s1');
    expect(
      await command(sessionActor, {
        kind: 'reject',
        requestId: 'review:r1',
        by: 'bo',
        reason: 'no plan',
      }),
    ).toMatchObject({ ok: true });
    expect(session.view().approvals).toEqual([
      expect.objectContaining({
        id: 'deploy:r1',
        status: 'answered',
        answeredBy: 'ana',
        note: 'checked',
        seenVersion: 1,
      }),
      expect.objectContaining({
        id: 'review:r1',
        status: 'rejected',
        answeredBy: 'bo',
        note: 'no plan',
      }),
    ]);
    expect(session.view().functions.map((fn) => fn.phase)).toEqual(['active', 'gated']);
  });

  it('refuses a stale, out-of-date or malformed answer with why, and changes nothing', async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('deploy');
    session.signal({ type: 'need_approval', payload: { reason: 'ship it' } });
    session.observeTool('write_file');
    const target = await actorId('fn:s1:deploy');
    const before = session.view().approvals;

    const refusals = [
      [{ kind: 'approve', requestId: 'deploy:r9', by: 'ana' }, 'unknown or already resolved'],
      [{ kind: 'approve', requestId: 'deploy:r1', seenVersion: 1 }, 'which changed since'],
      [{ kind: 'reject', requestId: 'deploy:r1', by: 'bo' }, 'reject needs a reason'],
      [{ kind: 'approve', requestId: 'deploy:r1', as: 'root' }, '"as"'],
      [{ kind: 'approve', requestId: 7 }, 'a request id is a string'],
    ] as const;
    for (const [body, why] of refusals) {
      const result = await command(target, body);
      expect(result, JSON.stringify(body)).toMatchObject({ ok: false });
      expect(String(result.error)).toContain(why);
    }
    expect(session.view().approvals).toEqual(before);
    expect(before).toEqual([expect.objectContaining({ id: 'deploy:r1', status: 'open' })]);
  });

  it('a socket without the token, with a wrong one or from a foreign origin cannot connect, so cannot approve', async () => {
    const session = await rb.openSession({ id: 's1' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    await actorId('fn:s1:deploy');
    const refusedWith = (url: string, origin?: string) =>
      openSocket(url, origin ? { origin } : {}).then(
        () => 'connected',
        (error: Error) => error.message,
      );
    expect(await refusedWith(`${server.wsUrl}/ui`)).toMatch(/401/);
    expect(await refusedWith(`${server.wsUrl}/ui?token=${server.token}x`)).toMatch(/401/);
    expect(
      await refusedWith(`${server.wsUrl}/ui?token=${server.token}`, 'http://evil.example'),
    ).toMatch(/403/);
    // The app socket is no way in either: a frame from an app is never run as a command.
    const app = await openSocket(server.wsUrl);
    app.send({
      type: 'command',
      requestId: 'x',
      actor: server.actors()[0]?.id,
      command: { kind: 'approve', requestId: 'deploy:r1' },
    });
    await expect
      .poll(() =>
        logged.some((line) => /dropped a frame from app \d+: unknown type "command"/.test(line)),
      )
      .toBe(true);
    // The page's own command afterwards is the first to reach rolebox.
    const target = server.actors().find((actor) => actor.name === 'fn:s1:deploy')?.id as string;
    expect(session.view().approvals[0]?.status).toBe('open');
    expect(
      await command(target, { kind: 'approve', requestId: 'deploy:r1', by: 'ana' }),
    ).toMatchObject({
      ok: true,
    });
    expect(session.view().approvals[0]).toMatchObject({ status: 'answered', answeredBy: 'ana' });
    app.socket.terminate();
    expect(logged.filter((line) => line.startsWith('refused a connection'))).toHaveLength(3);
  });
});
