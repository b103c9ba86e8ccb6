import { describe, expect, it } from 'vitest';
import { createRolebox, STOP_LOOP_SIGNAL } from '../src/index.js';
import { registeredLoops } from '../src/loop/registry.js';
import { ScriptedDispatcher, settle } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { loopHarness } from './support/loops.js';

describe('a three-round inherit loop', () => {
  it('seeds each round, notes every step exactly and visits the phases in order', async () => {
    const h = await loopHarness();
    const started = h.session.startLoop('|loop:3| analyse the proposals');
    expect(started).toEqual({ ok: true, loopId: expect.stringMatching(/^loop_/) });
    const loopId = started.ok ? started.loopId : '';
    await h.settle();
    expect(h.session.view().loop).toMatchObject({
      phase: 'awaiting_worker',
      current: 1,
      total: 3,
      mode: 'inherit',
    });

    await h.advance(12_500);
    h.dispatcher.complete(undefined, 'Proposal B is cheapest.');
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('dispatching');
    await h.advance(2_000);
    await h.advance(10_200);
    h.dispatcher.complete(undefined, 'B is cheapest; C is fastest.');
    await h.settle();
    await h.advance(2_000);
    await h.advance(8_100);
    h.dispatcher.complete(undefined, 'Recommend B.');
    await h.settle();

    expect(h.dispatcher.tasks.map((task) => task.input.prompt)).toEqual([
      'analyse the proposals',
      'Proposal B is cheapest.\n\n---\n\nanalyse the proposals',
      'B is cheapest; C is fastest.\n\n---\n\nanalyse the proposals',
    ]);
    expect(h.dispatcher.tasks.map((task) => task.key)).toEqual([
      `${loopId}:1`,
      `${loopId}:2`,
      `${loopId}:3`,
    ]);
    expect(h.notes()).toEqual([
      '[loop-progress loop started: 3 rounds, inherit mode]',
      '[loop-progress round 1/3 completed, session=worker-1, duration=12.5s]',
      '[loop-progress round 2/3 completed, session=worker-2, duration=10.2s]',
      '[loop-progress round 3/3 completed, session=worker-3, duration=8.1s]',
      '[loop-progress loop complete]\nRounds: r1:worker-1(12.5s,completed), r2:worker-2(10.2s,completed), r3:worker-3(8.1s,completed)',
    ]);
    expect(h.phases.get(loopId)).toEqual([
      'activating',
      'dispatching',
      'awaiting_worker',
      'summarizing',
      'dispatching',
      'awaiting_worker',
      'summarizing',
      'dispatching',
      'awaiting_worker',
      'summarizing',
      'finalizing',
      'complete',
    ]);
    const loop = h.session.view().loop;
    expect(loop).toMatchObject({
      phase: 'complete',
      // SPEC §3.4: `current` advances after each summary, the last one too.
      current: 4,
      total: 3,
      lastSummary: 'Recommend B.',
      cancelRequested: false,
    });
    expect(
      loop?.rounds.map((round) => [round.round, round.status, round.startedAt, round.durationMs]),
    ).toEqual([
      [1, 'completed', 0, 12_500],
      [2, 'completed', 14_500, 10_200],
      [3, 'completed', 26_700, 8_100],
    ]);
    expect(h.events.filter((e) => e.type === 'loop_finished')).toEqual([
      { type: 'loop_finished', sessionId: 'S', loopId, phase: 'complete' },
    ]);
    // Finished: the actor is gone, the state stays readable, and a new loop may start.
    expect(h.rb.system.system.get(`loop:${loopId}`)).toBeUndefined();
    expect(h.session.startLoop('|loop:1| another task').ok).toBe(true);
  });

  it('fresh mode never seeds', async () => {
    const h = await loopHarness({
      dispatcher: new ScriptedDispatcher((input) => `summary of round ${input.round}`),
      limits: { interRoundDelayMs: 0 },
    });
    h.session.startLoop('|loop:3,fresh| assess the code');
    await h.settle();
    expect(h.dispatcher.tasks.map((task) => task.input.prompt)).toEqual([
      'assess the code',
      'assess the code',
      'assess the code',
    ]);
    expect(h.notes()[0]).toBe('[loop-progress loop started: 3 rounds, fresh mode]');
    expect(h.session.view().loop?.phase).toBe('complete');
  });

  it('cuts summaries to their last 8 000 characters before seeding', async () => {
    const long = `${'x'.repeat(3_000)}${'y'.repeat(8_000)}`;
    const h = await loopHarness({
      dispatcher: new ScriptedDispatcher((input) => (input.round === 1 ? long : 'short')),
      limits: { interRoundDelayMs: 0 },
    });
    h.session.startLoop('|loop:2| task');
    await h.settle();
    expect(h.dispatcher.tasks[1]?.input.prompt).toBe(`${'y'.repeat(8_000)}\n\n---\n\ntask`);
    expect(h.session.view().loop?.lastSummary).toBe('short');
  });

  it('a clamped loop runs 50 rounds and says so', async () => {
    const h = await loopHarness({
      dispatcher: new ScriptedDispatcher(() => 'ok'),
      limits: { interRoundDelayMs: 0 },
    });
    h.session.startLoop('|loop:100| x');
    await h.settle(10);
    expect(h.notes()[0]).toBe(
      '[loop-progress loop started: 50 rounds, inherit mode, clamped from 100]',
    );
    expect(h.session.view().loop).toMatchObject({
      phase: 'complete',
      total: 50,
      requested: 100,
      clamped: true,
    });
    expect(h.dispatcher.tasks).toHaveLength(50);
  });
});

