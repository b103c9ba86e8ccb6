import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  defineFunction,
  type HostEvent,
  MemorySnapshotStore,
  type SnapshotStore,
} from '../src/index.js';
import { decodeEnvelope } from '../src/persistence/envelope.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { errorOf, rejectionOf } from './support/errors.js';

// One process drives a session (SPEC §6): two roleboxes on one store, here in one process
// (each its own owner, each on its own simulated clock); test/ownership.processes.test.ts
// does the same with real processes.

const LEASE_MS = 30_000;
const approval = defineFunction({
  name: 'approval',
  gate: 'signal_observed(answer)',
  continue_until: 'signal_observed(answer)',
});

async function boot(store: SnapshotStore, at = 0) {
  const clock = new SimulatedClock(at);
  const rb = createRolebox({
    store,
    clock,
    ids: seededIdSource(at + 3),
    functions: [approval],
    leaseMs: LEASE_MS,
    idleMs: Number.POSITIVE_INFINITY,
    saveDebounceMs: 0,
    // These sessions wait for a human (gated): kept live so that each owner holds its claim
    // (passivated, it would release it, and there would be no contention to test).
    passivateWhenWaiting: false,
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  return { rb, clock, events };
}

describe('ownership between two roleboxes on one store', () => {
  it('the second is refused with session_owned_elsewhere naming the owner, by openSession and by session()', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot(store);
    (await first.rb.openSession({ id: 'S' })).activate('approval');
    await first.rb.flush();
    const second = await boot(store, 1_000);
    const opened = await rejectionOf(() => second.rb.openSession({ id: 'S' }));
    expect(opened.code).toBe('session_owned_elsewhere');
    expect(opened.message).toContain(`pid ${process.pid} on ${hostname()}`);
    expect(opened.details).toMatchObject({
      sessionId: 'S',
      owner: { pid: process.pid, host: hostname() },
      expiresAt: LEASE_MS,
    });
    const read = errorOf(() => second.rb.session('S'));
    expect(read.code).toBe('session_owned_elsewhere');
    // Refused means unchanged: the first still drives it, the second holds nothing.
    expect(second.rb.sessions()).toEqual([]);
    expect(
      first.rb
        .session('S')
        .view()
        .functions.map((fn) => fn.phase),
    ).toEqual(['gated']);
  });

  it('with wait: true the second takes over once the first stops (it releases its claims)', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot(store);
    (await first.rb.openSession({ id: 'S' })).activate('approval');
    const second = await boot(store, 1_000);
    let opened = false;
    const waiting = second.rb.openSession({ id: 'S', wait: true }).then((handle) => {
      opened = true;
      return handle;
    });
    second.clock.advance(LEASE_MS / 3);
    await settle();
    expect(opened).toBe(false);
    await first.rb.stop();
    second.clock.advance(LEASE_MS / 3);
    const handle = await waiting;
    expect(handle.view().functions.map((fn) => fn.phase)).toEqual(['gated']);
    expect(second.rb.sessions()).toEqual(['S']);
  });

  it('with wait: true the second takes over once the first’s claim runs out', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot(store);
    await first.rb.openSession({ id: 'S' });
    await first.rb.flush();
    // The first never renews (its clock stands still): its claim ends at LEASE_MS.
    const second = await boot(store, 1_000);
    let opened = false;
    const waiting = second.rb.openSession({ id: 'S', wait: true }).then(() => (opened = true));
    await settle();
    for (let t = 1_000; t < LEASE_MS - 1_000; t += 1_000) {
      second.clock.advance(1_000);
      await settle();
    }
    expect(opened).toBe(false);
    second.clock.advance(2_000);
    await waiting;
    expect(second.rb.sessions()).toEqual(['S']);
  });

  it('a stale owner’s save is refused: it drops the session, and nothing it did after the takeover is stored', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot(store);
    const mine = await first.rb.openSession({ id: 'S' });
    mine.activate('approval');
    await first.rb.flush();
    // The first stalls beyond its lease; the second takes the session over and answers.
    const second = await boot(store, LEASE_MS + 1);
    const theirs = await second.rb.openSession({ id: 'S' });
    theirs.signal({ type: 'answer' });
    await second.rb.flush();
    const storedBySecond = store.records.get('S');
    // The first wakes up and goes on as if nothing happened: its save is refused.
    mine.signal({ type: 'need_approval', payload: { reason: 'stale' } });
    await first.rb.flush();
    expect(first.events).toContainEqual(
      expect.objectContaining({
        type: 'error',
        sessionId: 'S',
        error: expect.objectContaining({ code: 'session_owned_elsewhere' }),
      }),
    );
    expect(first.rb.sessions()).toEqual([]);
    expect(store.records.get('S')).toBe(storedBySecond);
    const stored = decodeEnvelope('S', storedBySecond as string).snapshot as {
      children: Record<string, { snapshot: { value: unknown } }>;
    };
    expect(stored.children['fn:approval']?.snapshot.value).toBe('active');
    // And the first cannot get it back while the second holds it.
    expect(errorOf(() => first.rb.session('S')).code).toBe('session_owned_elsewhere');
  });

  it('a claim that could not be renewed (taken over meanwhile) drops the session at the renewal', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot(store);
    await first.rb.openSession({ id: 'S' });
    await first.rb.flush();
    const second = await boot(store, LEASE_MS + 1);
    await second.rb.openSession({ id: 'S' });
    first.clock.advance(LEASE_MS / 3);
    await settle();
    expect(first.rb.sessions()).toEqual([]);
    expect(first.events.filter((event) => event.type === 'error')).toHaveLength(1);
    expect(second.rb.sessions()).toEqual(['S']);
  });

  it('a rolebox whose actor system stopped dead frees its claims in this process at once', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot(store);
    await first.rb.openSession({ id: 'S' });
    await first.rb.flush();
    first.rb.system.stop(); // no rb.stop(): nothing released, as after a crash
    const second = await boot(store, 1_000);
    expect((await second.rb.openSession({ id: 'S' })).id).toBe('S');
  });

  it('claims are renewed while the session is live: another process is refused long after the first lease', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot(store);
    await first.rb.openSession({ id: 'S' });
    first.clock.advance(10 * LEASE_MS);
    await settle();
    expect(first.rb.sessions()).toEqual(['S']);
    const second = await boot(store, 10 * LEASE_MS + 1);
    expect((await rejectionOf(() => second.rb.openSession({ id: 'S' }))).code).toBe(
      'session_owned_elsewhere',
    );
  });
});
