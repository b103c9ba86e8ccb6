import { describe, expect, it } from 'vitest';
import {
  definePolicy,
  defineSourceHandler,
  InMemoryGuardBackend,
  InMemorySourceEventStore,
} from '../src/pipeline/index.js';
import { SimulatedClock } from '../src/testing/index.js';
import { errorOf, rejectionOf } from './support/errors.js';
import { asRun, testPipeline } from './support/pipeline.js';

/** A policy that records every source it sees, and can be held on a gate. */
function recorder() {
  const seen: string[] = [];
  const gates = new Map<string, () => void>();
  const policy = definePolicy('rec', [
    defineSourceHandler('x', 'x:record', async (source) => {
      const label = String(source.payload.label);
      seen.push(`${label} start`);
      if (source.payload.hold) await new Promise<void>((resolve) => gates.set(label, resolve));
      seen.push(`${label} end`);
      return undefined;
    }),
  ]);
  return { seen, gates, policy };
}

describe('ingress: dedupe', () => {
  it('the same event twice runs once, also when retried with a new timestamp', async () => {
    const { seen, policy } = recorder();
    const { pipeline, clock } = testPipeline([policy]);
    const event = {
      sourceType: 'x',
      sourceId: 'e1',
      scope: { sessionId: 's1' },
      payload: { label: 'a' },
    };
    const first = asRun(await pipeline.emit(event));
    clock.advance(60_000);
    const again = await pipeline.emit({ ...event, timestamp: clock.now() });
    expect(again).toEqual({
      deduped: true,
      reason: 'duplicate',
      eventId: 'session:s1:x:source:e1',
      scopeKey: 'session:s1',
    });
    expect(await pipeline.enqueue(event)).toEqual({
      accepted: false,
      reason: 'duplicate',
      eventId: 'session:s1:x:source:e1',
      scopeKey: 'session:s1',
    });
    await pipeline.drain();
    expect(seen).toEqual(['a start', 'a end']);
    expect(first.window).toEqual({
      eventCount: 1,
      lastEventAt: 1_000_000,
      lastEventId: 'session:s1:x:source:e1',
    });
  });

  it('the dedupe window lasts 300 s; the same id on another scope or type is another event', async () => {
    const { seen, policy } = recorder();
    const { pipeline, clock } = testPipeline([policy]);
    const event = {
      sourceType: 'x',
      sourceId: 'e1',
      scope: { sessionId: 's1' },
      payload: { label: 'a' },
    };
    await pipeline.emit(event);
    await pipeline.emit({
      ...event,
      scope: { sessionId: 's2' },
      payload: { label: 'other scope' },
    });
    clock.advance(299_999);
    expect('deduped' in (await pipeline.emit(event))).toBe(true);
    clock.advance(1);
    expect(
      'deduped' in (await pipeline.emit({ ...event, payload: { label: 'after the window' } })),
    ).toBe(false);
    expect(seen.filter((line) => line.endsWith('start'))).toEqual([
      'a start',
      'other scope start',
      'after the window start',
    ]);
  });

  it('counts events into the scope window, kept an hour after the last', async () => {
    const { pipeline, clock } = testPipeline([
      definePolicy('p', [defineSourceHandler('x', 'x:n', () => undefined)]),
    ]);
    await pipeline.emit({ sourceType: 'x', scope: { topicId: 't' } });
    clock.advance(1_000);
    const second = asRun(
      await pipeline.emit({ sourceType: 'x', sourceId: 'two', scope: { topicId: 't' } }),
    );
    expect(second.window).toEqual({
      eventCount: 2,
      lastEventAt: 1_001_000,
      lastEventId: 'topic:t:x:source:two',
    });
    clock.advance(3_600_000);
    expect(
      asRun(await pipeline.emit({ sourceType: 'x', scope: { topicId: 't' } })).window?.eventCount,
    ).toBe(1);
  });
});

describe('ingress: the in-memory store keeps its own windows', () => {
  it('copies a window on write and on read', async () => {
    const store = new InMemorySourceEventStore(new SimulatedClock(0));
    const written = { eventCount: 1, lastEventAt: 0, lastEventId: 'a' };
    await store.writeWindow('s', written, 1_000);
    written.eventCount = 99;
    const read = (await store.readWindow('s')) as { eventCount: number };
    expect(read).toEqual({ eventCount: 1, lastEventAt: 0, lastEventId: 'a' });
    read.eventCount = 42;
    expect(await store.readWindow('s')).toEqual({
      eventCount: 1,
      lastEventAt: 0,
      lastEventId: 'a',
    });
  });

  it('a handler that changes ctx.window does not change the count', async () => {
    const counts: number[] = [];
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:meddle', (_source, ctx) => {
          counts.push(ctx.window?.eventCount ?? 0);
          (ctx.window as { eventCount: number }).eventCount = 1_000;
          return undefined;
        }),
      ]),
    ]);
    for (const id of ['a', 'b', 'c']) await pipeline.emit({ sourceType: 'x', sourceId: id });
    expect(counts).toEqual([1, 2, 3]);
  });
});

