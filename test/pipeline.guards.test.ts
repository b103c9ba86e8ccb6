import { describe, expect, it } from 'vitest';
import {
  applyOnce,
  createAction,
  createSignal,
  debounce,
  defineActionHandler,
  definePolicy,
  defineSourceHandler,
  type ExecutorResult,
  hasApplied,
  markApplied,
  outerTimeout,
  type PipelineRun,
  type TerminalResult,
  throttle,
} from '../src/index.js';
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
