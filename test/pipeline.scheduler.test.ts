import { describe, expect, it } from 'vitest';
import {
  createAction,
  createSignal,
  defineActionHandler,
  definePolicy,
  defineSignalHandler,
  defineSourceHandler,
  type ExecutorResult,
  type PipelineAction,
  type PipelineSignal,
} from '../src/pipeline/index.js';
import { asRun, testPipeline } from './support/pipeline.js';

const applied = (action: PipelineAction, now: number): ExecutorResult => ({
  actionId: action.actionId,
  attempt: { current: 1, startedAt: now, completedAt: now, status: 'succeeded' },
  status: 'applied',
});

describe('the scheduler: return contracts', () => {
  it('nothing: no fan-out, the run completes', async () => {
    const { pipeline } = testPipeline([
      definePolicy('p', [defineSourceHandler('x', 'x:quiet', () => undefined)]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x' }));
    expect(run.status).toBe('completed');
    expect(run.trace.steps).toBe(1);
    expect(run.trace.handlerCalls.map((call) => [call.handlerId, call.outcome])).toEqual([
      ['x:quiet', 'none'],
    ]);
  });

  it('dispatch: signals first, then actions; an action result becomes the built-in result signal', async () => {
    const order: string[] = [];
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:plan', (source) => {
          const signal = createSignal({ source, signalType: 'signal.a' });
          // Listed actions-first on purpose: the scheduler queues signals first anyway.
          return {
            status: 'dispatch',
            actions: [createAction({ signal, actionType: 'action.b' })],
            signals: [signal],
          };
        }),
        defineSignalHandler(['signal.a', 'signal.action.applied'], 'signal:log', (signal) => {
          order.push(signal.signalType);
          return undefined;
        }),
        defineActionHandler('action.b', 'action.b:run', (action, ctx) => {
          order.push(action.actionType);
          return applied(action, ctx.now());
        }),
      ]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x', sourceId: 'e1' }));
    expect(order).toEqual(['signal.a', 'action.b', 'signal.action.applied']);
    expect(run.status).toBe('completed');
    expect(run.trace.signals.map((signal) => signal.signalId)).toEqual([
      'signal:e1/signal.a',
      'action:e1/signal.a/action.b:result',
    ]);
    expect(run.trace.results).toEqual([
      expect.objectContaining({
        actionId: 'action:e1/signal.a/action.b',
        handlerId: 'action.b:run',
        result: expect.objectContaining({ status: 'applied' }),
      }),
    ]);
    expect(run.trace.signals[1]?.payload).toEqual({
      actionId: 'action:e1/signal.a/action.b',
      actionType: 'action.b',
      attempt: { current: 1, startedAt: 1_000_000, completedAt: 1_000_000, status: 'succeeded' },
    });
  });

  for (const terminal of [
    { status: 'wait', pending: { for: 'the host' } },
    { status: 'schedule', nextHop: { after: 1000 } },
    { status: 'conclude', concluded: { reason: 'done', value: 42 } },
  ] as const) {
    it(`${terminal.status}: the run's outcome, with the handler and node that returned it`, async () => {
      const { pipeline } = testPipeline([
        definePolicy('p', [defineSourceHandler('x', 'x:end', () => terminal)]),
      ]);
      const run = asRun(await pipeline.emit({ sourceType: 'x', sourceId: 'e1' }));
      expect(run.status).toBe(terminal.status);
      expect(run.result).toEqual(terminal);
      expect(run.reason).toBe(terminal.status === 'conclude' ? 'done' : terminal.status);
      expect(run.terminalBy).toEqual({ handlerId: 'x:end', nodeId: 'source:e1' });
    });
  }

  it('runs breadth first: every node of a level before the next level', async () => {
    const seen: string[] = [];
    const fanOut = (signal: PipelineSignal, types: string[]) => ({
      status: 'dispatch' as const,
      signals: types.map((signalType) => createSignal({ signal, signalType })),
    });
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:fan', (source) => ({
          status: 'dispatch',
          signals: ['a', 'b'].map((signalType) => createSignal({ source, signalType })),
        })),
        defineSignalHandler('a', 'a:fan', (signal) => fanOut(signal, ['a1', 'a2'])),
        defineSignalHandler('b', 'b:fan', (signal) => fanOut(signal, ['b1'])),
        defineSignalHandler(['a', 'b', 'a1', 'a2', 'b1'], 'all:log', (signal) => {
          seen.push(signal.signalType);
          return undefined;
        }),
      ]),
    ]);
    await pipeline.emit({ sourceType: 'x' });
    expect(seen).toEqual(['a', 'b', 'a1', 'a2', 'b1']);
  });

  it('every handler of a type runs in registration order, awaited, policies in order', async () => {
    const calls: string[] = [];
    const slow = (name: string) => async () => {
      calls.push(`${name} start`);
      await Promise.resolve();
      calls.push(`${name} end`);
      return undefined;
    };
    const { pipeline } = testPipeline([
      definePolicy('p', [defineSourceHandler('x', 'x:1', slow('1'))]),
      definePolicy('q', [defineSourceHandler('x', 'x:2', slow('2'))]),
    ]);
    await pipeline.emit({ sourceType: 'x' });
    expect(calls).toEqual(['1 start', '1 end', '2 start', '2 end']);
  });

  it('the first terminal wins while the queue still drains', async () => {
    const ran: string[] = [];
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:fan', (source) => ({
          status: 'dispatch',
          signals: ['a', 'b', 'c'].map((signalType) => createSignal({ source, signalType })),
        })),
        defineSignalHandler('a', 'a:wait', () => ({ status: 'wait' })),
        defineSignalHandler('b', 'b:conclude', () => ({
          status: 'conclude',
          concluded: { reason: 'later' },
        })),
        defineSignalHandler(['a', 'b', 'c'], 'all:log', (signal) => {
          ran.push(signal.signalType);
          return undefined;
        }),
      ]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x', sourceId: 'e1' }));
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(run.status).toBe('wait');
    expect(run.terminalBy).toEqual({ handlerId: 'a:wait', nodeId: 'signal:e1/a' });
    // The later terminal is in the trace all the same.
    expect(run.trace.handlerCalls.find((call) => call.handlerId === 'b:conclude')?.outcome).toBe(
      'conclude',
    );
  });

  it('a self-dispatching handler stops at the step limit with max_steps, naming the type that looped', async () => {
    const { pipeline } = testPipeline(
      [
        definePolicy('p', [
          defineSourceHandler('x', 'x:start', (source) => ({
            status: 'dispatch',
            signals: [createSignal({ source, signalType: 'signal.echo' })],
          })),
          defineSignalHandler('signal.echo', 'signal.echo:again', (signal) => ({
            status: 'dispatch',
            signals: [createSignal({ signal, signalType: 'signal.echo' })],
          })),
        ]),
      ],
      { limits: { maxSteps: 20 } },
    );
    const run = asRun(await pipeline.emit({ sourceType: 'x' }));
    expect(run.status).toBe('conclude');
    expect(run.reason).toBe('max_steps');
    expect(run.result).toEqual({
      status: 'conclude',
      concluded: { reason: 'max_steps', maxSteps: 20, loopedType: 'signal.echo' },
    });
    expect(run.trace.steps).toBe(20);
    expect(run.trace.loopedType).toBe('signal.echo');
    expect(run.trace.dropped).toBe(1);
  });

  it('the default step limit is 256', async () => {
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:start', (source) => ({
          status: 'dispatch',
          signals: [createSignal({ source, signalType: 'echo' })],
        })),
        defineSignalHandler('echo', 'echo:again', (signal) => ({
          status: 'dispatch',
          signals: [createSignal({ signal, signalType: 'echo' })],
        })),
      ]),
    ]);
    expect(asRun(await pipeline.emit({ sourceType: 'x' })).trace.steps).toBe(256);
  });
});

