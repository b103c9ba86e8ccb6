// The inspector's kept store on its own: what it keeps, what it tells pages, and how it
// stays within its count and byte bounds (no socket, no server).
import { describe, expect, it } from 'vitest';
import type { App } from '../inspector/kept-records.js';
import {
  KeptStore,
  type KeptStoreOptions,
  TRACE_LIMIT,
  traceProblem,
} from '../inspector/kept-store.js';
import { SimulatedClock } from '../src/testing/simulated-clock.js';

type Message = Record<string, unknown>;

function storeWith(overrides: Partial<KeptStoreOptions> = {}) {
  const sent: Message[] = [];
  const logged: string[] = [];
  const dropped: string[] = [];
  const store = new KeptStore({
    historyLimit: 2_000,
    actorLimit: 10_000,
    maxKeptBytes: 64 * 1024 * 1024,
    maxDepth: 64,
    clock: new SimulatedClock(1_000),
    log: (message) => logged.push(message),
    broadcast: (text) => sent.push(JSON.parse(text) as Message),
    ...overrides,
  });
  const drop = (why: string) => dropped.push(why);
  // A connected app: a socket is all `isGone` looks at.
  const app = store.addApp({} as never);
  const actor = (sessionId: string, snapshot: unknown = { status: 'active' }) =>
    store.putActor(app, `${app.id}/${sessionId}`, sessionId, { sessionId, snapshot }, drop);
  const event = (sessionId: string, type: string, payload = '') =>
    store.putEvent(app, `${app.id}/${sessionId}`, sessionId, { event: { type, payload } }, drop);
  return { store, app, sent, logged, dropped, drop, actor, event };
}

const trace = (nodes = 0) => ({
  version: 1,
  source: { sourceId: 's', sourceType: 'manual' },
  signals: Array.from({ length: nodes }, () => ({})),
  actions: [],
  results: [],
  edges: [],
  metadata: { status: 'done' },
});