describe('failures', () => {
  it('a worker error fails the loop with its reason', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| task');
    await h.settle();
    await h.advance(1_000);
    h.dispatcher.fail(undefined, 'model quota exceeded');
    await h.settle();
    expect(h.session.view().loop).toMatchObject({
      phase: 'error',
      errorReason: 'model quota exceeded',
    });
    expect(h.notes().at(-1)).toBe('[loop-progress error: model quota exceeded]');
    expect(h.session.view().loop?.rounds).toEqual([
      expect.objectContaining({ round: 1, status: 'error', durationMs: 1_000 }),
    ]);
    expect(h.dispatcher.tasks).toHaveLength(1);
    // The worker had already ended: nothing to cancel.
    expect(h.dispatcher.cancelled).toEqual([]);
  });

  it('a round record keeps the output facts of its result, completed or failed', async () => {
    const h = await loopHarness({ limits: { interRoundDelayMs: 0 } });
    h.session.startLoop('|loop:2| task');
    await h.settle();
    const big = { bytes: 1_048_576, keptBytes: 65_536, truncated: true };
    // Extra fields of a foreign dispatcher's facts are not stored.
    h.dispatcher.complete(undefined, 'tail', { ...big, extra: 'x' } as typeof big);
    await h.settle();
    h.dispatcher.fail(undefined, 'exit code 1', '', { bytes: 3, keptBytes: 3, truncated: false });
    await h.settle();
    expect(h.session.view().loop?.rounds.map(({ status, output }) => ({ status, output }))).toEqual(
      [
        { status: 'completed', output: big },
        { status: 'error', output: { bytes: 3, keptBytes: 3, truncated: false } },
      ],
    );
  });

  it('a round that exceeds its timeout is cancelled and fails the loop with "round timeout"', async () => {
    const h = await loopHarness({ limits: { roundTimeoutMs: 60_000 } });
    h.session.startLoop('|loop:3| task');
    await h.settle();
    await h.advance(59_999);
    expect(h.session.view().loop?.phase).toBe('awaiting_worker');
    await h.advance(1);
    expect(h.session.view().loop).toMatchObject({ phase: 'error', errorReason: 'round timeout' });
    expect(h.dispatcher.cancelled).toEqual(['task-1']);
    expect(h.dispatcher.task(1).status).toBe('cancelled');
    expect(h.session.view().loop?.rounds[0]).toMatchObject({
      status: 'cancelled',
      durationMs: 60_000,
    });
    expect(h.notes().at(-1)).toBe('[loop-progress error: round timeout]');
  });

  it('a dispatch that fails fails the loop', async () => {
    const dispatcher = new ScriptedDispatcher();
    dispatcher.dispatchRound = async () => {
      throw new Error('no worker slots');
    };
    const h = await loopHarness({ dispatcher });
    h.session.startLoop('|loop:2| task');
    await h.settle();
    expect(h.session.view().loop).toMatchObject({ phase: 'error', errorReason: 'no worker slots' });
  });

  it('a worker cancelled by someone else, or lost by the dispatcher, interrupts the loop', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:2| task');
    await h.settle();
    h.dispatcher.cancelExternally();
    await h.settle();
    expect(h.session.view().loop).toMatchObject({
      phase: 'interrupted',
      errorReason: 'worker task cancelled',
    });
    expect(h.notes().at(-1)).toBe(
      '[loop-progress loop interrupted]\nRounds: r1:worker-1(0.0s,cancelled)',
    );
    expect(h.dispatcher.cancelled).toEqual([]);
  });
});