describe('the scheduler: handler errors never abort a run', () => {
  it('an ExecutorResult from a signal handler is an error naming the handler, and is ignored', async () => {
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:emit', (source) => ({
          status: 'dispatch',
          signals: [createSignal({ source, signalType: 's' })],
        })),
        defineSignalHandler('s', 's:acts-itself', ((signal: PipelineSignal) => ({
          actionId: signal.signalId,
          attempt: { current: 1, startedAt: 0, status: 'succeeded' },
          status: 'applied',
        })) as never),
      ]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x', sourceId: 'e1' }));
    expect(run.status).toBe('completed');
    expect(run.trace.errors).toEqual([
      {
        handlerId: 's:acts-itself',
        nodeId: 'signal:e1/s',
        code: 'executor_result_from_non_action',
        message:
          'signal handler "s:acts-itself" returned an ExecutorResult; only action handlers perform side effects (split it into a signal handler and an action handler)',
      },
    ]);
    expect(run.trace.signals.map((signal) => signal.signalType)).toEqual(['s']);
  });

  it('a throwing action handler yields a failed result signal (HANDLER_THREW)', async () => {
    const failures: PipelineSignal[] = [];
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:plan', (source) => {
          const signal = createSignal({ source, signalType: 's' });
          return {
            status: 'dispatch',
            signals: [signal],
            actions: [createAction({ signal, actionType: 'action.boom' })],
          };
        }),
        defineActionHandler('action.boom', 'action.boom:run', () => {
          throw new Error('the disk is full');
        }),
        defineSignalHandler('signal.action.failed', 'failed:collect', (signal) => {
          failures.push(signal);
          return undefined;
        }),
      ]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x', sourceId: 'e1' }));
    expect(failures).toHaveLength(1);
    expect(failures[0]?.signalId).toBe('action:e1/s/action.boom:result');
    expect(failures[0]?.payload).toMatchObject({
      actionType: 'action.boom',
      error: {
        code: 'HANDLER_THREW',
        message: 'the disk is full',
        cause: { name: 'Error', message: 'the disk is full' },
      },
      attempt: { status: 'failed' },
    });
    expect(
      run.trace.handlerCalls.find((call) => call.handlerId === 'action.boom:run'),
    ).toMatchObject({ outcome: 'threw', error: 'the disk is full' });
  });

  it('a throwing signal handler is recorded, and the other handlers still run', async () => {
    const ran: string[] = [];
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:emit', (source) => ({
          status: 'dispatch',
          signals: [createSignal({ source, signalType: 's' })],
        })),
        defineSignalHandler('s', 's:first', () => {
          throw new TypeError('cannot read the classifier');
        }),
        defineSignalHandler('s', 's:second', () => {
          ran.push('second');
          return undefined;
        }),
      ]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x', sourceId: 'e1' }));
    expect(ran).toEqual(['second']);
    expect(run.status).toBe('completed');
    expect(run.trace.errors).toEqual([
      {
        handlerId: 's:first',
        nodeId: 'signal:e1/s',
        code: 'handler_threw',
        message: 'signal handler "s:first" threw on signal:e1/s: cannot read the classifier',
      },
    ]);
  });

  it('a result that is no contract, a node that is not built, and a node dispatched twice are errors, not crashes', async () => {
    const { pipeline } = testPipeline([
      definePolicy('p', [
        defineSourceHandler('x', 'x:bad', (() => ({ status: 'continue' })) as never),
        defineSourceHandler('x', 'x:fake-node', (() => ({
          status: 'dispatch',
          signals: [{ signalType: 'forged' }],
        })) as never),
        defineSourceHandler('x', 'x:twice', (source) => {
          const signal = createSignal({ source, signalType: 's' });
          return { status: 'dispatch', signals: [signal, signal] };
        }),
      ]),
    ]);
    const run = asRun(await pipeline.emit({ sourceType: 'x', sourceId: 'e1' }));
    expect(run.trace.errors.map((error) => [error.handlerId, error.code])).toEqual([
      ['x:bad', 'invalid_result'],
      ['x:fake-node', 'invalid_node'],
      ['x:twice', 'duplicate_node'],
    ]);
    expect(run.trace.errors[0]?.message).toBe(
      'source handler "x:bad" returned {"status":"continue"}, which is not a handler result',
    );
    expect(run.trace.signals.map((signal) => signal.signalId)).toEqual(['signal:e1/s']);
  });
});