describe('ingress: per-scope FIFO', () => {
  it('two events on one scope enqueued together run one after the other, in order', async () => {
    const { seen, gates, policy } = recorder();
    const { pipeline } = testPipeline([policy]);
    const receipts = await Promise.all([
      pipeline.enqueue({
        sourceType: 'x',
        scope: { sessionId: 's1' },
        payload: { label: 'first', hold: true },
      }),
      pipeline.enqueue({
        sourceType: 'x',
        scope: { sessionId: 's1' },
        payload: { label: 'second' },
      }),
    ]);
    expect(receipts.map((receipt) => receipt.accepted)).toEqual([true, true]);
    // enqueue answered at once; the first run is held, so the second waits its turn.
    for (let i = 0; i < 20 && !gates.has('first'); i++) await Promise.resolve();
    expect(seen).toEqual(['first start']);
    gates.get('first')?.();
    await pipeline.drain();
    expect(seen).toEqual(['first start', 'first end', 'second start', 'second end']);
  });

  it('events on two scopes run independently', async () => {
    const { seen, gates, policy } = recorder();
    const { pipeline } = testPipeline([policy]);
    await pipeline.enqueue({
      sourceType: 'x',
      scope: { sessionId: 's1' },
      payload: { label: 'held', hold: true },
    });
    await pipeline.enqueue({
      sourceType: 'x',
      scope: { sessionId: 's2' },
      payload: { label: 'free' },
    });
    for (let i = 0; i < 50 && !seen.includes('free end'); i++) await Promise.resolve();
    expect(seen).toEqual(['held start', 'free start', 'free end']);
    gates.get('held')?.();
    await pipeline.drain();
    expect(seen.at(-1)).toBe('held end');
  });

  it('a contended scope lock makes the event wait its turn, never drops it', async () => {
    const clock = new SimulatedClock(0);
    const shared = new InMemorySourceEventStore(clock);
    const { seen, policy } = recorder();
    const { pipeline } = testPipeline([policy], { clock, sourceEvents: shared });
    // Another process holds the scope's lock.
    expect(await shared.acquireScopeLock('session:s1', 5_000)).toBe(true);
    const run = pipeline.emit({
      sourceType: 'x',
      scope: { sessionId: 's1' },
      payload: { label: 'patient' },
    });
    for (let i = 0; i < 20; i++) await Promise.resolve();
    clock.advance(1_000);
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(seen).toEqual([]);
    await shared.releaseScopeLock('session:s1');
    clock.advance(25);
    expect(asRun(await run).status).toBe('completed');
    expect(seen).toEqual(['patient start', 'patient end']);
  });

  it('a lock whose holder died expires after 5 s', async () => {
    const clock = new SimulatedClock(0);
    const shared = new InMemorySourceEventStore(clock);
    const { seen, policy } = recorder();
    const { pipeline } = testPipeline([policy], { clock, sourceEvents: shared });
    await shared.acquireScopeLock('session:s1', 5_000);
    const run = pipeline.emit({
      sourceType: 'x',
      scope: { sessionId: 's1' },
      payload: { label: 'late' },
    });
    for (let step = 0; step < 200 && seen.length === 0; step++) {
      clock.advance(25);
      for (let i = 0; i < 10; i++) await Promise.resolve();
    }
    await run;
    expect(seen).toEqual(['late start', 'late end']);
    expect(clock.now()).toBeGreaterThanOrEqual(5_000);
  });
});

