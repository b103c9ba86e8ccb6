// The in-memory backends are bounded in entries and sweep expired entries as they go
// (issue 26, the pipeline's memory): eviction order, a held lock never evicted, the
// incremental TTL sweep on the simulated clock, and bad bounds refused.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PIPELINE_LIMITS,
  definePolicy,
  defineSourceHandler,
  InMemoryGuardBackend,
  InMemorySourceEventStore,
} from '../src/pipeline/index.js';
import { SimulatedClock } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { testPipeline } from './support/pipeline.js';

const window = (eventCount: number) => ({
  eventCount,
  lastEventAt: 0,
  lastEventId: `e${eventCount}`,
});

describe('bounded guard lanes', () => {
  it('evicts the lane touched longest ago first, and keeps the rest', async () => {
    const clock = new SimulatedClock(0);
    const guards = new InMemoryGuardBackend(clock, 3);
    await guards.touch('s', 'a', 1);
    await guards.touch('s', 'b', 2);
    await guards.touch('s', 'c', 3);
    await guards.touch('s', 'a', 4); // a is now the newest
    await guards.touch('s', 'd', 5); // full: b, touched longest ago, goes
    expect(guards.size).toBe(3);
    expect(await guards.get('s', 'b')).toEqual({});
    expect(await guards.get('s', 'a')).toEqual({ lastEventAt: 4, startedAt: 1 });
    expect(await guards.get('s', 'c')).toEqual({ lastEventAt: 3, startedAt: 3 });
    expect(await guards.get('s', 'd')).toEqual({ lastEventAt: 5, startedAt: 5 });
  });

  it('sweeps an expired lane at the front rather than evict a live one when full', async () => {
    const clock = new SimulatedClock(0);
    const guards = new InMemoryGuardBackend(clock, 2);
    await guards.touch('s', 'short', 0, 100);
    await guards.touch('s', 'long', 0, 10_000);
    clock.advance(100);
    await guards.touch('s', 'new', 100, 10_000);
    expect(await guards.get('s', 'long')).toEqual({ lastEventAt: 0, startedAt: 0 });
    expect(await guards.get('s', 'new')).toEqual({ lastEventAt: 100, startedAt: 100 });
    expect(guards.size).toBe(2);
  });
});

describe('bounded ingress store', () => {
  it('dedupe forgets the oldest key when full', async () => {
    const store = new InMemorySourceEventStore(new SimulatedClock(0), { maxDedupeKeys: 2 });
    expect(await store.tryDedupe('e1', 60_000)).toBe(true);
    expect(await store.tryDedupe('e2', 60_000)).toBe(true);
    expect(await store.tryDedupe('e3', 60_000)).toBe(true);
    expect(store.sizes.dedupeKeys).toBe(2);
    expect(await store.tryDedupe('e3', 60_000)).toBe(false);
    expect(await store.tryDedupe('e2', 60_000)).toBe(false);
    // e1 was forgotten before its window ended: it reads as new again.
    expect(await store.tryDedupe('e1', 60_000)).toBe(true);
  });

  it('windows forget the oldest written scope when full', async () => {
    const store = new InMemorySourceEventStore(new SimulatedClock(0), { maxWindows: 2 });
    await store.writeWindow('s1', window(1), 60_000);
    await store.writeWindow('s2', window(2), 60_000);
    await store.writeWindow('s1', window(3), 60_000); // s1 rewritten: s2 is now the oldest
    await store.writeWindow('s3', window(4), 60_000);
    expect(await store.readWindow('s2')).toBeUndefined();
    expect(await store.readWindow('s1')).toEqual(window(3));
    expect(await store.readWindow('s3')).toEqual(window(4));
  });

  it('never evicts a held lock: a full lock map refuses until one is released or expires', async () => {
    const clock = new SimulatedClock(0);
    const store = new InMemorySourceEventStore(clock, { maxScopeLocks: 1 });
    expect(await store.acquireScopeLock('s1', 5_000)).toBe(true);
    expect(await store.acquireScopeLock('s2', 5_000)).toBe(false);
    expect(await store.acquireScopeLock('s1', 5_000)).toBe(false); // still held
    await store.releaseScopeLock('s1');
    expect(await store.acquireScopeLock('s2', 5_000)).toBe(true);
    // A crashed holder's lock expires; the full map then makes room for a new one.
    clock.advance(5_000);
    expect(await store.acquireScopeLock('s3', 5_000)).toBe(true);
    expect(store.sizes.scopeLocks).toBe(1);
  });

  it('sweeps expired entries a few per write, not only when a map doubles', async () => {
    const clock = new SimulatedClock(0);
    const store = new InMemorySourceEventStore(clock);
    for (let n = 0; n < 100; n++) await store.writeWindow(`old${n}`, window(n), 1_000);
    expect(store.sizes.windows).toBe(100);
    clock.advance(999);
    await store.writeWindow('live', window(0), 1_000);
    expect(store.sizes.windows).toBe(101); // nothing expired yet
    clock.advance(1);
    // Each write takes two expired windows off the front: 50 writes clear the 100 old ones.
    for (let n = 0; n < 50; n++) await store.writeWindow(`new${n}`, window(n), 1_000);
    expect(store.sizes.windows).toBe(51); // the 50 new and 'live': the 100 old ones are gone
    expect(await store.readWindow('new49')).toEqual(window(49));
  });
});

