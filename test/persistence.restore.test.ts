import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  MemorySnapshotStore,
  type RoleboxError,
  type SessionHandle,
} from '../src/index.js';
import { decodeEnvelope, SYSTEM_RECORD_ID } from '../src/persistence/envelope.js';
import { unsealedText } from '../src/persistence/record-checksum.js';
import { ScriptedDispatcher, settle } from '../src/testing/index.js';
import { errorOf, rejectionOf } from './support/errors.js';
import { GatedDispatcher } from './support/gated-dispatcher.js';
import { boot, CountingStore } from './support/persistence.js';

const view = (session: SessionHandle) => JSON.parse(JSON.stringify(session.view()));

describe('incremental persistence', () => {
  it('writes only the session that changed, once per debounce window', async () => {
    const store = new CountingStore();
    const a = await boot({ store });
    const [s1, s2, s3] = await Promise.all(
      ['S1', 'S2', 'S3'].map((id) => a.rb.openSession({ id })),
    );
    await a.advance(200);
    store.written.length = 0;
    s2?.activate('approval');
    s2?.signal({ type: 'need_approval' });
    s2?.message('hello');
    await a.advance(199);
    expect(store.written).toEqual([]);
    await a.advance(1);
    expect(store.written).toEqual([['S2']]);
    s1?.message('x');
    s3?.message('y');
    await a.rb.flush();
    expect(store.written.at(-1)?.sort()).toEqual(['S1', 'S3']);
  });

  it('flushes on stop, deletes a closed session, and keeps the system record', async () => {
    const store = new MemorySnapshotStore();
    const a = await boot({ store });
    const kept = await a.rb.openSession({ id: 'kept' });
    const gone = await a.rb.openSession({ id: 'gone' });
    kept.activate('approval');
    await a.rb.flush();
    gone.close();
    await a.rb.stop();
    expect([...store.records.keys()].sort()).toEqual([SYSTEM_RECORD_ID, 'kept']);
    const envelope = decodeEnvelope('kept', store.records.get('kept') as string);
    expect(envelope).toMatchObject({ format: 'rolebox.snapshot', sessionId: 'kept', savedAt: 0 });
  });

  it('a failed save halts the rolebox: reported once, every later call refused, no further work', async () => {
    const store = new MemorySnapshotStore();
    const dispatcher = new ScriptedDispatcher();
    const a = await boot({ store, dispatcher });
    const session = await a.rb.openSession({ id: 'S' });
    session.startLoop('|loop:3| survey');
    await a.advance(0);
    await a.advance(200);
    expect(store.records.has('S')).toBe(true);
    const saved = store.records.get('S');
    store.save = async () => {
      throw new Error('disk full');
    };
    dispatcher.complete(undefined, 'round one');
    await a.advance(200);
    const errors = a.events.filter((event) => event.type === 'error');
    expect(errors).toHaveLength(1);
    const failure = (errors[0] as unknown as { error: RoleboxError }).error;
    expect(failure.code).toBe('store_failed');
    expect(failure.message).toContain('could not save session(s) S: disk full');
    // Nothing runs ahead of the store: the next round is never dispatched.
    await a.advance(10_000);
    expect(dispatcher.tasks).toHaveLength(1);
    expect(errorOf(() => session.view()).code).toBe('store_failed');
    expect((await rejectionOf(() => a.rb.openSession({ id: 'T' }))).code).toBe('store_failed');
    expect((await rejectionOf(() => a.rb.flush())).code).toBe('store_failed');
    expect(store.records.get('S')).toBe(saved);
    await a.rb.stop();
    // A new process on a working store goes on from what was saved: the round's result is
    // read from the dispatcher and the loop advances.
    delete (store as { save?: unknown }).save;
    const b = await boot({ store, dispatcher }, 1_000);
    expect(b.report.restored).toEqual(['S']);
    await b.advance(0);
    await b.advance(2_000);
    expect(dispatcher.tasks).toHaveLength(2);
    expect(b.notes()).toEqual([
      '[loop-progress round 1/3 completed, session=worker-1, duration=1.0s]',
    ]);
  });
});

