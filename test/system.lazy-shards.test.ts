import { describe, expect, it } from 'vitest';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { SYSTEM_MACHINE_VERSION } from '../machines/system.machine.js';
import { createRolebox, defineFunction, MemorySnapshotStore } from '../src/index.js';
import { shardActorId, shardIndexOf } from '../src/system/shards.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';

// Issue 26, decision 2: shards cost nothing until used. A shard is spawned with its first
// session and stopped with its last (closed or passivated); inspection sees sessions under
// the root, never a shard.

const approval = defineFunction({
  name: 'approval',
  gate: 'signal_observed(answer)',
  continue_until: 'signal_observed(answer)',
});

async function boot(
  options: {
    shards?: number;
    maxLiveSessions?: number;
    inspect?: (e: InspectionEvent) => void;
  } = {},
) {
  const store = new MemorySnapshotStore();
  const rb = createRolebox({
    store,
    clock: new SimulatedClock(0),
    ids: seededIdSource(3),
    functions: [approval],
    idleMs: Number.POSITIVE_INFINITY,
    ...options,
  });
  await rb.start();
  return { rb, store };
}

/** The ids of the root's running children (its shards). */
function shardsOf(root: AnyActorRef): string[] {
  return Object.keys((root.getSnapshot() as { children: object }).children).sort();
}

/** Two session ids whose shards differ among 256 (and so also any pair of ids at 1 shard). */
function idsInTwoShards(): [string, string] {
  const first = 'alpha';
  for (let i = 0; ; i++) {
    const other = `beta-${i}`;
    if (shardIndexOf(other, 256) !== shardIndexOf(first, 256)) return [first, other];
  }
}

describe('shards are spawned with their first session and stopped with their last', () => {
  it('a started rolebox has no shard; an open spawns its shard, a close stops it', async () => {
    const { rb } = await boot();
    expect(shardsOf(rb.system)).toEqual([]);
    const session = await rb.openSession({ id: 'one' });
    const shard = shardActorId(shardIndexOf('one', 256));
    expect(shardsOf(rb.system)).toEqual([shard]);
    expect(rb.system.system.get(shard)).toBeDefined();
    session.close();
    await settle();
    expect(shardsOf(rb.system)).toEqual([]);
    expect(rb.system.system.get(shard)).toBeUndefined();
    expect(rb.system.getSnapshot().status).toBe('active');
    // The same id (same shard) opens again: the shard comes back under its systemId.
    const again = await rb.openSession({ id: 'one' });
    expect(shardsOf(rb.system)).toEqual([shard]);
    again.setSlot('k', 1);
    expect(again.view().slots).toEqual({ k: 1 });
    await rb.stop();
  });

  it('a shard with two sessions stays until the second one leaves', async () => {
    const { rb } = await boot({ shards: 1 });
    const a = await rb.openSession({ id: 'a' });
    const b = await rb.openSession({ id: 'b' });
    expect(shardsOf(rb.system)).toEqual(['shard:0']);
    a.close();
    await settle();
    expect(shardsOf(rb.system)).toEqual(['shard:0']);
    expect(rb.sessions()).toEqual(['b']);
    b.setSlot('k', 'still here');
    expect(b.view().slots).toEqual({ k: 'still here' });
    b.close();
    await settle();
    expect(shardsOf(rb.system)).toEqual([]);
    await rb.stop();
  });

  it('a passivated session stops its shard; a command activates it under a new one', async () => {
    const [first, second] = idsInTwoShards();
    const { rb, store } = await boot({ maxLiveSessions: 1 });
    const session = await rb.openSession({ id: first });
    session.setSlot('before', 1);
    await rb.openSession({ id: second });
    await settle();
    // `first` was passivated to make room: stored, out of memory, its shard gone.
    expect(rb.sessions()).toEqual([second]);
    expect(store.records.has(first)).toBe(true);
    expect(shardsOf(rb.system)).toEqual([shardActorId(shardIndexOf(second, 256))]);
    rb.session(first).setSlot('after', 2);
    await settle();
    expect(rb.session(first).view().slots).toEqual({ before: 1, after: 2 });
    expect(shardsOf(rb.system)).toEqual([shardActorId(shardIndexOf(first, 256))]);
    await rb.stop();
  });

  it('rb.stop() stops every shard and session, and the root', async () => {
    const { rb } = await boot();
    const sessions = await Promise.all(['p', 'q', 'r', 's'].map((id) => rb.openSession({ id })));
    const shards = shardsOf(rb.system);
    expect(shards.length).toBeGreaterThan(1);
    const refs = shards.map((id) => rb.system.system.get(id) as AnyActorRef);
    await rb.stop();
    expect(refs.map((ref) => ref.getSnapshot().status)).toEqual(shards.map(() => 'stopped'));
    expect(sessions.length).toBe(4);
    expect(rb.system.getSnapshot().status).toBe('stopped');
  });
});