describe('the inter-round delay', () => {
  it('is respected to the millisecond', async () => {
    const h = await loopHarness({ limits: { interRoundDelayMs: 2_000 } });
    h.session.startLoop('|loop:2| task');
    await h.settle();
    await h.advance(5_000);
    h.dispatcher.complete(undefined, 'one');
    await h.settle();
    await h.advance(1_999);
    expect(h.dispatcher.tasks).toHaveLength(1);
    expect(h.session.view().loop).toMatchObject({
      phase: 'dispatching',
      nextDispatchAt: 7_000,
      current: 2,
    });
    await h.advance(1);
    expect(h.dispatcher.tasks).toHaveLength(2);
    expect(h.session.view().loop?.rounds[1]).toMatchObject({ startedAt: 7_000, status: 'running' });
  });
});

describe('cancellation', () => {
  it('requestCancel lets the round finish and ends the loop at its summary', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| task');
    await h.settle();
    h.session.stopLoop();
    expect(h.session.view().loop).toMatchObject({
      phase: 'awaiting_worker',
      cancelRequested: true,
    });
    await h.advance(3_000);
    h.dispatcher.complete(undefined, 'partial');
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('cancelled');
    expect(h.dispatcher.cancelled).toEqual([]);
    expect(h.dispatcher.tasks).toHaveLength(1);
    expect(h.notes().slice(1)).toEqual([
      '[loop-progress round 1/3 completed, session=worker-1, duration=3.0s]',
      '[loop-progress loop cancelled]\nRounds: r1:worker-1(3.0s,completed)',
    ]);
  });

  it.each([
    ['stopLoop()', {}],
    ['stopLoop({ now: true })', { now: true }],
  ])(
    '%s in the same tick as startLoop ends the loop cancelled before any round runs',
    async (_label, options) => {
      const h = await loopHarness();
      const started = h.session.startLoop('|loop:3| task');
      h.session.stopLoop(options);
      await h.settle();
      await h.advance(10_000);
      expect(started.ok).toBe(true);
      expect(h.dispatcher.tasks).toEqual([]);
      expect(h.session.view().loop).toMatchObject({
        phase: 'cancelled',
        cancelRequested: true,
        rounds: [],
      });
      expect(h.notes()).toEqual([
        '[loop-progress loop started: 3 rounds, inherit mode]',
        '[loop-progress loop cancelled]\nRounds: none',
      ]);
    },
  );

  it('a stop during the inter-round delay ends the loop without another round', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| task');
    await h.settle();
    h.dispatcher.complete(undefined, 'one');
    await h.settle();
    expect(h.session.view().loop).toMatchObject({ phase: 'dispatching', current: 2 });
    h.session.stopLoop();
    await h.advance(10_000);
    expect(h.dispatcher.tasks).toHaveLength(1);
    expect(h.session.view().loop).toMatchObject({ phase: 'cancelled', cancelRequested: true });
  });

  it('cancelNow while the worker runs records that a cancel was requested', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| task');
    await h.settle();
    h.session.stopLoop({ now: true });
    await h.settle();
    expect(h.session.view().loop).toMatchObject({ phase: 'cancelled', cancelRequested: true });
  });

  it('cancelNow cancels the worker, marks its round cancelled and finalizes at once', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| task');
    await h.settle();
    await h.advance(4_000);
    h.session.stopLoop({ now: true });
    await h.settle();
    expect(h.dispatcher.cancelled).toEqual(['task-1']);
    expect(h.session.view().loop).toMatchObject({
      phase: 'cancelled',
      rounds: [expect.objectContaining({ status: 'cancelled', durationMs: 4_000 })],
    });
    expect(h.notes().at(-1)).toBe(
      '[loop-progress loop cancelled]\nRounds: r1:worker-1(4.0s,cancelled)',
    );
  });

  it('cancelNow cascades to a child loop started from a worker session', async () => {
    const h = await loopHarness();
    const parent = h.session.startLoop('|loop:3| survey the field');
    await h.settle();
    // The parent's round 1 runs in worker session worker-1; the worker starts a loop of its own.
    const workerSession = await h.rb.openSession({ id: h.dispatcher.task(1).workerSessionId });
    const child = workerSession.startLoop('|loop:2| dig into one paper');
    await h.settle();
    expect(child.ok).toBe(true);
    expect(workerSession.view().loop).toMatchObject({
      phase: 'awaiting_worker',
      parentLoopId: parent.ok ? parent.loopId : '',
    });
    h.session.stopLoop({ now: true });
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('cancelled');
    expect(workerSession.view().loop?.phase).toBe('cancelled');
    expect(h.dispatcher.cancelled.sort()).toEqual(['task-1', 'task-2']);
  });

  it('a stop-loop message cancels while the worker side owns the loop, an ordinary one never', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| task');
    await h.settle();
    expect(h.session.message('please stop the loop')).toEqual({ loopStopped: false });
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('awaiting_worker');
    expect(h.session.message(`stop please ${STOP_LOOP_SIGNAL}`)).toEqual({ loopStopped: true });
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('cancelled');
  });

  it('the /stop-loop command cancels during the inter-round delay (dispatching)', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| task');
    await h.settle();
    h.dispatcher.complete(undefined, 'one');
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('dispatching');
    expect(h.session.message('/stop-loop')).toEqual({ loopStopped: true });
    await h.settle();
    await h.advance(5_000);
    expect(h.session.view().loop?.phase).toBe('cancelled');
    expect(h.dispatcher.tasks).toHaveLength(1);
  });

  it('cancelNow while a dispatch is in flight cancels the task as soon as it is known', async () => {
    let release: () => void = () => {};
    const dispatcher = new ScriptedDispatcher();
    const original = dispatcher.dispatchRound.bind(dispatcher);
    dispatcher.dispatchRound = (input, key) =>
      new Promise((resolve) => (release = () => resolve(original(input, key))));
    const h = await loopHarness({ dispatcher });
    h.session.startLoop('|loop:3| task');
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('dispatching');
    h.session.stopLoop({ now: true });
    release();
    await h.settle();
    expect(h.session.view().loop?.phase).toBe('cancelled');
    expect(dispatcher.cancelled).toEqual(['task-1']);
  });

  it('stopLoop without a running loop is refused', async () => {
    const h = await loopHarness();
    expect(errorOf(() => h.session.stopLoop()).code).toBe('no_active_loop');
    expect(errorOf(() => h.session.stopLoop({ now: 'yes' } as never)).code).toBe(
      'invalid_argument',
    );
  });
});

