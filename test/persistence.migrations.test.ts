import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOOP_MACHINE_VERSION } from '../machines/loop.machine.js';
import { SESSION_MACHINE_VERSION } from '../machines/session.machine.js';
import { MemorySnapshotStore } from '../src/index.js';
import { MACHINE_MIGRATIONS } from '../src/persistence/machine-migrations.js';
import { ScriptedDispatcher } from '../src/testing/index.js';
import { boot } from './support/persistence.js';

// Records written by rolebox 0.1 (loop machine version 1: a loop invoked actors for its I/O)
// restore on this code (version 2: the I/O is effects the runtime performs). The fixture
// was written by the 0.1 code: one loop awaiting its worker, one in the inter-round delay.
const STORED = join(import.meta.dirname, 'fixtures', 'stored-0.1', 'loops-in-flight.json');

function storedBy01() {
  const { records, tasks } = JSON.parse(readFileSync(STORED, 'utf8')) as {
    records: Record<string, unknown>;
    tasks: { taskId: string; key: string; status: string }[];
  };
  const store = new MemorySnapshotStore();
  for (const [id, envelope] of Object.entries(records))
    store.records.set(id, JSON.stringify(envelope));
  return { store, tasks };
}

describe('stores written by rolebox 0.1', () => {
  it('restore: the loops go on where they were, their invoked actors replaced by effects', async () => {
    const { store } = storedBy01();
    const v1 = JSON.parse(store.records.get('awaiting') as string);
    expect(v1.machineVersions.loop).toBe(1);
    const dispatcher = new ScriptedDispatcher();
    // The dispatcher the 0.1 process used: task-1 still runs, task-2 finished while it was down.
    await dispatcher.dispatchRound(
      { loopId: 'x', round: 1, originSessionId: 'awaiting', agent: 'default', prompt: '' },
      'loop_xb728i2zmord:1',
    );
    await dispatcher.dispatchRound(
      { loopId: 'y', round: 1, originSessionId: 'waiting', agent: 'default', prompt: '' },
      'loop_qvjqfhqxzgcs:1',
    );
    dispatcher.complete('task-2', 'first draft');
    const b = await boot({ store, dispatcher, limits: { interRoundDelayMs: 2_000 } }, 1_000);
    expect(b.report).toEqual({ restored: ['awaiting', 'waiting'], failed: [] });
    expect(b.rb.session('awaiting').view().loop).toMatchObject({
      phase: 'awaiting_worker',
      current: 1,
    });
    // The waiting loop's delay deadline is re-armed from its context and fires.
    expect(b.rb.session('waiting').view().loop).toMatchObject({ phase: 'dispatching', current: 2 });
    await b.advance(2_000);
    expect(dispatcher.tasks.map((task) => task.key)).toContain(
      `${b.rb.session('waiting').view().loop?.id}:2`,
    );
    // The awaiting loop is watched again: its worker's end advances it.
    dispatcher.complete('task-1', 'survey done');
    await b.advance(0);
    expect(b.rb.session('awaiting').view().loop).toMatchObject({ current: 2 });
    // Saved again, the records are current.
    await b.rb.flush();
    const saved = JSON.parse(store.records.get('awaiting') as string);
    expect(saved.machineVersions.loop).toBe(LOOP_MACHINE_VERSION);
    const loopChild = Object.values(
      saved.snapshot.children as Record<string, { src: string; snapshot: { children: object } }>,
    ).find((child) => child.src === 'loop');
    expect(loopChild?.snapshot.children).toEqual({});
  });
});