describe('bounds as options', () => {
  it('refuses a bound that is not a whole number ≥ 1, naming the value', () => {
    const clock = new SimulatedClock(0);
    const lanes = errorOf(() => new InMemoryGuardBackend(clock, 0));
    expect(lanes.code).toBe('invalid_argument');
    expect(lanes.message).toBe('maxLanes must be a whole number ≥ 1, got 0');
    expect(errorOf(() => new InMemorySourceEventStore(clock, { maxWindows: 1.5 })).message).toBe(
      'maxWindows must be a whole number ≥ 1, got 1.5',
    );
    expect(
      errorOf(() => new InMemorySourceEventStore(clock, { maxDedupeKeys: '10' as never })).message,
    ).toBe('maxDedupeKeys must be a whole number ≥ 1, got "10"');
    expect(
      errorOf(() => new InMemorySourceEventStore(clock, { maxLocks: 3 } as never)).message,
    ).toMatch(/^InMemorySourceEventStore bounds: unknown bound "maxLocks"/);
    const limit = errorOf(() => testPipeline([], { limits: { maxGuardLanes: -1 } }));
    expect(limit.code).toBe('invalid_argument');
    expect(limit.message).toBe('pipeline limit maxGuardLanes must be a whole number ≥ 1, got -1');
  });

  it('documents 10 000 entries per map as the default', () => {
    const { maxDedupeKeys, maxScopeLocks, maxWindows, maxGuardLanes } = DEFAULT_PIPELINE_LIMITS;
    expect([maxDedupeKeys, maxScopeLocks, maxWindows, maxGuardLanes]).toEqual([
      10_000, 10_000, 10_000, 10_000,
    ]);
  });

  it("the pipeline's default store honours limits.maxDedupeKeys", async () => {
    const seen: string[] = [];
    const policy = definePolicy('rec', [
      defineSourceHandler('x', 'x:record', (source) => {
        seen.push(source.sourceId);
        return undefined;
      }),
    ]);
    const { pipeline } = testPipeline([policy], { limits: { maxDedupeKeys: 2 } });
    const emit = (sourceId: string) =>
      pipeline.emit({ sourceType: 'x', sourceId, scope: { sessionId: 's' }, payload: {} });
    for (const id of ['e1', 'e2', 'e3']) await emit(id);
    expect(await emit('e3')).toMatchObject({ deduped: true });
    await emit('e1'); // forgotten: runs again
    expect(seen).toEqual(['source:e1', 'source:e2', 'source:e3', 'source:e1']);
  });

  it('a full lock map makes the ingress wait its turn, and both events run', async () => {
    const { pipeline, clock } = testPipeline([]);
    const store = new InMemorySourceEventStore(clock, { maxScopeLocks: 1 });
    let refused = 0;
    const acquire = store.acquireScopeLock.bind(store);
    store.acquireScopeLock = async (scopeKey, ttlMs) => {
      const taken = await acquire(scopeKey, ttlMs);
      if (!taken) refused++;
      return taken;
    };
    const emit = (sessionId: string) =>
      pipeline.execute(
        { sourceType: 'x', scope: { sessionId }, payload: {} },
        { sourceEvents: store },
      );
    const both = Promise.all([emit('a'), emit('b')]);
    for (let tick = 0; tick < 10 && refused === 0; tick++) await Promise.resolve();
    expect(refused).toBeGreaterThan(0);
    let settled = false;
    void both.then(() => {
      settled = true;
    });
    // The waiting ingress retries every lockRetryMs on the simulated clock.
    for (let step = 0; step < 100 && !settled; step++) {
      for (let tick = 0; tick < 10; tick++) await Promise.resolve();
      clock.advance(DEFAULT_PIPELINE_LIMITS.lockRetryMs);
    }
    const runs = await both;
    expect(runs.map((run) => ('deduped' in run ? 'deduped' : run.scopeKey))).toEqual([
      'session:a',
      'session:b',
    ]);
    expect(store.sizes.scopeLocks).toBe(0);
  });
});
