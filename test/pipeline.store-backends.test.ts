// The pipeline's guard state kept in the store (issue 26, the pipeline's memory):
// `guardState: 'store'` keeps dedupe marks, windows and guard lanes as `$pipeline:*`
// records, so a restart neither runs an applied action again nor lets a duplicate through;
// expired records are deleted; a corrupt record is refused by name; the store backends
// answer what the in-memory ones answer for any sequence of calls (fast-check).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js';
import {
  applyOnce,
  createAction,
  createPipeline,
  createSignal,
  DEDUPE_PREFIX,
  defineActionHandler,
  definePolicy,
  defineSourceHandler,
  type ExecutorResult,
  GUARD_LANE_PREFIX,
  InMemoryGuardBackend,
  InMemorySourceEventStore,
  type PipelineOptions,
  StoreGuardBackend,
  StoreSourceEventStore,
  WINDOW_PREFIX,
} from '../src/pipeline/index.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { SimulatedClock, seededIdSource } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { fuzzSettings } from './support/fuzz.js';
import { asRun } from './support/pipeline.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A pipeline whose action pays once per `payload.key`, counting payments in `paid`. */
function payments(paid: { count: number }, options: Omit<PipelineOptions, 'policies'>) {
  return createPipeline({
    ids: seededIdSource(7),
    ...options,
    policies: [
      definePolicy('p', [
        defineSourceHandler('payment.requested', 'payment.requested:plan', (source) => {
          const signal = createSignal({ source, signalType: 'signal.payment.due' });
          return {
            status: 'dispatch',
            signals: [signal],
            actions: [createAction({ signal, actionType: 'action.pay', payload: source.payload })],
          };
        }),
        defineActionHandler(
          'action.pay',
          'action.pay:run',
          (action, ctx): Promise<ExecutorResult> =>
            applyOnce(action, ctx, String(action.payload.key), () => {
              paid.count += 1;
            }),
        ),
      ]),
    ],
  });
}

const payment = (sourceId: string) => ({
  sourceType: 'payment.requested',
  sourceId,
  scope: { sessionId: 'shop' },
  payload: { key: 'order-1' },
});

describe("guardState 'store'", () => {
  it('keeps an idempotency mark and a dedupe mark across a restart on SQLite; in memory it does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rolebox-guards-'));
    dirs.push(dir);
    const clock = new SimulatedClock(1_000_000);
    const outcomes: Record<string, unknown[]> = {};
    for (const guardState of ['store', 'memory'] as const) {
      const paid = { count: 0 };
      const file = join(dir, `${guardState}.db`);
      const first = new SqliteSnapshotStore(file);
      await asRun(await payments(paid, { clock, store: first, guardState }).emit(payment('a')));
      await first.close();
      // The process is gone; a new one opens the same file.
      const second = new SqliteSnapshotStore(file);
      const again = payments(paid, { clock, store: second, guardState });
      const rerun = asRun(await again.emit(payment('b')));
      const duplicate = await again.emit(payment('a'));
      outcomes[guardState] = [paid.count, rerun.trace.results[0]?.result.status, duplicate];
      await second.close();
    }
    expect(outcomes.store).toEqual([1, 'skipped', expect.objectContaining({ deduped: true })]);
    expect(outcomes.memory, 'the in-memory state is lost with the process').toEqual([
      2,
      'applied',
      expect.not.objectContaining({ deduped: true }),
    ]);
  });

  it('stores the state as $pipeline records, which session restore never reads', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000_000);
    await payments({ count: 0 }, { clock, store, guardState: 'store' }).emit(payment('a'));
    const ids = (await store.loadAll()).map((record) => record.id);
    expect(ids.some((id) => id.startsWith(DEDUPE_PREFIX))).toBe(true);
    expect(ids.some((id) => id.startsWith(WINDOW_PREFIX))).toBe(true);
    expect(ids.some((id) => id.startsWith(GUARD_LANE_PREFIX))).toBe(true);
    expect(ids.every((id) => id.startsWith('$pipeline:'))).toBe(true);
  });

  it("refuses a guardState that is not 'memory' or 'store', and 'store' without a store", () => {
    expect(errorOf(() => createPipeline({ guardState: 'disk' as 'store' }))).toMatchObject({
      code: 'invalid_argument',
      message: `guardState must be 'memory' or 'store', got "disk"`,
    });
    expect(errorOf(() => createPipeline({ guardState: 'store' }))).toMatchObject({
      code: 'invalid_argument',
      message: expect.stringContaining("guardState 'store' keeps the pipeline's state in `store`"),
    });
  });
});

