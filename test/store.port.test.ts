import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  type HostEvent,
  MemorySnapshotStore,
  type SnapshotStore,
} from '../src/index.js';
import { SNAPSHOT_STORE_METHODS } from '../src/ports/store-contract.js';
import { SimulatedClock, settle } from '../src/testing/index.js';
import { errorOf, rejectionOf } from './support/errors.js';

// Issue 22, item 7: a host's own store is checked where rolebox meets it. Its methods once,
// at createRolebox; the answer of its save and delete when they are first read. A store
// written for the 0.1 port gets invalid_argument saying what changed and how to update it,
// never a bare TypeError from deep inside a save.

/** The store a host wrote against the 0.1 port: four methods, writes that answer nothing. */
function storeOf01() {
  const records = new Map<string, string>();
  return {
    async loadAll() {
      return [...records].map(([id, data]) => ({ id, data }));
    },
    async load(id: string) {
      return records.get(id);
    },
    async save(list: readonly { id: string; data: string }[]) {
      for (const record of list) records.set(record.id, record.data);
    },
    async delete(ids: readonly string[]) {
      for (const id of ids) records.delete(id);
    },
  };
}

/**
 * A store with every method of the port, each passed on to a memory store, with some
 * replaced: what a host's wrapper (logging, metrics) looks like when one forgets a return.
 */
function wrappedStore(overrides: Record<string, unknown> = {}) {
  const inner = new MemorySnapshotStore();
  const store: Record<string, unknown> = {};
  for (const method of SNAPSHOT_STORE_METHODS) {
    const call = inner[method] as (...args: unknown[]) => unknown;
    store[method] = (...args: unknown[]) => call.apply(inner, args);
  }
  return { inner, store: Object.assign(store, overrides) as unknown as SnapshotStore };
}

async function started(store: SnapshotStore) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({ store, clock, saveDebounceMs: 10 });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  return { rb, clock, events };
}

