import { describe, expect, it } from 'vitest';
import {
  applyOnce,
  createAction,
  createSignal,
  DEFAULT_GUARD_TTL_MS,
  DEFAULT_PIPELINE_LIMITS,
  debounce,
  defineActionHandler,
  definePolicy,
  defineSourceHandler,
  type ExecutorResult,
  type GuardWait,
  guardLane,
  hasApplied,
  InMemoryGuardBackend,
  markApplied,
  outerTimeout,
  type PipelineRun,
  type TerminalResult,
  throttle,
} from '../src/pipeline/index.js';
import { SimulatedClock } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { asRun, testPipeline } from './support/pipeline.js';

type Guard = typeof debounce | typeof throttle | typeof outerTimeout;

/** A pipeline whose only handler runs `guard` on lane "l" with `ms`, answering what the guard said. */
function guarded(guard: Guard, ms: number) {
  const setup = testPipeline([
    definePolicy('p', [
      defineSourceHandler(
        'x',
        'x:guarded',
        async (_source, ctx): Promise<TerminalResult | undefined> => {
          return (
            (await guard(ctx, { lane: 'l', ms })) ?? {
              status: 'conclude',
              concluded: { reason: 'passed' },
            }
          );
        },
      ),
    ]),
  ]);
  let n = 0;
  const at = async (time: number): Promise<PipelineRun> => {
    setup.clock.advance(time - (setup.clock.now() - 1_000_000));
    return asRun(
      await setup.pipeline.emit({
        sourceType: 'x',
        sourceId: `e${n++}`,
        scope: { sessionId: 's' },
      }),
    );
  };
  return at;
}

const outcome = (run: PipelineRun) =>
  run.status === 'wait'
    ? `wait ${(run.result as { pending: { delayMs: number } }).pending.delayMs}`
    : run.reason;

describe('guards on the simulated clock', () => {
  it('debounce: an event within the window extends it and waits ms; after a quiet ms it passes', async () => {
    const at = guarded(debounce, 1_000);
    expect(outcome(await at(0))).toBe('passed');
    expect(outcome(await at(999))).toBe('wait 1000');
    // 999 touched the lane: 1998 is still within 1000 of it.
    expect(outcome(await at(1_998))).toBe('wait 1000');
    expect(outcome(await at(2_998))).toBe('passed');
  });

  it('throttle: waits ms - elapsed without touching; passes once ms has elapsed', async () => {
    const at = guarded(throttle, 1_000);
    expect(outcome(await at(0))).toBe('passed');
    expect(outcome(await at(400))).toBe('wait 600');
    expect(outcome(await at(999))).toBe('wait 1');
    // The waits did not touch the lane: 1000 after the first pass is enough.
    expect(outcome(await at(1_000))).toBe('passed');
    expect(outcome(await at(1_500))).toBe('wait 500');
  });

  it('outer timeout: concludes timed_out once now - startedAt ≥ ms', async () => {
    const at = guarded(outerTimeout, 5_000);
    expect(outcome(await at(0))).toBe('passed');
    expect(outcome(await at(4_999))).toBe('passed');
    const timedOut = await at(5_000);
    expect(timedOut.reason).toBe('timed_out');
    expect(timedOut.result).toEqual({
      status: 'conclude',
      concluded: { reason: 'timed_out', lane: 'l', elapsedMs: 5_000 },
    });
  });

  it('guard state is per scope', async () => {
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler(
          'x',
          'x:t',
          async (_source, ctx) => (await throttle(ctx, { lane: 'l', ms: 1_000 })) ?? undefined,
        ),
      ]),
    ]);
    expect(asRun(await pipeline.emit({ sourceType: 'x', scope: { sessionId: 'a' } })).status).toBe(
      'completed',
    );
    expect(asRun(await pipeline.emit({ sourceType: 'x', scope: { sessionId: 'b' } })).status).toBe(
      'completed',
    );
    expect(asRun(await pipeline.emit({ sourceType: 'x', scope: { sessionId: 'a' } })).status).toBe(
      'wait',
    );
  });

  it('refuses a guard without a lane or with a negative window', async () => {
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler(
          'x',
          'x:bad',
          async (_source, ctx) => (await debounce(ctx, { lane: '', ms: 10 })) ?? undefined,
        ),
      ]),
      definePolicy('q', [
        defineSourceHandler(
          'x',
          'x:bad2',
          async (_source, ctx) => (await throttle(ctx, { lane: 'l', ms: -1 })) ?? undefined,
        ),
      ]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x' }));
    expect(run.trace.errors.map((error) => error.message)).toEqual([
      `source handler "x:bad" threw on ${run.trace.source.sourceId}: debounce: lane must be a non-empty string, got ""`,
      `source handler "x:bad2" threw on ${run.trace.source.sourceId}: throttle: ms must be a number ≥ 0, got -1`,
    ]);
  });
});