describe('restore', () => {
  it('brings back every session with its functions, artifacts, runtime phase and continuation budget', async () => {
    const store = new MemorySnapshotStore();
    const a = await boot({ store });
    const s = await a.rb.openSession({ id: 'S', acceptanceMode: 'no_confirmation' });
    s.activate('approval');
    s.signal({ type: 'need_approval', payload: { reason: 'prod' } });
    s.idle();
    s.artifacts.write({ name: 'plan', content: 'v1' });
    s.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
    });
    const before = view(s);
    await a.rb.flush();
    a.crash();

    const b = await boot({ store }, 5_000);
    expect(b.report).toEqual({ restored: ['S'], failed: [] });
    const restored = b.rb.session('S');
    expect(view(restored)).toEqual(before);
    // And it goes on from there.
    restored.signal({ type: 'answer' });
    expect(restored.idle().completed).toEqual(['approval']);
    expect(restored.send({ type: 'user_submitted_input', text: 'go' }).phase).toBe('running');
  });

  it('opens a stored session on demand when it is not live', async () => {
    const store = new MemorySnapshotStore();
    const a = await boot({ store });
    const s = await a.rb.openSession({ id: 'later' });
    s.activate('approval');
    await a.rb.stop();
    // A rolebox that started before the record existed.
    const empty = new MemorySnapshotStore();
    const b = await boot({ store: empty });
    for (const [id, data] of store.records) empty.records.set(id, data);
    expect(b.rb.sessions()).toEqual([]);
    const reopened = await b.rb.openSession({ id: 'later' });
    expect(reopened.view().functions.map((fn) => [fn.name, fn.phase])).toEqual([
      ['approval', 'gated'],
    ]);
    expect(b.rb.sessions()).toEqual(['later']);
    expect((await rejectionOf(() => b.rb.openSession({ id: 'later' }))).code).toBe(
      'duplicate_session',
    );
  });
});

describe('bad stored data: a clear error for that session, the others restore', () => {
  async function threeSessions() {
    const store = new MemorySnapshotStore();
    const a = await boot({ store });
    for (const id of ['S1', 'S2', 'S3']) {
      const s = await a.rb.openSession({ id });
      s.activate('approval');
    }
    await a.rb.stop();
    return store;
  }
  // biome-ignore lint/suspicious/noExplicitAny: the tests reach into stored JSON to corrupt it
  const edit = (store: MemorySnapshotStore, change: (envelope: Record<string, any>) => void) => {
    const envelope = JSON.parse(store.records.get('S2') as string);
    change(envelope);
    // Edited by hand: without its checksum the record gets the full check.
    delete envelope.checksum;
    store.records.set('S2', JSON.stringify(envelope));
  };

  it.each([
    [
      'a truncated row',
      (store: MemorySnapshotStore) =>
        store.records.set('S2', (store.records.get('S2') as string).slice(0, 80)),
      'it is not valid JSON',
    ],
    [
      'wrong JSON',
      (store: MemorySnapshotStore) => store.records.set('S2', '{"format": "rolebox.snapshot"'),
      'it is not valid JSON',
    ],
    [
      'a record that is not an envelope',
      (store: MemorySnapshotStore) => store.records.set('S2', '{"hello": "world"}'),
      'format',
    ],
    [
      'an unknown state value',
      (store: MemorySnapshotStore) => edit(store, (e) => (e.snapshot.value = 'flying')),
      'unknown state "flying"',
    ],
    [
      'an unknown function state',
      (store: MemorySnapshotStore) =>
        edit(store, (e) => (e.snapshot.children['fn:approval'].snapshot.value = 'sleeping')),
      'child fn:approval: unknown state "sleeping"',
    ],
    [
      'a broken context',
      (store: MemorySnapshotStore) => edit(store, (e) => delete e.snapshot.context.liveFunctions),
      'session context: liveFunctions',
    ],
    [
      'a future schema version',
      (store: MemorySnapshotStore) => edit(store, (e) => (e.schemaVersion = 99)),
      'schema version 99, newer than this code',
    ],
    [
      'an unknown child actor',
      (store: MemorySnapshotStore) =>
        edit(store, (e) => (e.snapshot.children.ghost = { src: 'ghost', snapshot: {} })),
      'unknown actor "ghost"',
    ],
  ])('%s', async (_label, corrupt, why) => {
    const store = await threeSessions();
    corrupt(store);
    const corrupted = store.records.get('S2');
    const b = await boot({ store }, 1_000);
    expect(b.report.restored).toEqual(['S1', 'S3']);
    expect(b.report.failed).toHaveLength(1);
    expect(b.report.failed[0]?.sessionId).toBe('S2');
    expect(b.report.failed[0]?.error.message).toContain(why);
    // Refused to the call that activated it, and nothing else: no session_activated for it.
    expect(b.events).not.toContainEqual(expect.objectContaining({ sessionId: 'S2' }));
    expect(b.rb.session('S1').view().functions).toHaveLength(1);
    // The bad record is left alone for a human to look at, and opening it fails clearly.
    expect(store.records.get('S2')).toBe(corrupted);
    const reopen = await rejectionOf(() => b.rb.openSession({ id: 'S2' }));
    expect(['invalid_snapshot', 'snapshot_too_new']).toContain(reopen.code);
    expect(b.rb.sessions()).toEqual(['S1', 'S3']);
  });

  it('a function definition that no longer exists', async () => {
    const store = await threeSessions();
    const b = await boot({ store, functions: [{ name: 'other' }] }, 1_000);
    expect(b.report.restored).toEqual([]);
    expect(b.report.failed.map((failure) => failure.error.message)).toEqual(
      ['S1', 'S2', 'S3'].map(
        (id) =>
          `stored session "${id}" cannot be restored: child fn:approval: function "approval" is not defined any more`,
      ),
    );
  });

  it('an unreadable store fails start() clearly', async () => {
    const store = new MemorySnapshotStore();
    store.loadAll = async () => {
      throw Object.assign(new Error('store_failed'), { code: 'store_failed' });
    };
    await expect(boot({ store })).rejects.toThrow('store_failed');
  });
});