describe('session machine 5 → 6: the artifact store is spawned with the first artifact', () => {
  const store = (artifacts: object[]) => ({
    src: 'artifacts',
    systemId: 'artifacts:S1',
    snapshot: { status: 'active', context: { nextSeq: artifacts.length + 1, artifacts } },
  });
  const session = (children: Record<string, object>) => ({
    status: 'active',
    value: 'idle',
    context: { sessionId: 'S1' },
    children,
  });
  const migrate = MACHINE_MIGRATIONS.session[5] as (s: object) => Record<string, unknown>;

  it('drops an empty store, keeps one that holds artifacts, and leaves the rest alone', () => {
    const fn = { src: 'function', systemId: 'fn:S1:approval', snapshot: {} };
    expect(migrate(session({ artifacts: store([]), 'fn:approval': fn }))).toEqual(
      session({ 'fn:approval': fn }),
    );
    const kept = session({ artifacts: store([{ id: 'art-1', name: 'notes' }]), 'fn:approval': fn });
    expect(migrate(structuredClone(kept))).toEqual(kept);
    // A session already without a store, and the `$system` record, are returned as they were.
    expect(migrate(session({}))).toEqual(session({}));
    const system = { context: { loopRegistry: { loops: {} } } };
    expect(migrate(system)).toEqual(system);
  });
});

describe("session machine 6 → 7: a completed function's actor is stopped", () => {
  const fn = (status: string, value: string, name = 'approval') => ({
    src: 'function',
    systemId: `fn:S1:${name}`,
    snapshot: { status, value, context: { sessionId: 'S1', name }, children: {} },
  });
  const session = (liveFunctions: string[], children: Record<string, object>) => ({
    status: 'active',
    value: 'idle',
    context: { sessionId: 'S1', liveFunctions },
    children,
  });
  const migrate = MACHINE_MIGRATIONS.session[6] as (s: object) => Record<string, unknown>;

  it('drops a done function child that is not live, and leaves everything else to the check', () => {
    const review = fn('active', 'gated', 'review');
    expect(
      migrate(session(['review'], { 'fn:approval': fn('done', 'complete'), 'fn:review': review })),
    ).toEqual(session(['review'], { 'fn:review': review }));
    // A done child still listed as live is corrupt: kept, for the check to refuse it.
    const listed = session(['approval'], { 'fn:approval': fn('done', 'complete') });
    expect(migrate(structuredClone(listed))).toEqual(listed);
    // An active child, a session without children, and the `$system` record are unchanged.
    const active = session(['approval'], { 'fn:approval': fn('active', 'active') });
    expect(migrate(structuredClone(active))).toEqual(active);
    expect(migrate(session([], {}))).toEqual(session([], {}));
    const system = { context: { loopRegistry: { loops: {} } } };
    expect(migrate(system)).toEqual(system);
  });

  it('a session stored by version 6 with a completed function restores without its actor', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot({ store });
    const done = await first.rb.openSession({ id: 'done' });
    done.activate('approval');
    done.signal({ type: 'answer', payload: { approved: true } });
    expect(done.idle().completed).toEqual(['approval']);
    await first.rb.stop();
    const today = JSON.parse(store.records.get('done') as string);
    // Today's record keeps the completed function in retiredFunctions alone.
    expect(today.machineVersions.session).toBe(SESSION_MACHINE_VERSION);
    expect(Object.keys(today.snapshot.children)).toEqual([]);
    const retired = today.snapshot.context.retiredFunctions.approval;
    expect(retired).toMatchObject({ phase: 'complete', reason: 'completed' });
    // Version 6 kept the done actor beside it, with the same last state.
    const v6 = structuredClone(today);
    delete v6.checksum;
    v6.machineVersions.session = 6;
    v6.snapshot.children['fn:approval'] = {
      src: 'function',
      systemId: 'fn:done:approval',
      syncSnapshot: false,
      snapshot: {
        status: 'done',
        value: 'complete',
        historyValue: {},
        context: retired.context,
        children: {},
      },
    };
    store.records.set('done', JSON.stringify(v6));
    const second = await boot({ store }, 5_000);
    expect(second.report.failed).toEqual([]);
    const again = second.rb.session('done');
    expect(again.view().functions).toEqual([
      expect.objectContaining({ name: 'approval', status: 'completed' }),
    ]);
    // It works on: the function is activated again (a new actor under the same child id).
    again.activate('approval');
    expect(again.view().functions).toEqual([
      expect.objectContaining({ name: 'approval', status: 'live' }),
    ]);
    await second.rb.flush();
    const saved = JSON.parse(store.records.get('done') as string);
    expect(saved.machineVersions.session).toBe(SESSION_MACHINE_VERSION);
    expect(saved.snapshot.children['fn:approval'].snapshot.status).toBe('active');
    await second.rb.stop();
  });
});