describe('idempotency', () => {
  /** A pipeline whose action pays once per `key` in the payload, through `effect`. */
  function payments(effect: () => unknown) {
    return testPipeline([
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
            applyOnce(action, ctx, String(action.payload.key), effect),
        ),
      ]),
    ]);
  }
  const resultOf = (run: PipelineRun) => run.trace.results[0]?.result;

  it('an action whose key is already applied is skipped, with a detail saying so', async () => {
    let paid = 0;
    const { pipeline } = payments(() => {
      paid++;
      return { receipt: paid };
    });
    const first = resultOf(
      asRun(
        await pipeline.emit({
          sourceType: 'payment.requested',
          scope: { sessionId: 's' },
          payload: { key: 'invoice-7' },
        }),
      ),
    );
    const second = asRun(
      await pipeline.emit({
        sourceType: 'payment.requested',
        scope: { sessionId: 's' },
        payload: { key: 'invoice-7' },
      }),
    );
    expect(first).toMatchObject({ status: 'applied', output: { receipt: 1 } });
    expect(resultOf(second)).toMatchObject({
      status: 'skipped',
      detail: 'already applied (idempotency key invoice-7)',
    });
    expect(second.trace.signals.at(-1)?.signalType).toBe('signal.action.skipped');
    expect(paid).toBe(1);
  });

  it('a failed side effect does not mark the key, so a retry runs it', async () => {
    let attempts = 0;
    const { pipeline } = payments(() => {
      attempts++;
      if (attempts === 1)
        throw Object.assign(new Error('gateway timeout'), { code: 'GATEWAY_TIMEOUT' });
      return 'paid';
    });
    const event = {
      sourceType: 'payment.requested',
      scope: { sessionId: 's' },
      payload: { key: 'invoice-8' },
    };
    const failed = asRun(await pipeline.emit(event));
    expect(resultOf(failed)).toMatchObject({
      status: 'failed',
      error: { code: 'GATEWAY_TIMEOUT', message: 'gateway timeout' },
    });
    expect(failed.trace.signals.at(-1)?.signalType).toBe('signal.action.failed');
    expect(resultOf(asRun(await pipeline.emit(event)))).toMatchObject({
      status: 'applied',
      output: 'paid',
    });
    expect(attempts).toBe(2);
  });

  it('hasApplied / markApplied work on lane action-idempotency::<key>', async () => {
    const seen: boolean[] = [];
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:mark', async (_source, ctx) => {
          seen.push(await hasApplied(ctx, 'k'));
          await markApplied(ctx, 'k');
          seen.push(await hasApplied(ctx, 'k'));
          seen.push((await ctx.guards.get('action-idempotency::k')).lastEventAt === ctx.now());
          return undefined;
        }),
      ]),
    ]);
    await pipeline.emit({ sourceType: 'x' });
    expect(seen).toEqual([false, true, true]);
  });
});