describe('loops after a restart (SPEC §3.6)', () => {
  async function loopUntil(
    world: { store: MemorySnapshotStore; dispatcher: ScriptedDispatcher },
    prepare: (a: Awaited<ReturnType<typeof boot>>) => Promise<void>,
  ) {
    const a = await boot({ ...world, functions: [] });
    const s = await a.rb.openSession({ id: 'S' });
    const started = s.startLoop('|loop:2| task');
    if (!started.ok) throw new Error(started.reason);
    await settle();
    await prepare(a);
    await a.rb.flush();
    a.crash();
    return started.loopId;
  }

  it("a round's worker session is saved in the loop registry with the round, not a step later", async () => {
    const store = new MemorySnapshotStore();
    const dispatcher = new GatedDispatcher();
    const a = await boot({ store, dispatcher, functions: [] });
    const s = await a.rb.openSession({ id: 'S' });
    const started = s.startLoop('|loop:2| task');
    if (!started.ok) throw new Error(started.reason);
    await settle();
    await a.rb.flush();
    const registryOf = () =>
      (
        decodeEnvelope(SYSTEM_RECORD_ID, store.records.get(SYSTEM_RECORD_ID) as string)
          .snapshot as {
          context: { loopRegistry: { loops: Record<string, { workerSessionIds: string[] }> } };
        }
      ).context.loopRegistry.loops[started.loopId];
    expect(registryOf()?.workerSessionIds).toEqual([]);
    // The dispatch returns: the loop waits for worker-1, and nothing else happens before the save.
    dispatcher.releaseDispatch();
    await settle();
    await a.rb.flush();
    expect(s.view().loop?.phase).toBe('awaiting_worker');
    expect(registryOf()?.workerSessionIds).toEqual(['worker-1']);
    a.crash();
  });

  it('awaiting_worker, task still running: re-subscribes and advances when it ends', async () => {
    const world = { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher() };
    await loopUntil(world, async (a) => a.advance(1_000));
    const b = await boot({ ...world, functions: [] }, 10_000);
    const s = b.rb.session('S');
    await settle();
    expect(s.view().loop?.phase).toBe('awaiting_worker');
    world.dispatcher.complete('task-1', 'one');
    await settle();
    await b.advance(2_000);
    expect(world.dispatcher.tasks).toHaveLength(2);
    expect(b.notes()).toEqual([
      '[loop-progress round 1/2 completed, session=worker-1, duration=10.0s]',
    ]);
  });

  it('awaiting_worker, task completed while down: summarizes and advances at once', async () => {
    const world = { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher() };
    await loopUntil(world, async () => {});
    world.dispatcher.complete('task-1', 'done while down');
    const b = await boot({ ...world, functions: [] }, 3_000);
    await settle();
    const loop = b.rb.session('S').view().loop;
    expect(loop).toMatchObject({
      phase: 'dispatching',
      current: 2,
      lastSummary: 'done while down',
      nextDispatchAt: 5_000,
    });
    expect(b.notes()).toEqual([
      '[loop-progress round 1/2 completed, session=worker-1, duration=3.0s]',
    ]);
  });

  it('awaiting_worker, task missing: interrupted', async () => {
    const world = { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher() };
    await loopUntil(world, async () => {});
    world.dispatcher.forget('task-1');
    const b = await boot({ ...world, functions: [] }, 3_000);
    await settle();
    expect(b.rb.session('S').view().loop).toMatchObject({
      phase: 'interrupted',
      errorReason: 'worker task unknown',
    });
    expect(b.notes()).toEqual([
      '[loop-progress loop interrupted]\nRounds: r1:worker-1(3.0s,cancelled)',
    ]);
  });

  it('dispatching, the dispatch never returned: dispatches again with the same key, one task', async () => {
    const dispatcher = new GatedDispatcher();
    const world = { store: new MemorySnapshotStore(), dispatcher };
    const loopId = await loopUntil(world, async () => {});
    dispatcher.releaseDispatch(); // the crashed process's call lands (its actor is gone)
    await settle();
    const b = await boot({ ...world, functions: [] }, 1_000);
    await settle();
    expect(b.rb.session('S').view().loop?.phase).toBe('dispatching');
    dispatcher.releaseDispatch();
    await settle();
    expect(dispatcher.dispatchCalls).toBe(2);
    expect(dispatcher.tasks.map((task) => task.key)).toEqual([`${loopId}:1`]);
    expect(b.rb.session('S').view().loop).toMatchObject({
      phase: 'awaiting_worker',
      activeWorkerTaskId: 'task-1',
    });
  });

  it('summarizing: reads the result again and advances', async () => {
    const dispatcher = new GatedDispatcher();
    const world = { store: new MemorySnapshotStore(), dispatcher };
    await loopUntil(world, async () => {
      dispatcher.releaseDispatch();
      await settle();
      dispatcher.complete('task-1', 'summary one');
      await settle();
    });
    const b = await boot({ ...world, functions: [] }, 1_000);
    await settle();
    expect(b.rb.session('S').view().loop?.phase).toBe('summarizing');
    dispatcher.releaseResult(); // the crashed process's read
    dispatcher.releaseResult();
    await settle();
    expect(b.rb.session('S').view().loop).toMatchObject({
      phase: 'dispatching',
      current: 2,
      lastSummary: 'summary one',
    });
  });

  it('during the inter-round delay: re-arms the deadline, to the millisecond', async () => {
    const world = { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher() };
    await loopUntil(world, async (a) => {
      await a.advance(1_000);
      world.dispatcher.complete('task-1', 'one');
      await settle(); // next dispatch due at 3 000
      await a.advance(500);
    });
    const b = await boot({ ...world, functions: [] }, 2_000);
    await settle();
    expect(b.rb.session('S').view().loop).toMatchObject({
      phase: 'dispatching',
      nextDispatchAt: 3_000,
    });
    await b.advance(999);
    expect(world.dispatcher.tasks).toHaveLength(1);
    await b.advance(1);
    expect(world.dispatcher.tasks).toHaveLength(2);
    expect(world.dispatcher.task(2)).toMatchObject({ status: 'running' });
    expect(b.rb.session('S').view().loop?.rounds[1]?.startedAt).toBe(3_000);
  });

  it('a round record with output facts restores with them; malformed facts are refused', async () => {
    const facts = { bytes: 1_048_576, keptBytes: 65_536, truncated: true };
    const world = { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher() };
    await loopUntil(world, async (a) => {
      world.dispatcher.complete('task-1', 'one', facts);
      await settle();
      await a.advance(10);
    });
    const stored = world.store.records.get('S') as string;
    const b = await boot({ ...world, functions: [] }, 1_000);
    expect(b.rb.session('S').view().loop?.rounds[0]?.output).toEqual(facts);
    b.crash();

    // Edited by hand, without its checksum: the full check names the malformed fact.
    world.store.records.set(
      'S',
      unsealedText(stored).replace('"truncated":true', '"truncated":"yes"'),
    );
    const c = await boot({ ...world, functions: [] }, 1_000);
    expect(c.report.failed).toHaveLength(1);
    expect(c.report.failed[0]?.error).toMatchObject({ code: 'invalid_snapshot' });
    expect(c.report.failed[0]?.error.message).toContain('rounds.0.output.truncated');
  });

  it('a deadline that passed while the process was down fires at once after restore', async () => {
    const world = { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher() };
    await loopUntil(world, async (a) => {
      world.dispatcher.complete('task-1', 'one');
      await settle();
      await a.advance(10);
    });
    const b = await boot({ ...world, functions: [] }, 60_000);
    await b.advance(0);
    expect(world.dispatcher.tasks).toHaveLength(2);
    expect(b.rb.session('S').view().loop?.rounds[1]?.startedAt).toBe(60_000);
  });

  it('a round timeout that passed while down cancels the worker at once', async () => {
    const world = { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher() };
    await loopUntil({ ...world }, async () => {});
    const b = await boot(
      { ...world, functions: [], limits: { roundTimeoutMs: 60_000 } },
      2_000_000,
    );
    await b.advance(0);
    expect(b.rb.session('S').view().loop).toMatchObject({
      phase: 'error',
      errorReason: 'round timeout',
    });
    expect(world.dispatcher.cancelled).toEqual(['task-1']);
  });
});

describe('the actor system before start', () => {
  it('is not there yet', () => {
    const rb = createRolebox();
    expect(errorOf(() => rb.system).code).toBe('not_started');
  });
});