describe('session machine 1 → 2: child ids are local (`fn:<name>`, `loop`)', () => {
  it('the migration renames function and loop children and keeps their systemIds', () => {
    const child = (src: string, systemId: string, context: object = {}) => ({
      src,
      systemId,
      snapshot: { status: 'active', value: 'active', context, children: {} },
    });
    const v1 = {
      status: 'active',
      value: 'idle',
      context: { sessionId: 'S1', activeLoopId: 'L7' },
      children: {
        artifacts: child('artifacts', 'artifacts:S1'),
        'fn:S1:approval': child('function', 'fn:S1:approval', {
          sessionId: 'S1',
          name: 'approval',
        }),
        'fn:S1:a:b': child('function', 'fn:S1:a:b', { sessionId: 'S1', name: 'a:b' }),
        'loop:L7': child('loop', 'loop:L7', { id: 'L7' }),
      },
    };
    const migrate = MACHINE_MIGRATIONS.session[1] as (s: object) => Record<string, unknown>;
    const v2 = migrate(structuredClone(v1)) as typeof v1 & {
      children: Record<string, { systemId: string }>;
    };
    expect(Object.keys(v2.children).sort()).toEqual(['artifacts', 'fn:a:b', 'fn:approval', 'loop']);
    expect(v2.children['fn:approval']).toEqual(v1.children['fn:S1:approval']);
    expect(v2.children.loop).toEqual(v1.children['loop:L7']);
    expect(v2.context).toEqual(v1.context);
    // A record without session children (the `$system` record) is returned as it was.
    const system = { context: { loopRegistry: { loops: {} } } };
    expect(migrate(system)).toEqual(system);
  });

  it('a store written by version 1 restores, works and is saved again with local child ids', async () => {
    const { store } = storedBy01();
    const v1 = JSON.parse(store.records.get('awaiting') as string);
    expect(v1.machineVersions.session).toBe(1);
    expect(Object.keys(v1.snapshot.children).sort()).toEqual([
      'artifacts',
      'fn:awaiting:approval',
      'loop:loop_xb728i2zmord',
    ]);
    const dispatcher = new ScriptedDispatcher();
    await dispatcher.dispatchRound(
      { loopId: 'x', round: 1, originSessionId: 'awaiting', agent: 'default', prompt: '' },
      'loop_xb728i2zmord:1',
    );
    const b = await boot({ store, dispatcher, limits: { interRoundDelayMs: 2_000 } }, 1_000);
    expect(b.report.failed).toEqual([]);
    const awaiting = b.rb.session('awaiting');
    // The function restored under its new child id still takes its session's commands.
    expect(awaiting.view().functions).toEqual([
      expect.objectContaining({ name: 'approval', status: 'live' }),
    ]);
    expect(JSON.stringify(awaiting.view().functions[0]?.signals)).not.toContain('escalate');
    awaiting.signal({ type: 'escalate', payload: { reason: 'x' } });
    expect(JSON.stringify(awaiting.view().functions[0]?.signals)).toContain('escalate');
    // The loop restored under `loop` is still driven: its worker's end advances it.
    dispatcher.complete('task-1', 'survey done');
    await b.advance(0);
    expect(awaiting.view().loop).toMatchObject({ current: 2 });
    await b.rb.flush();
    const saved = JSON.parse(store.records.get('awaiting') as string);
    expect(saved.machineVersions.session).toBe(SESSION_MACHINE_VERSION);
    expect(
      Object.entries(
        saved.snapshot.children as Record<string, { src: string; systemId: string }>,
      ).map(([id, child]) => [id, child.src, child.systemId]),
    ).toEqual(
      expect.arrayContaining([
        ['fn:approval', 'function', 'fn:awaiting:approval'],
        ['loop', 'loop', 'loop:loop_xb728i2zmord'],
      ]),
    );
    // Its empty artifact store is gone (session machine 6 spawns one with the first artifact).
    expect(Object.keys(saved.snapshot.children)).toHaveLength(2);
  });
});