describe('guard sub-lanes and their time to live', () => {
  /** A pipeline whose handler runs throttle, debounce and outer timeout on the one lane "l". */
  function allThree(options: { limits?: { guardTtlMs: number } } = {}) {
    const answers: string[][] = [];
    const setup = testPipeline(
      [
        definePolicy('p', [
          defineSourceHandler('x', 'x:all', async (_source, ctx) => {
            const said = async (guard: Guard, ms: number) => {
              const held: GuardWait | TerminalResult | undefined = await guard(ctx, {
                lane: 'l',
                ms,
              });
              if (held === undefined) return 'pass';
              if (held.status === 'wait') return `wait ${(held as GuardWait).pending.delayMs}`;
              return held.status === 'conclude' ? (held.concluded?.reason ?? 'conclude') : '?';
            };
            answers.push([
              await said(throttle, 1_000),
              await said(debounce, 1_000),
              await said(outerTimeout, 5_000),
            ]);
            return undefined;
          }),
        ]),
      ],
      options,
    );
    let n = 0;
    const at = async (time: number): Promise<string[]> => {
      setup.clock.advance(time - (setup.clock.now() - 1_000_000));
      await setup.pipeline.emit({ sourceType: 'x', sourceId: `e${n++}` });
      return answers.at(-1) as string[];
    };
    return { at, ...setup };
  }

  it('debounce, throttle and outer timeout on the same lane each keep their own state', async () => {
    const { at } = allThree();
    // Sharing one state, the throttle's touch made the debounce wait at once.
    expect(await at(0)).toEqual(['pass', 'pass', 'pass']);
    expect(await at(400)).toEqual(['wait 600', 'wait 1000', 'pass']);
    // The debounce was extended at 400; the throttle did not touch its lane while waiting.
    expect(await at(1_000)).toEqual(['pass', 'wait 1000', 'pass']);
    expect(await at(5_000)).toEqual(['pass', 'pass', 'timed_out']);
  });

  it('each guard’s state is on lane <lane>::debounce, ::throttle, ::outer-timeout', async () => {
    const lanes: Record<string, unknown> = {};
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:lanes', async (_source, ctx) => {
          await debounce(ctx, { lane: 'l', ms: 10 });
          await throttle(ctx, { lane: 'l', ms: 10 });
          await outerTimeout(ctx, { lane: 'l', ms: 10 });
          for (const lane of ['l', 'l::debounce', 'l::throttle', 'l::outer-timeout'])
            lanes[lane] = await ctx.guards.get(lane);
          return undefined;
        }),
      ]),
    ]);
    await pipeline.emit({ sourceType: 'x' });
    const touched = { lastEventAt: 1_000_000, startedAt: 1_000_000 };
    expect(lanes).toEqual({
      l: {},
      'l::debounce': touched,
      'l::throttle': touched,
      'l::outer-timeout': touched,
    });
    expect(guardLane('outer-timeout', 'l')).toBe('l::outer-timeout');
  });

  it('an outer timeout does not conclude its scope forever: the lane expires an hour after it started', async () => {
    const { at } = allThree();
    expect((await at(0))[2]).toBe('pass');
    expect((await at(5_000))[2]).toBe('timed_out');
    expect((await at(DEFAULT_PIPELINE_LIMITS.guardTtlMs - 1))[2]).toBe('timed_out');
    // Expired: this event starts a new clock, which times out 5 s later again.
    expect((await at(DEFAULT_PIPELINE_LIMITS.guardTtlMs))[2]).toBe('pass');
    expect((await at(DEFAULT_PIPELINE_LIMITS.guardTtlMs + 5_000))[2]).toBe('timed_out');
  });

  it('limits.guardTtlMs sets the time to live, on the pipeline’s clock', async () => {
    const { at } = allThree({ limits: { guardTtlMs: 60_000 } });
    expect(await at(0)).toEqual(['pass', 'pass', 'pass']);
    expect(await at(59_999)).toEqual(['pass', 'pass', 'timed_out']);
    // Throttle and debounce were touched at 59 999 and live on; the outer timeout's lane,
    // touched only when it started at 0, has expired and starts again.
    expect(await at(60_000)).toEqual(['wait 999', 'wait 1000', 'pass']);
    expect(errorOf(() => testPipeline([], { limits: { guardTtlMs: 0 } })).message).toBe(
      'pipeline limit guardTtlMs must be a whole number ≥ 1, got 0',
    );
  });

  it('InMemoryGuardBackend forgets a lane ttlMs after its last touch, on its clock', async () => {
    const clock = new SimulatedClock(0);
    const guards = new InMemoryGuardBackend(clock);
    await guards.touch('s', 'a', 0, 1_000);
    clock.advance(600);
    await guards.touch('s', 'a', 600, 1_000);
    clock.advance(999);
    expect(await guards.get('s', 'a')).toEqual({ lastEventAt: 600, startedAt: 0 });
    clock.advance(1);
    expect(await guards.get('s', 'a')).toEqual({});
    // Without a ttl it lives an hour; the state handed out is a copy.
    const state = await guards.touch('s', 'b', 1_600);
    (state as { lastEventAt: number }).lastEventAt = 0;
    clock.advance(DEFAULT_GUARD_TTL_MS - 1);
    expect(await guards.get('s', 'b')).toEqual({ lastEventAt: 1_600, startedAt: 1_600 });
    clock.advance(1);
    expect(await guards.get('s', 'b')).toEqual({});
  });

  it('an idempotency mark lasts guardTtlMs', async () => {
    const seen: boolean[] = [];
    const { pipeline, clock } = testPipeline(
      [
        definePolicy('p', [
          defineSourceHandler('x', 'x:mark', async (_source, ctx) => {
            seen.push(await hasApplied(ctx, 'k'));
            await markApplied(ctx, 'k');
            return undefined;
          }),
        ]),
      ],
      { limits: { guardTtlMs: 10_000 } },
    );
    await pipeline.emit({ sourceType: 'x', sourceId: 'a' });
    clock.advance(9_999);
    await pipeline.emit({ sourceType: 'x', sourceId: 'b' });
    clock.advance(10_000);
    await pipeline.emit({ sourceType: 'x', sourceId: 'c' });
    expect(seen).toEqual([false, true, false]);
  });
});
