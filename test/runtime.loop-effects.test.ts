import { describe, expect, it } from 'vitest';
import type { LoopAnswer } from '../src/loop/machine-types.js';
import type { Dispatcher } from '../src/ports/dispatcher.js';
import { LoopEffectRunner } from '../src/runtime/loop-effect-runner.js';
import { ScriptedDispatcher, SimulatedClock, settle } from '../src/testing/index.js';

const round = { loopId: 'L', round: 1, originSessionId: 'S', agent: 'default', prompt: 'p' };

function runner(dispatcher: Dispatcher | null = new ScriptedDispatcher()) {
  const clock = new SimulatedClock(0);
  const answers: [string, LoopAnswer][] = [];
  const effects = new LoopEffectRunner({
    dispatcher: dispatcher ?? undefined,
    clock,
    answer: (_sessionId, loopId, answer) => answers.push([loopId, answer]),
  });
  return { effects, clock, answers, types: () => answers.map(([, answer]) => answer.type) };
}

describe('the loop effect runner', () => {
  it('performs a need once however often it is asked (a restart asks again)', async () => {
    const dispatcher = new ScriptedDispatcher();
    const { effects, answers } = runner(dispatcher);
    const dispatch = { kind: 'dispatch_round', key: 'L:1', round } as const;
    effects.need('S', 'L', [dispatch]);
    effects.need('S', 'L', [dispatch]);
    await settle();
    expect(dispatcher.dispatchCalls).toBe(1);
    expect(answers).toEqual([
      [
        'L',
        {
          type: 'loop.round_dispatched',
          key: 'L:1',
          taskId: 'task-1',
          workerSessionId: 'worker-1',
          at: 0,
        },
      ],
    ]);
  });

  it('watches a task: reports its end once, stops watching when no longer asked', async () => {
    const dispatcher = new ScriptedDispatcher();
    const { effects, types } = runner(dispatcher);
    await dispatcher.dispatchRound(round, 'L:1');
    await dispatcher.dispatchRound(round, 'L:2');
    effects.need('S', 'L', [{ kind: 'watch_task', taskId: 'task-1' }]);
    effects.need('S', 'L', [{ kind: 'watch_task', taskId: 'task-1' }]);
    dispatcher.complete('task-1', 'one');
    await settle();
    expect(types()).toEqual(['loop.worker_terminated']);
    effects.need('S', 'L', [{ kind: 'watch_task', taskId: 'task-2' }]);
    effects.need('S', 'L', [{ kind: 'collect_result', taskId: 'task-1' }]);
    dispatcher.complete('task-2', 'two');
    await settle();
    // task-2's watch was replaced by the collect: its end is not reported.
    expect(types()).toEqual(['loop.worker_terminated', 'loop.result_collected']);
  });

  it('arms a deadline on the clock, re-arms it when moved, forgets it when no longer asked', async () => {
    const { effects, clock, answers } = runner();
    effects.need('S', 'L', [{ kind: 'arm_deadline', deadline: 'round_timeout', at: 1_000 }]);
    effects.need('S', 'L', [{ kind: 'arm_deadline', deadline: 'round_timeout', at: 2_000 }]);
    clock.advance(1_500);
    expect(answers).toEqual([]);
    clock.advance(500);
    expect(answers).toEqual([
      ['L', { type: 'loop.deadline_reached', deadline: 'round_timeout', at: 2_000 }],
    ]);
    effects.need('S', 'L', [{ kind: 'arm_deadline', deadline: 'inter_round_delay', at: 3_000 }]);
    effects.need('S', 'L', [{ kind: 'prepare' }]);
    clock.advance(5_000);
    expect(answers).toHaveLength(1);
  });

  it('a deadline whose timer fires early (Node rounds) is answered at its due time, one firing late at the later time', () => {
    const clock = new SimulatedClock(0);
    const answers: LoopAnswer[] = [];
    let skew = -1;
    const effects = new LoopEffectRunner({
      dispatcher: undefined,
      clock: {
        now: () => clock.now(),
        setTimeout: (callback, delayMs) => clock.setTimeout(callback, delayMs + skew),
        clearTimeout: (handle) => clock.clearTimeout(handle),
      },
      answer: (_sessionId, _loopId, answer) => answers.push(answer),
    });
    effects.need('S', 'L', [{ kind: 'arm_deadline', deadline: 'inter_round_delay', at: 1_000 }]);
    clock.advance(999);
    expect(answers).toEqual([
      { type: 'loop.deadline_reached', deadline: 'inter_round_delay', at: 1_000 },
    ]);
    skew = 25;
    effects.need('S', 'L', [{ kind: 'arm_deadline', deadline: 'round_timeout', at: 2_000 }]);
    clock.advance(1_100);
    expect(answers.at(-1)).toEqual({
      type: 'loop.deadline_reached',
      deadline: 'round_timeout',
      at: 2_025,
    });
  });

  it('a dispatcher that throws, even before it is async, is answered as a failure', async () => {
    const throwing = new ScriptedDispatcher();
    throwing.dispatchRound = () => {
      throw new Error('no worker slots');
    };
    throwing.getRoundResult = () => {
      throw new Error('result lost');
    };
    const { effects, answers } = runner(throwing);
    effects.need('S', 'L', [{ kind: 'dispatch_round', key: 'L:1', round }]);
    effects.need('S', 'M', [{ kind: 'collect_result', taskId: 'task-9' }]);
    await settle();
    expect(answers).toEqual([
      ['L', { type: 'loop.dispatch_failed', key: 'L:1', reason: 'no worker slots', at: 0 }],
      ['M', { type: 'loop.collect_failed', taskId: 'task-9', reason: 'result lost', at: 0 }],
    ]);
  });

  it('without a dispatcher, prepare is refused with why', async () => {
    const { effects, answers } = runner(null);
    effects.need('S', 'L', [{ kind: 'prepare' }]);
    await settle();
    expect(answers[0]?.[1]).toMatchObject({
      type: 'loop.prepare_failed',
      reason: 'this rolebox has no dispatcher; pass createRolebox({ dispatcher })',
    });
  });

  it('after stop, nothing is answered and nothing more is performed', async () => {
    const dispatcher = new ScriptedDispatcher();
    const { effects, clock, answers } = runner(dispatcher);
    effects.need('S', 'L', [
      { kind: 'dispatch_round', key: 'L:1', round },
      { kind: 'arm_deadline', deadline: 'round_timeout', at: 100 },
    ]);
    effects.stop();
    await settle();
    clock.advance(1_000);
    effects.need('S', 'L', [{ kind: 'dispatch_round', key: 'L:2', round }]);
    await settle();
    expect(answers).toEqual([]);
    expect(dispatcher.dispatchCalls).toBe(1);
  });

  it('a loop dropped while an effect is in flight gets no answer; asked again, it is performed again', async () => {
    const dispatcher = new ScriptedDispatcher();
    const { effects, answers } = runner(dispatcher);
    const dispatch = { kind: 'dispatch_round', key: 'L:1', round } as const;
    effects.need('S', 'L', [dispatch, { kind: 'prepare' }]);
    // Its session was dropped (another process owns it now) before the dispatcher answered.
    effects.drop('L');
    await settle();
    expect(answers).toEqual([]);
    // Activated again later: the same key, answered with the same task.
    effects.need('S', 'L', [dispatch]);
    await settle();
    expect(dispatcher.dispatchCalls).toBe(2);
    expect(answers.map(([, answer]) => answer)).toEqual([
      expect.objectContaining({ type: 'loop.round_dispatched', key: 'L:1', taskId: 'task-1' }),
    ]);
  });

  it('a dispatcher that answers dispatchRound without a task fails the round, naming what it answered', async () => {
    const dispatcher = new ScriptedDispatcher();
    const broken = Object.assign(Object.create(dispatcher), {
      dispatchRound: async () => undefined,
    }) as Dispatcher;
    const { effects, answers } = runner(broken);
    effects.need('S', 'L', [{ kind: 'dispatch_round', key: 'L:1', round }]);
    await settle();
    expect(answers.map(([, answer]) => answer)).toEqual([
      {
        type: 'loop.dispatch_failed',
        key: 'L:1',
        reason: expect.stringContaining('dispatchRound answered undefined'),
        at: 0,
      },
    ]);
  });

  it('an answer that cannot be delivered leaves nothing in flight: asked again, the effect is performed again', async () => {
    const dispatcher = new ScriptedDispatcher();
    const clock = new SimulatedClock(0);
    let deliveries = 0;
    const effects = new LoopEffectRunner({
      dispatcher,
      clock,
      answer: () => {
        deliveries++;
        if (deliveries === 1) throw new Error('delivery failed');
      },
    });
    const dispatch = { kind: 'dispatch_round', key: 'L:1', round } as const;
    effects.need('S', 'L', [dispatch]);
    // (the failed delivery rejects what answered() waits for; it catches it)
    const first = effects.answered('L', 0);
    await settle();
    await first;
    expect(deliveries).toBe(1);
    effects.need('S', 'L', [dispatch]);
    await settle();
    expect(dispatcher.dispatchCalls).toBe(2);
    expect(deliveries).toBe(2);
  });

  it('a need the answer causes synchronously does not perform the effect again', async () => {
    const dispatcher = new ScriptedDispatcher();
    const clock = new SimulatedClock(0);
    const dispatch = { kind: 'dispatch_round', key: 'L:1', round } as const;
    const effects: LoopEffectRunner = new LoopEffectRunner({
      dispatcher,
      clock,
      // As the command path does: the loop's new needs, performed before the answer returns.
      answer: () => effects.need('S', 'L', [dispatch]),
    });
    effects.need('S', 'L', [dispatch]);
    await settle();
    expect(dispatcher.dispatchCalls).toBe(1);
  });
});