describe('the kept store', () => {
  it('keeps an actor, its events and the snapshot after each, and tells pages in order', () => {
    const { store, app, sent, dropped, actor, event } = storeWith();
    actor('x');
    event('x', 'GO');
    store.putSnapshot(
      `${app.id}/x`,
      'x',
      { snapshot: { value: 'b' }, event: { type: 'GO' } },
      () => {},
    );
    expect(dropped).toEqual([]);
    expect(sent.map((message) => message.type)).toEqual([
      'app',
      'actor',
      'event',
      'snapshot',
      'event_snapshot',
    ]);
    const [kept] = store.events.values();
    expect(kept?.snapshot).toBe('{"value":"b"}');
    expect([...store.actors.values()][0]?.snapshot).toBe('{"value":"b"}');
    const init = JSON.parse(store.initMessage()) as Message;
    expect(init.type).toBe('init');
    expect((init.events as Message[])[0]).toMatchObject({ type: 'GO', snapshot: { value: 'b' } });
    expect(init.catalogue).toHaveProperty('signals');
  });

  it('counts every record in keptBytes and gives the bytes back when an actor is forgotten', () => {
    const { store, app, actor } = storeWith();
    expect(store.keptBytes).toBe(0);
    actor('x', { big: 'y'.repeat(1000) });
    const withActor = store.keptBytes;
    expect(withActor).toBeGreaterThan(1000);
    store.forget(app, ['x']);
    expect(store.keptBytes).toBe(0);
    expect(store.peakKeptBytes).toBe(withActor);
  });

  it('over maxKeptBytes drops the oldest events first, and logs it', () => {
    const { store, actor, event, logged } = storeWith({ maxKeptBytes: 4_000 });
    actor('x');
    for (let n = 0; n < 20; n++) event('x', `E${n}`, 'p'.repeat(200));
    expect(store.keptBytes).toBeLessThanOrEqual(4_000);
    const types = store.events.values().map((kept) => kept.type);
    expect(types.at(-1)).toBe('E19');
    expect(types[0]).not.toBe('E0');
    expect(store.actors.size).toBe(1);
    expect(logged.some((line) => line.startsWith('dropped the oldest events'))).toBe(true);
  });

  it('never evicts a live actor: a new one that does not fit is dropped with the reason', () => {
    const { store, actor, dropped } = storeWith({ maxKeptBytes: 2_000 });
    actor('live', { status: 'active', data: 'd'.repeat(1200) });
    actor('next', { status: 'active', data: 'd'.repeat(1200) });
    expect([...store.actors.keys()]).toEqual(['1/live']);
    expect(dropped).toEqual([expect.stringMatching(/^actor "next": inspector memory is full/)]);
  });

  it('forgets a finished actor, oldest first, to make room, and tells pages which', () => {
    const { store, actor, sent } = storeWith({ maxKeptBytes: 2_000 });
    actor('done', { status: 'done', data: 'd'.repeat(1200) });
    actor('next', { status: 'active', data: 'd'.repeat(1200) });
    expect([...store.actors.keys()]).toEqual(['1/next']);
    expect(sent).toContainEqual({ type: 'forget', actors: ['1/done'] });
  });

  it('refuses a record larger than maxKeptBytes outright, keeping what it had', () => {
    const { store, actor, dropped } = storeWith({ maxKeptBytes: 1_000 });
    actor('big', { data: 'd'.repeat(2_000) });
    expect(store.actors.size).toBe(0);
    expect(store.keptBytes).toBe(0);
    expect(dropped[0]).toMatch(/bytes is more than maxKeptBytes \(1000\)/);
  });

  it('keeps at most historyLimit events and actorLimit live actors', () => {
    const { store, actor, event, dropped } = storeWith({ historyLimit: 3, actorLimit: 2 });
    actor('a');
    actor('b');
    actor('c');
    expect(store.actors.size).toBe(2);
    expect(dropped).toEqual(['actor "c": actorLimit (2) reached by live actors']);
    for (const type of ['1', '2', '3', '4', '5']) event('a', type);
    expect(store.events.values().map((kept) => kept.type)).toEqual(['3', '4', '5']);
  });

  it('marks the newest matching event with its journal entry, only for a rolebox app', () => {
    const { store, app, actor, event, sent, dropped, drop } = storeWith();
    actor('x');
    event('x', 'GO');
    const mark = { sessionId: 's1', index: 0, actor: 'x', event: 'GO' };
    store.markJournal(app, mark, drop);
    expect(dropped).toEqual(['rolebox.journal from an app that did not say rolebox.app']);
    app.rolebox = true;
    store.markJournal(app, mark, drop);
    expect(store.events.values()[0]?.fork).toBe('{"sessionId":"s1","index":0}');
    expect(sent.at(-1)).toEqual({
      type: 'event_mark',
      seq: 1,
      fork: { sessionId: 's1', index: 0 },
    });
    store.markJournal(app, { ...mark, event: 'STOP' }, drop);
    expect(dropped.at(-1)).toMatch(/no recent "STOP" event to "x"/);
  });

  it(`keeps the newest ${TRACE_LIMIT} pipeline runs and refuses a trace it cannot draw`, () => {
    const { store, app, drop, dropped } = storeWith();
    for (let n = 0; n <= TRACE_LIMIT; n++)
      store.putTrace(app, { runId: `r${n}`, trace: trace() }, drop);
    expect(store.traces.length).toBe(TRACE_LIMIT);
    expect(JSON.parse(store.traces.values()[0]?.json ?? '')).toMatchObject({ runId: 'r1' });
    store.putTrace(app, { runId: 'bad', trace: { version: 2 } }, drop);
    expect(dropped).toEqual(['rolebox.trace "bad": trace version 2, not 1']);
    expect(traceProblem(trace(1_000))).toBe('1001 nodes, more than 1000');
    expect(traceProblem(trace(3))).toBeUndefined();
  });

  it('forgets an app that left once it has no actors, and lets its actors be evicted', () => {
    const { store, app, actor, sent } = storeWith({ maxKeptBytes: 2_000 });
    actor('x', { status: 'active', data: 'd'.repeat(1200) });
    app.socket = undefined;
    store.appLeft(app);
    expect(store.apps.has(app.id)).toBe(true);
    const other = store.addApp({} as never);
    store.putActor(other, `${other.id}/y`, 'y', { snapshot: { data: 'd'.repeat(1200) } }, () => {});
    expect([...store.actors.keys()]).toEqual([`${other.id}/y`]);
    expect(store.apps.has(app.id)).toBe(false);
    expect(sent).toContainEqual({ type: 'forget', actors: ['1/x'] });
  });

  it("a source's app stays when its last actor is forgotten (a source is never gone)", () => {
    const { store } = storeWith();
    const source: App = store.addApp(undefined, { kind: 'store', name: 's'.repeat(300) });
    expect(source.name).toHaveLength(200);
    store.putActor(source, `${source.id}/a`, 'a', { snapshot: null }, () => {});
    store.forget(source, ['a']);
    expect(store.apps.has(source.id)).toBe(true);
  });
});