describe('entry points', () => {
  it('execute runs with the caller’s backends', async () => {
    const clock = new SimulatedClock(0);
    const sourceEvents = new InMemorySourceEventStore(clock);
    const guards = new InMemoryGuardBackend();
    const { pipeline } = testPipeline(
      [
        definePolicy('p', [
          defineSourceHandler('x', 'x:touch', async (_source, ctx) => {
            await ctx.guards.touch('seen');
            return undefined;
          }),
        ]),
      ],
      { clock },
    );
    await pipeline.execute(
      { sourceType: 'x', sourceId: 'e', scope: { userId: 'u' } },
      { sourceEvents, guards },
    );
    expect(await guards.get('user:u', 'seen')).toEqual({ lastEventAt: 0, startedAt: 0 });
    expect(await sourceEvents.readWindow('user:u')).toMatchObject({ eventCount: 1 });
    // The pipeline's own backends saw nothing: the same event is new to them.
    expect(
      'deduped' in
        (await pipeline.emit({ sourceType: 'x', sourceId: 'e', scope: { userId: 'u' } })),
    ).toBe(false);
  });

  it('bad input is refused with a RoleboxError and records nothing', async () => {
    const { seen, policy } = recorder();
    const { pipeline } = testPipeline([policy]);
    expect(errorOf(() => pipeline.enqueue({ sourceType: 42 } as never)).message).toBe(
      'sourceType must be a non-empty string, got 42',
    );
    expect(
      (await rejectionOf(pipeline.emit({ sourceType: 'x', payload: 'hi' } as never))).code,
    ).toBe('invalid_source_event');
    expect(
      (await rejectionOf(pipeline.execute({ sourceType: 'x' }, { guards: {} as never }))).message,
    ).toMatch(/^guards must implement get, touch/);
    expect(errorOf(() => pipeline.enqueue(null as never)).message).toBe(
      'a source event must be an object, got null',
    );
    await pipeline.drain();
    expect(seen).toEqual([]);
    expect(pipeline.runs()).toEqual([]);
  });

  it('refuses malformed options', () => {
    expect(errorOf(() => testPipeline([], { limits: { maxSteps: 0 } })).message).toBe(
      'pipeline limit maxSteps must be a whole number ≥ 1, got 0',
    );
    expect(errorOf(() => testPipeline([], { limits: { maxStep: 3 } as never })).message).toBe(
      'createPipeline limits: unknown limit "maxStep" (did you mean "maxSteps"?); known: maxSteps, dedupeWindowMs, scopeLockMs, windowTtlMs, guardTtlMs, lockRetryMs, runHistory, maxDedupeKeys, maxScopeLocks, maxWindows, maxGuardLanes',
    );
    expect(errorOf(() => testPipeline([], { polices: [] } as never)).message).toBe(
      'createPipeline options: unknown option "polices" (did you mean "policies"?); known: policies, store, sourceEvents, guards, guardState, clock, ids, limits, telemetry, onError',
    );
    expect(errorOf(() => testPipeline([], { telemetry: { meter: {} } } as never)).message).toBe(
      'createPipeline telemetry: unknown option "meter" (did you mean "meterProvider"?); known: meterProvider, tracerProvider',
    );
    expect(errorOf(() => testPipeline([], { store: {} as never })).message).toMatch(
      /^store must implement loadByPrefix, save, delete/,
    );
    expect(errorOf(() => testPipeline(['policy'] as never)).code).toBe('invalid_handler');
  });

  it('stop waits for the run in progress, then refuses events', async () => {
    const { seen, gates, policy } = recorder();
    const { pipeline } = testPipeline([policy]);
    await pipeline.enqueue({ sourceType: 'x', payload: { label: 'running', hold: true } });
    for (let i = 0; i < 20 && !gates.has('running'); i++) await Promise.resolve();
    const stopped = pipeline.stop();
    gates.get('running')?.();
    await stopped;
    expect(seen).toEqual(['running start', 'running end']);
    expect(errorOf(() => pipeline.enqueue({ sourceType: 'x' })).code).toBe('pipeline_stopped');
    expect((await rejectionOf(pipeline.emit({ sourceType: 'x' }))).message).toBe(
      'this pipeline has been stopped',
    );
  });

  it('keeps the last runs and tells listeners about each', async () => {
    const { pipeline } = testPipeline(
      [definePolicy('p', [defineSourceHandler('x', 'x:n', () => undefined)])],
      { limits: { runHistory: 2 } },
    );
    const heard: string[] = [];
    const off = pipeline.on('run', (run) => heard.push(run.trace.source.sourceId));
    for (const id of ['a', 'b', 'c']) await pipeline.emit({ sourceType: 'x', sourceId: id });
    off();
    await pipeline.emit({ sourceType: 'x', sourceId: 'd' });
    expect(heard).toEqual(['source:a', 'source:b', 'source:c']);
    expect(pipeline.runs().map((run) => run.trace.source.sourceId)).toEqual([
      'source:c',
      'source:d',
    ]);
    expect(errorOf(() => pipeline.on('done' as never, () => {})).code).toBe('invalid_argument');
  });
});