describe('registration refusals (SPEC §3.4)', () => {
  it('a second loop on a session', async () => {
    const h = await loopHarness();
    const first = h.session.startLoop('|loop:3| task');
    const second = h.session.startLoop('|loop:2| something else');
    expect(second).toEqual({
      ok: false,
      reason: `session S already has a running loop (${first.ok ? first.loopId : ''})`,
    });
    expect(h.session.tool('|loop:2| something else')).toMatchObject({
      kind: 'loop',
      ok: false,
      text: expect.stringMatching(/^loop refused: session S already has a running loop/),
    });
  });

  it('the same prompt started again from one of its own workers', async () => {
    const h = await loopHarness();
    h.session.startLoop('|loop:3| Survey the field');
    await h.settle();
    const worker = await h.rb.openSession({ id: 'worker-1' });
    const refused = worker.startLoop('|loop:2,fresh|   survey   THE field ');
    expect(refused).toMatchObject({ ok: false, reason: expect.stringContaining('recursive loop') });
    expect(worker.view().loop).toBeNull();
  });

  it('a tree of more than 30 loops', async () => {
    const h = await loopHarness();
    let session = h.session;
    for (let depth = 1; depth <= 30; depth++) {
      expect(session.startLoop(`|loop:2| level ${depth}`).ok).toBe(true);
      await h.settle();
      session = await h.rb.openSession({ id: h.dispatcher.task().workerSessionId });
    }
    expect(session.startLoop('|loop:2| level 31')).toEqual({
      ok: false,
      reason: expect.stringContaining('loop tree limit reached'),
    });
    expect(registeredLoops(h.rb.system.getSnapshot().context.loopRegistry)).toSatisfy(
      (loops: object) => Object.keys(loops).length === 30,
    );
  });
});