describe('createRolebox checks the store once', () => {
  it('a 0.1 store is refused with what changed since and where to read how', () => {
    const error = errorOf(() => createRolebox({ store: storeOf01() as never }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(
      'it has no loadByPrefix, claim, renew, release, setWakeUps, clearWakeUps and loadWakeUps. It looks written for the 0.1 store port: the port changed after 0.1',
    );
    expect(error.message).toContain('answer { refused: string[] }');
    expect(error.message).toContain('see "Writing your own store" in the README');
    expect(error.details).toEqual({
      option: 'store',
      missing: [
        'loadByPrefix',
        'claim',
        'renew',
        'release',
        'setWakeUps',
        'clearWakeUps',
        'loadWakeUps',
      ],
    });
  });

  it.each(SNAPSHOT_STORE_METHODS)('a store without %s is refused naming it', (method) => {
    const { store } = wrappedStore();
    delete (store as unknown as Record<string, unknown>)[method];
    const error = errorOf(() => createRolebox({ store }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(`; it has no ${method};`);
    expect(error.message).not.toContain('0.1');
    expect(error.details).toEqual({ option: 'store', missing: [method] });
  });

  it('a method that is not a function, a close that is not one, an immediate without its methods', () => {
    expect(
      errorOf(() => createRolebox({ store: wrappedStore({ save: 'x' }).store })).details,
    ).toEqual({ option: 'store', missing: ['save'] });
    expect(errorOf(() => createRolebox({ store: wrappedStore({ close: 42 }).store })).message).toBe(
      'store.close must be a function when present, got 42',
    );
    const immediate = errorOf(() =>
      createRolebox({ store: wrappedStore({ immediate: { load: () => undefined } }).store }),
    );
    expect(immediate.message).toContain(
      'store.immediate, when present, must implement load, claim, claimAndLoad and renew; it has no claim, claimAndLoad and renew',
    );
    expect(errorOf(() => createRolebox({ store: 'db.sqlite' as never })).message).toContain(
      'store must be a SnapshotStore (an object with loadAll, loadByPrefix,',
    );
  });

  it('a store that throws when read is refused, not a TypeError', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('no');
        },
      },
    );
    const error = errorOf(() => createRolebox({ store: hostile as never }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('store.loadAll cannot be read');
  });

  it('the built-in stores pass', () => {
    expect(() => createRolebox({ store: new MemorySnapshotStore() })).not.toThrow();
    expect(() => createRolebox({ store: wrappedStore().store })).not.toThrow();
  });
});

describe('the answer of a write is checked when it is first read', () => {
  it('a save that answers nothing (the 0.1 shape): flush rejects with invalid_argument saying what to return', async () => {
    const { store, inner } = wrappedStore({
      // A wrapper that forgot its return: what a 0.1 save looked like.
      save: async (...args: unknown[]) => {
        await (inner.save as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
      },
    });
    const { rb, events } = await started(store);
    const session = await rb.openSession({ id: 'S' });
    session.setSlot('k', 1);
    const error = await rejectionOf(() => rb.flush());
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(
      'store.save answered undefined, not { refused: string[] }: a store written for the 0.1 port answers nothing, and the port changed after 0.1',
    );
    expect(error.message).toContain('Return { refused: [] } when every record was written');
    expect(error.message).toContain('see "Writing your own store" in the README');
    // The rolebox halted on it, said once as an error host event, and every later call says so.
    const reported = events.flatMap((event) => (event.type === 'error' ? [event.error] : []));
    expect(reported).toEqual([error]);
    expect(errorOf(() => session.view())).toBe(error);
    expect(await rejectionOf(() => rb.flush())).toBe(error);
    await rb.stop();
  });

  it('a debounced save halts the same way, reported as an error host event', async () => {
    const { store } = wrappedStore({ save: async () => ({ refused: 'S' }) });
    const { rb, clock, events } = await started(store);
    (await rb.openSession({ id: 'S' })).setSlot('k', 1);
    clock.advance(10);
    await settle();
    const reported = events.flatMap((event) => (event.type === 'error' ? [event.error] : []));
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ code: 'invalid_argument' });
    expect((reported[0] as Error).message).toContain(
      'store.save answered {"refused":"S"}, not { refused: string[] }: it must list the ids of the sessions it did not write',
    );
    expect(rb.system.getSnapshot().status).toBe('stopped');
    await rb.stop();
  });

  it('a delete that answers nothing: invalid_argument naming delete', async () => {
    const { store, inner } = wrappedStore({
      delete: async (...args: unknown[]) => {
        await (inner.delete as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
      },
    });
    const { rb } = await started(store);
    const session = await rb.openSession({ id: 'S' });
    await rb.flush();
    session.close();
    const error = await rejectionOf(() => rb.flush());
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('store.delete answered undefined');
    await rb.stop();
  });

  it('a store whose save fails still halts with store_failed, and flush says so with a code', async () => {
    const { store } = wrappedStore({
      save: async () => {
        throw new Error('disk full');
      },
    });
    const { rb } = await started(store);
    (await rb.openSession({ id: 'S' })).setSlot('k', 1);
    const error = await rejectionOf(() => rb.flush());
    expect(error.code).toBe('store_failed');
    expect(error.message).toContain('could not save session(s) S: disk full');
    await rb.stop();
  });
});

describe('the answers of claims are checked too', () => {
  it('a claim that answers nothing: openSession rejects with invalid_argument', async () => {
    const { store } = wrappedStore({ claim: async () => undefined });
    const { rb } = await started(store);
    const error = await rejectionOf(() => rb.openSession({ id: 'S' }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(
      'store.claim answered undefined; a claim answers { ok: true, token }',
    );
    expect(rb.sessions()).toEqual([]);
    await rb.stop();
  });

  it('a renew that answers nothing is reported, and drops no session', async () => {
    const { store } = wrappedStore({ renew: async () => undefined });
    const { rb, clock, events } = await started(store);
    await rb.openSession({ id: 'S' });
    clock.advance(10_000);
    await settle();
    const reported = events.flatMap((event) => (event.type === 'error' ? [event.error] : []));
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ code: 'invalid_argument' });
    expect((reported[0] as Error).message).toContain('store.renew answered undefined');
    expect(rb.sessions()).toEqual(['S']);
    await rb.stop();
  });

  it('immediate answers: a claimAndLoad or a renew in another shape is invalid_argument', async () => {
    const inner = new MemorySnapshotStore();
    const immediate = inner.immediate;
    const { store } = wrappedStore({
      immediate: {
        load: (id: string) => immediate.load(id),
        claim: immediate.claim.bind(immediate),
        claimAndLoad: (sessionId: string) => (sessionId === 'P' ? { data: 1 } : undefined),
        renew: () => 'all fine',
      },
    });
    const clock = new SimulatedClock(1_000);
    const rb = createRolebox({ store, clock, maxLiveSessions: 1 });
    const events: HostEvent[] = [];
    rb.on('*', (event) => events.push(event));
    await rb.start();
    await rb.openSession({ id: 'P' });
    await rb.openSession({ id: 'Q' });
    await settle();
    expect(rb.sessions()).toEqual(['Q']);
    const error = errorOf(() => rb.session('P'));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(
      'store.immediate.claimAndLoad answered {"data":1}; it answers undefined when there is no record',
    );
    clock.advance(10_000);
    await settle();
    const reported = events.flatMap((event) => (event.type === 'error' ? [event.error] : []));
    expect((reported.at(-1) as Error).message).toContain(
      'store.immediate.renew answered "all fine"',
    );
    expect(rb.sessions()).toEqual(['Q']);
    await rb.stop();
  });
});
