// The persister writes a session's wake-up row only when the store does not hold the same
// one already (under the same lease): a pending effect's saves (recorded, its result) keep
// the row due without rewriting it, and what a restart reads stays what it must wake.
import { describe, expect, it } from 'vitest';
import { createRolebox, MemorySnapshotStore, type RuntimeEvent } from '../src/index.js';
import { Persister } from '../src/persistence/persister.js';
import { sameWakeUp, WrittenWakeUps } from '../src/persistence/written-wake-ups.js';
import type { SessionLease, WakeUp } from '../src/ports/snapshot-store.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { APPROVE_POET, poemWritten, UNTIL_POET_APPROVAL } from './support/poem-flow.js';

const LEASE: SessionLease = { sessionId: 's', token: 7 };

describe('sameWakeUp', () => {
  it('is the same task and time, or both due already', () => {
    expect(sameWakeUp({ sessionId: 's', at: 50 }, { sessionId: 's', at: 50 }, 10)).toBe(true);
    expect(sameWakeUp({ sessionId: 's' }, { sessionId: 's' }, 10)).toBe(true);
    // Both due at `now`: either wakes the session at once.
    expect(sameWakeUp({ sessionId: 's', at: 5 }, { sessionId: 's', at: 10 }, 10)).toBe(true);
    // One in the future is a different wake-up.
    expect(sameWakeUp({ sessionId: 's', at: 5 }, { sessionId: 's', at: 11 }, 10)).toBe(false);
    expect(sameWakeUp({ sessionId: 's', at: 11 }, { sessionId: 's', at: 5 }, 10)).toBe(false);
    // A time against none, and a different task, are different.
    expect(sameWakeUp({ sessionId: 's', at: 5 }, { sessionId: 's' }, 10)).toBe(false);
    expect(sameWakeUp({ sessionId: 's' }, { sessionId: 's', at: 5 }, 10)).toBe(false);
    expect(sameWakeUp({ sessionId: 's', taskId: 'a' }, { sessionId: 's', taskId: 'b' }, 10)).toBe(
      false,
    );
  });
});

describe('WrittenWakeUps', () => {
  it('asks for a write until one is stored under the lease, then only for a different one', () => {
    const written = new WrittenWakeUps();
    const due: WakeUp = { sessionId: 's', at: 10 };
    expect(written.needsWrite(due, LEASE, 10)).toBe(true);
    written.written(due, LEASE);
    expect(written.needsWrite({ sessionId: 's', at: 12 }, LEASE, 12)).toBe(false);
    expect(written.needsWrite({ sessionId: 's' }, LEASE, 12)).toBe(true);
    expect(written.needsWrite({ sessionId: 's', at: 99 }, LEASE, 12)).toBe(true);
  });

  it('trusts nothing under another lease, without one, or once forgotten', () => {
    const written = new WrittenWakeUps();
    const due: WakeUp = { sessionId: 's', at: 10 };
    written.written(due, LEASE);
    // Another owner may have written the row between our leases.
    expect(written.needsWrite(due, { sessionId: 's', token: 8 }, 10)).toBe(true);
    expect(written.needsWrite(due, undefined, 10)).toBe(true);
    written.forget('s');
    expect(written.needsWrite(due, LEASE, 10)).toBe(true);
    // Written without a lease: nothing fences other writers, so nothing is remembered.
    written.written(due, undefined);
    expect(written.needsWrite(due, LEASE, 10)).toBe(true);
  });
});

/** A memory store that records the wake-ups each save carried. */
class RecordingStore extends MemorySnapshotStore {
  readonly wakeUpWrites: WakeUp[] = [];

  override save(...args: Parameters<MemorySnapshotStore['save']>) {
    this.wakeUpWrites.push(...(args[2]?.wakeUps ?? []));
    return super.save(...args);
  }
}

describe('a pending effect and its wake-up row', () => {
  it('is written due once, kept while the handler runs and its result is saved, removed when settled', async () => {
    const store = new RecordingStore();
    const clock = new SimulatedClock(1_000);
    const dueWhileRunning: WakeUp[][] = [];
    const rb = createRolebox({
      clock,
      ids: seededIdSource(3),
      store,
      effects: {
        run_worker: async (effect, ctx): Promise<RuntimeEvent[]> => {
          dueWhileRunning.push(await store.loadWakeUps({ dueBy: clock.now() }));
          // Time passes while it runs: its result is saved at a later `now`.
          clock.advance(50);
          return poemWritten(ctx.session, effect.workerId);
        },
      },
    });
    await rb.start();
    const session = await rb.openSession({ id: 'S' });
    for (const event of UNTIL_POET_APPROVAL) session.send(event);
    await rb.flush();
    store.wakeUpWrites.length = 0;
    session.send(APPROVE_POET);
    await settle(10);
    // A restart while the handler runs finds the session due.
    expect(dueWhileRunning).toEqual([[{ sessionId: 'S', at: 1_000 }]]);
    await rb.flush();
    expect(session.view()).toMatchObject({ phase: 'waiting_user', pendingEffects: [] });
    // Three saves (recorded, result, settled); the row is written when due, and when cleared.
    expect(store.saves).toBeGreaterThanOrEqual(3);
    expect(store.wakeUpWrites).toEqual([{ sessionId: 'S', at: 1_000 }, { sessionId: 'S' }]);
    expect(await store.loadWakeUps()).toEqual([]);
    await rb.stop();
  });
});

describe('Persister', () => {
  it('leaves out a wake-up the store holds under the lease, and writes it again once forgotten', async () => {
    const store = new RecordingStore();
    const clock = new SimulatedClock(1_000);
    const claim = await store.claim(
      's',
      { ownerId: 'o', pid: process.pid, host: 'h' },
      60_000,
      1_000,
    );
    if (!claim.ok) throw new Error('claim refused');
    const lease: SessionLease = { sessionId: 's', token: claim.token };
    const persister = new Persister({
      store,
      clock,
      debounceMs: 200,
      sessionSnapshot: () => ({ value: 'x' }),
      systemSnapshot: () => undefined,
      wakeUpOf: (sessionId) => ({ sessionId, at: clock.now() }),
      leaseOf: () => lease,
      onRefused: () => {},
      onError: () => {},
    });
    persister.mark('s');
    await persister.flush();
    clock.advance(10);
    persister.mark('s');
    await persister.flush();
    expect(store.saves).toBe(2);
    expect(store.wakeUpWrites).toEqual([{ sessionId: 's', at: 1_000 }]);
    // Passivated (its lease released): nothing is kept, the next save writes the row.
    persister.forget('s');
    persister.mark('s');
    await persister.flush();
    expect(store.wakeUpWrites).toEqual([
      { sessionId: 's', at: 1_000 },
      { sessionId: 's', at: 1_010 },
    ]);
  });
});
