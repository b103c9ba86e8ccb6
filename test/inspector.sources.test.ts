import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { addReplaySource } from '../inspector/replay-source.js';
import { type InspectorServer, startInspectorServer } from '../inspector/server.js';
import { actorsOfSnapshot } from '../inspector/snapshot-actors.js';
import { addStoreSource } from '../inspector/store-source.js';
import { machineDefinitions } from '../src/cli/commands/inspect.js';
import type { RecordedRun } from '../src/persistence/journal.js';
import { replay } from '../src/testing/replay.js';

type Message = Record<string, unknown>;
const FIXTURE = join(import.meta.dirname, 'fixtures', 'approval-workflow.run.json');

let server: InspectorServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** A page on the server's /ui socket, with every message it got and a way to wait for one. */
async function openPage(inspector: InspectorServer) {
  const socket = new WebSocket(`${inspector.wsUrl}/ui?token=${inspector.token}`);
  const messages: Message[] = [];
  const waiters: { match: (m: Message) => boolean; resolve: (m: Message) => void }[] = [];
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as Message;
    messages.push(message);
    for (const waiter of [...waiters])
      if (waiter.match(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return {
    messages,
    send: (frame: unknown) => socket.send(JSON.stringify(frame)),
    next: (match: (m: Message) => boolean): Promise<Message> =>
      new Promise((resolve) => waiters.push({ match, resolve })),
  };
}

async function replayServer(logs: string[]) {
  server = await startInspectorServer({ port: 0, log: (message) => logs.push(message) });
  const run = JSON.parse(await readFile(FIXTURE, 'utf8')) as RecordedRun;
  const source = addReplaySource(server, {
    name: 'replay approval',
    initial: run.initial,
    journal: run.journal.map((entry) => ({
      at: entry.at,
      target: entry.target,
      event: { type: String(entry.event.type) },
      after: entry.after,
    })),
    definitions: machineDefinitions(),
  });
  return { server, source };
}

describe('inspector sources (a store browsed, a run replayed)', () => {
  it('moves a replay only on a well-formed page frame: others are dropped with a logged reason', async () => {
    const logs: string[] = [];
    const { server, source } = await replayServer(logs);
    const page = await openPage(server);
    const hostile: [unknown, RegExp][] = [
      [
        { type: 'replay', action: 'seek', to: -1 },
        /replay seek to -1: not a whole number from 0 to 6/,
      ],
      [{ type: 'replay', action: 'seek', to: 7 }, /replay seek to 7/],
      [{ type: 'replay', action: 'seek', to: '3' }, /replay seek to "3"/],
      [{ type: 'replay', action: 'step', by: 2 }, /replay step by 2: only 1 or -1/],
      [{ type: 'replay', action: 'rm -rf' }, /replay action "rm -rf": not seek or step/],
      [{ type: 'replay' }, /replay action undefined/],
    ];
    for (const [frame, reason] of hostile) {
      const before = logs.length;
      page.send(frame);
      await expect.poll(() => logs.slice(before).join('\n')).toMatch(reason);
      expect(logs.slice(before).join('\n')).toMatch(/^dropped a frame from page 1: /);
    }
    expect(source.position()).toBe(0);

    const moved = page.next((m) => m.type === 'replay' && m.position === 3);
    page.send({ type: 'replay', action: 'seek', to: 3 });
    expect(await moved).toMatchObject({
      total: 6,
      event: { index: 2, type: 'system.deliver', target: 'rolebox' },
      divergence: null,
    });
    // The replayed actors take no commands.
    const fn = server.actors().find((actor) => actor.name === 'fn:approval:awaiting-approval');
    expect(fn?.snapshot).toMatchObject({ value: 'gated' });
    const refused = page.next((m) => m.type === 'command_result');
    page.send({ type: 'command', requestId: 1, actor: fn?.id, command: { kind: 'idle' } });
    expect(await refused).toMatchObject({
      ok: false,
      error: 'fn:approval:awaiting-approval is replayed, read-only',
    });
    expect(server.apps()).toEqual([
      { id: 1, name: 'replay approval', rolebox: false, connected: true, source: 'replay' },
    ]);
  });

  it("lists a replayed run's recorded events in the log, at their recorded times, and names each one's log number in the position", async () => {
    const { server } = await replayServer([]);
    const run = JSON.parse(await readFile(FIXTURE, 'utf8')) as RecordedRun;
    const events = server.events();
    expect(events.map(({ type, sessionId, at }) => ({ type, sessionId, at }))).toEqual(
      run.journal.map((entry) => ({
        type: entry.event.type,
        sessionId: entry.target,
        at: entry.at,
      })),
    );
    const page = await openPage(server);
    const moved = page.next((m) => m.type === 'replay' && m.position === 2);
    page.send({ type: 'replay', action: 'seek', to: 2 });
    const seqs = events.map((event) => event.seq);
    expect(await moved).toMatchObject({ seqs, event: { index: 1, seq: seqs[1] } });
    // A seek adds no event: the log holds the recording, once.
    expect(server.events()).toHaveLength(run.journal.length);
  });

  it('drops a replay frame when no run is replayed', async () => {
    const logs: string[] = [];
    server = await startInspectorServer({ port: 0, log: (message) => logs.push(message) });
    const page = await openPage(server);
    page.send({ type: 'replay', action: 'seek', to: 1 });
    await expect
      .poll(() => logs.join('\n'))
      .toContain('dropped a frame from page 1: no replay running');
  });

  it('shows stored sessions with their charts, and an unreadable record as unreadable', async () => {
    server = await startInspectorServer({ port: 0, log: () => {} });
    const run = JSON.parse(await readFile(FIXTURE, 'utf8')) as RecordedRun;
    // A session's persisted snapshot, as the store keeps it: taken from the recorded system.
    const system = run.journal.at(-2)?.after as {
      children: Record<string, { snapshot: { children: Record<string, { snapshot: unknown }> } }>;
    };
    const shard = Object.values(system.children)[0]?.snapshot.children ?? {};
    const session = (shard['session:approval'] ?? system.children['session:approval'])?.snapshot;
    addStoreSource(server, {
      name: 'store state.db',
      sessions: [
        { id: 'approval', snapshot: session },
        { id: 'broken', error: 'stored session "broken": not JSON' },
      ],
      definitions: machineDefinitions(),
    });
    const byName = new Map(server.actors().map((actor) => [actor.name, actor]));
    expect(byName.get('session:approval')?.chart?.root.id).toBe('session');
    expect(byName.get('fn:approval:awaiting-approval')).toMatchObject({
      parentId: 'session:approval',
      snapshot: { value: 'active' },
    });
    expect(byName.get('fn:approval:awaiting-approval')?.chart).toBeDefined();
    expect(byName.get('session:broken')).toMatchObject({
      snapshot: { status: 'unreadable', error: 'stored session "broken": not JSON' },
      gone: false,
    });
    expect(byName.get('session:broken')?.chart).toBeUndefined();
  });
});

describe('a completed function in a snapshot', () => {
  it('is drawn from the retired record, and once where a run recorded before kept its done actor', async () => {
    const run = JSON.parse(await readFile(FIXTURE, 'utf8')) as RecordedRun;
    const recorded = run.journal.at(-1)?.after;
    const named = (system: unknown) =>
      actorsOfSnapshot('rolebox', system, machineDefinitions()).filter(
        (actor) => actor.name === 'fn:approval:awaiting-approval',
      );
    // Recorded by session machine 1: the done actor is there beside the retired record.
    expect(named(recorded)).toEqual([
      expect.objectContaining({ snapshot: expect.objectContaining({ status: 'done' }) }),
    ]);
    // Replayed today: no actor, the retired record alone draws it, with its last context.
    const steps: unknown[] = [];
    replay(run, { onStep: (_index, actual) => steps.push(actual) });
    const [drawn] = named(steps.at(-1));
    expect(named(steps.at(-1))).toHaveLength(1);
    expect(drawn).toMatchObject({
      parentId: 'session:approval',
      snapshot: { status: 'done', value: 'complete', context: { name: 'awaiting-approval' } },
    });
  });
});

describe('replay onStep', () => {
  it('hands over the replayed snapshot after every entry', async () => {
    const run = JSON.parse(await readFile(FIXTURE, 'utf8')) as RecordedRun;
    const steps: [number, unknown][] = [];
    const report = replay(run, { onStep: (index, actual) => steps.push([index, actual]) });
    expect(report.ok).toBe(true);
    expect(steps.map(([index]) => index)).toEqual([0, 1, 2, 3, 4, 5]);
    const fnValue = (system: unknown) =>
      actorsOfSnapshot('rolebox', system, machineDefinitions()).find(
        (actor) => actor.name === 'fn:approval:awaiting-approval',
      )?.snapshot;
    expect(fnValue(steps[4]?.[1])).toMatchObject({ value: 'active' });
    expect(fnValue(steps[5]?.[1])).toMatchObject({ status: 'done', value: 'complete' });
  });
});