describe('stale and duplicate completions', () => {
  it('advance the loop exactly once', async () => {
    const h = await loopHarness({ limits: { interRoundDelayMs: 0 } });
    const started = h.session.startLoop('|loop:3| task');
    const loopId = started.ok ? started.loopId : '';
    await h.settle();
    h.dispatcher.complete('task-1', 'one');
    h.dispatcher.renotify('task-1');
    h.dispatcher.renotify('task-1');
    await h.settle();
    expect(h.dispatcher.tasks).toHaveLength(2);
    // A stale notice for round 1's task while round 2 runs, sent straight to the actor.
    h.rb.system.system
      .get(`loop:${loopId}`)
      ?.send({ type: 'loop.worker_terminated', taskId: 'task-1', status: 'completed', at: 0 });
    h.dispatcher.renotify('task-1');
    await h.settle();
    expect(h.session.view().loop).toMatchObject({ phase: 'awaiting_worker', current: 2 });
    expect(h.notes().filter((note) => note.includes('round 1/3'))).toHaveLength(1);
    expect(h.dispatcher.tasks).toHaveLength(2);
  });
});

describe('the loop API', () => {
  it('starting a loop without a dispatcher is a clear error', async () => {
    const rb = createRolebox();
    await rb.start();
    const session = await rb.openSession();
    const error = errorOf(() => session.startLoop('|loop:2| task'));
    expect(error.code).toBe('no_dispatcher');
    expect(error.message).toContain('createRolebox({ dispatcher })');
    expect(session.view().loop).toBeNull();
  });

  it('malformed loop text is refused and changes nothing', async () => {
    const h = await loopHarness();
    const before = JSON.stringify(h.rb.system.getPersistedSnapshot());
    for (const text of ['|loop:zero| x', '|loop:3|', '|loop:3,sideways| x', 'loop x']) {
      expect(errorOf(() => h.session.startLoop(text)).code).toBe('malformed_loop_text');
    }
    expect(errorOf(() => h.session.tool('|loop:0| x')).code).toBe('malformed_loop_text');
    expect(JSON.stringify(h.rb.system.getPersistedSnapshot())).toBe(before);
    expect(h.dispatcher.tasks).toHaveLength(0);
  });

  it('a loop started through the tool text answers the agent', async () => {
    const h = await loopHarness();
    const receipt = h.session.tool('|loop:2,fresh| check the links');
    expect(receipt).toEqual({
      kind: 'loop',
      ok: true,
      loopId: expect.any(String),
      text: expect.stringMatching(/^loop started: loop_/),
    });
    await settle();
    expect(h.session.view().loop).toMatchObject({
      mode: 'fresh',
      total: 2,
      basePrompt: 'check the links',
    });
  });

  it('rejects a dispatcher that does not implement the port', () => {
    expect(errorOf(() => createRolebox({ dispatcher: { dispatchRound() {} } as never })).code).toBe(
      'invalid_argument',
    );
  });
});