describe('StoreGuardBackend', () => {
  it('expires a lane ttl after its last touch and deletes its record', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(0);
    const guards = new StoreGuardBackend(store, clock);
    await guards.touch('s', 'a', 0, 100);
    clock.advance(60);
    expect(await guards.touch('s', 'a', 60, 100)).toEqual({ lastEventAt: 60, startedAt: 0 });
    clock.advance(99);
    expect(await new StoreGuardBackend(store, clock).get('s', 'a')).toEqual({
      lastEventAt: 60,
      startedAt: 0,
    });
    clock.advance(1);
    expect(await guards.get('s', 'a')).toEqual({});
    expect(await store.loadByPrefix(GUARD_LANE_PREFIX)).toEqual([]);
  });

  it('keeps keys apart whatever they hold: separators, Object.prototype names, NUL', async () => {
    const guards = new StoreGuardBackend(new MemorySnapshotStore(), new SimulatedClock(0));
    await guards.touch('a:b', 'c', 1);
    await guards.touch('a', 'b:c', 2);
    await guards.touch('__proto__', 'constructor', 3);
    expect(await guards.get('a:b', 'c')).toEqual({ lastEventAt: 1, startedAt: 1 });
    expect(await guards.get('a', 'b:c')).toEqual({ lastEventAt: 2, startedAt: 2 });
    expect(await guards.get('__proto__', 'constructor')).toEqual({ lastEventAt: 3, startedAt: 3 });
    expect(await guards.get('toString', 'valueOf')).toEqual({});
  });

  it('sweeps the records of expired lanes as writes go on', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(0);
    const guards = new StoreGuardBackend(store, clock);
    for (let index = 0; index < 600; index++) await guards.touch('s', `old${index}`, 0, 10);
    clock.advance(10);
    for (let index = 0; index < 600; index++) await guards.touch('s', `new${index}`, 10, 1_000);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const ids = (await store.loadByPrefix(GUARD_LANE_PREFIX)).map((record) => record.id);
    expect(ids.filter((id) => id.includes('old'))).toEqual([]);
    expect(ids).toHaveLength(600);
  });

  it('refuses a corrupt record with invalid_pipeline_record naming it, and writes nothing', async () => {
    const store = new MemorySnapshotStore();
    const guards = new StoreGuardBackend(store, new SimulatedClock(0));
    await guards.touch('s', 'a', 0);
    const [record] = await store.loadByPrefix(GUARD_LANE_PREFIX);
    if (!record) throw new Error('no lane record');
    for (const data of [
      '{not json',
      '{"format":"x"}',
      record.data.replace('"startedAt":0', '"startedAt":"0"'),
    ]) {
      await store.save([{ id: record.id, data }]);
      const error = await guards.touch('s', 'a', 5).catch((caught: unknown) => caught);
      expect(error).toMatchObject({
        code: 'invalid_pipeline_record',
        message: expect.stringContaining(JSON.stringify(record.id)),
      });
      expect(await store.load(record.id)).toBe(data);
    }
  });
});

describe('StoreSourceEventStore', () => {
  it('answers one of many concurrent dedupes of one event as new', async () => {
    const events = new StoreSourceEventStore(new MemorySnapshotStore(), new SimulatedClock(0));
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => events.tryDedupe('e1', 1_000)),
    );
    expect(answers.filter(Boolean)).toHaveLength(1);
  });

  it('keeps scope locks in memory: a new process does not wait out a dead one', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(0);
    expect(await new StoreSourceEventStore(store, clock).acquireScopeLock('s', 60_000)).toBe(true);
    expect(await new StoreSourceEventStore(store, clock).acquireScopeLock('s', 60_000)).toBe(true);
  });
});

// Any sequence of calls, with time passing between them, gets the answers the in-memory
// backends give (their bounds not reached): the store backends change where the state
// lives, not what it means.
describe('store backends answer as the in-memory ones', () => {
  const key = fc.constantFrom('a', 'b', '__proto__', 'x:y');
  const step = fc.oneof(
    fc.record({
      op: fc.constant('touch' as const),
      key,
      lane: key,
      ttl: fc.integer({ min: 1, max: 50 }),
    }),
    fc.record({ op: fc.constant('get' as const), key, lane: key }),
    fc.record({ op: fc.constant('dedupe' as const), key, ttl: fc.integer({ min: 1, max: 50 }) }),
    fc.record({
      op: fc.constant('write' as const),
      key,
      count: fc.nat(9),
      ttl: fc.integer({ min: 1, max: 50 }),
    }),
    fc.record({ op: fc.constant('read' as const), key }),
    fc.record({ op: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 30 }) }),
  );

  it('for guard lanes, dedupe marks and windows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const clock = new SimulatedClock(0);
        const store = new MemorySnapshotStore();
        const sides = [
          { guards: new InMemoryGuardBackend(clock), events: new InMemorySourceEventStore(clock) },
          {
            guards: new StoreGuardBackend(store, clock),
            events: new StoreSourceEventStore(store, clock),
          },
        ];
        for (const s of steps) {
          if (s.op === 'wait') {
            clock.advance(s.ms);
            continue;
          }
          const answers = await Promise.all(
            sides.map(({ guards, events }) => {
              const now = clock.now();
              if (s.op === 'touch') return guards.touch(s.key, s.lane, now, s.ttl);
              if (s.op === 'get') return guards.get(s.key, s.lane);
              if (s.op === 'dedupe') return events.tryDedupe(s.key, s.ttl);
              if (s.op === 'write')
                return events.writeWindow(
                  s.key,
                  { eventCount: s.count, lastEventAt: now, lastEventId: `e${s.count}` },
                  s.ttl,
                );
              return events.readWindow(s.key);
            }),
          );
          expect(answers[1]).toEqual(answers[0]);
        }
      }),
      fuzzSettings(100),
    );
  });
});