describe('a store written by system machine 2 (every shard spawned at start)', () => {
  it('restores: the loop registry and a paused session come back, its shard with it', async () => {
    const { rb, store } = await boot();
    const session = await rb.openSession({ id: 'paused' });
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { reason: 'refund' } });
    session.setSlot('k', 'v');
    await rb.flush();
    await rb.stop();
    // The records as the previous code wrote them: the same shapes, system version 2.
    for (const [id, text] of store.records) {
      const record = JSON.parse(text) as { machineVersions: { system: number }; checksum?: string };
      expect(record.machineVersions.system).toBe(SYSTEM_MACHINE_VERSION);
      record.machineVersions.system = 2;
      // Version 2 wrote no checksum (and this one would no longer match the bytes).
      delete record.checksum;
      store.records.set(id, JSON.stringify(record));
    }
    const clock = new SimulatedClock(0);
    const next = createRolebox({
      store,
      clock,
      functions: [approval],
      idleMs: Number.POSITIVE_INFINITY,
    });
    expect((await next.start()).failed).toEqual([]);
    expect(shardsOf(next.system)).toEqual([]);
    const restored = next.session('paused');
    expect(restored.view().slots).toEqual({ k: 'v' });
    expect(restored.view().functions).toMatchObject([{ name: 'approval', phase: 'gated' }]);
    expect(shardsOf(next.system)).toEqual([shardActorId(shardIndexOf('paused', 256))]);
    await next.stop();
  });
});

describe('inspection leaves shards out', () => {
  it('no shard actor, snapshot or routing leg; a session is the root’s child', async () => {
    type Ref = { readonly id: string; readonly _parent?: Ref };
    type Seen = { readonly type: string; readonly actorRef: Ref; readonly sourceRef?: Ref };
    const seen: Seen[] = [];
    const { rb } = await boot({ inspect: (event) => seen.push(event as unknown as Seen) });
    const session = await rb.openSession({ id: 'watched' });
    session.activate('approval');
    session.signal({ type: 'answer' });
    session.close();
    await settle();
    const isShardRef = (ref: Ref | undefined) => /^shard:/.test(ref?.id ?? '');
    expect(seen.filter((e) => isShardRef(e.actorRef) || isShardRef(e.sourceRef))).toEqual([]);
    const announced = seen.filter((e) => e.type === '@xstate.actor');
    const root = announced.find((e) => e.actorRef._parent === undefined)?.actorRef;
    const sessionActor = announced.find((e) => e.actorRef.id === 'session:watched')?.actorRef;
    expect(root).toBeDefined();
    expect(sessionActor?._parent).toBe(root);
    // The session's command arrives from the root, as if routed by it directly.
    const routed = seen.find(
      (e) => e.type === '@xstate.event' && e.actorRef.id === 'session:watched' && e.sourceRef,
    );
    expect(routed?.sourceRef).toBe(root);
    await rb.stop();
  });
});
