import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { createRolebox, MemorySnapshotStore } from '../src/index.js';
import { SimulatedClock, settle } from '../src/testing/index.js';

// openSession({ id, wait: true }) of a session another owner holds, on a simulated clock
// (the two-process version is test/ownership.processes.test.ts).

describe('openSession({ id, wait: true })', () => {
  it("resolves with the session when this rolebox's own wake-up activated it as the owner's claim ran out", async () => {
    const clock = new SimulatedClock(1_000);
    const store = new MemorySnapshotStore();
    const first = createRolebox({ store, clock });
    await first.start();
    await first.openSession({ id: 'S' });
    await first.stop();
    // Another owner (a live pid of this host) holds S for 900 ms and never renews; S is due
    // for a wake-up now.
    const other = { ownerId: 'owner_elsewhere', pid: process.pid, host: hostname() };
    const claimed = await store.claim('S', other, 900, clock.now());
    if (!claimed.ok) throw new Error('claim refused');
    const lease = { sessionId: 'S', token: claimed.token };
    await store.setWakeUps([{ sessionId: 'S', at: clock.now() }], [lease], { now: clock.now() });

    const rb = createRolebox({ store, clock, leaseMs: 3_000 });
    expect((await rb.start()).wakeUps).toBe(1);
    const opened = rb.openSession({ id: 'S', wait: true });
    opened.catch(() => {}); // awaited below
    // The wake-up finds S owned and looks again when the claim runs out (at 1 900), as the
    // waiting open does: the wake-up activates S first, then the open finds it live.
    clock.advance(0);
    await settle();
    expect(rb.sessions()).toEqual([]);
    clock.advance(900);
    await settle();
    const session = await opened;
    expect(session.id).toBe('S');
    expect(rb.sessions()).toEqual(['S']);
    await rb.stop();
  });
});
