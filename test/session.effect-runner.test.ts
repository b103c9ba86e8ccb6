// Effect handlers (issue 24 items 2 and 3) on the simulated clock: the runtime runs every
// pending effect that has a handler once the step that recorded it is saved, applies the
// events it returns once, retries a throwing one with backoff, aborts one the session moved
// past, and delivers (and redelivers after an activation) those without a handler.
import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  type EffectHandlers,
  type EffectRetryOptions,
  type HostEvent,
  MemorySnapshotStore,
} from '../src/index.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { plainEffectIds } from './support/effect-ids.js';
import { poemWritten } from './support/poem-flow.js';

async function boot(
  effects: EffectHandlers,
  options: {
    store?: MemorySnapshotStore;
    idleMs?: number;
    effectRetry?: EffectRetryOptions;
    journal?: boolean;
  } = {},
) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    clock,
    ids: seededIdSource(3),
    effects,
    ...(options.store ? { store: options.store } : {}),
    ...(options.idleMs ? { idleMs: options.idleMs } : {}),
    ...(options.effectRetry ? { effectRetry: options.effectRetry } : {}),
    ...(options.journal ? { journal: true } : {}),
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
  });
  const effectEvents = () =>
    plainEffectIds(events).flatMap((event) =>
      event.type === 'effect' ||
      event.type === 'effect_started' ||
      event.type === 'effect_settled' ||
      event.type === 'effect_failed'
        ? [
            [
              event.type,
              'effectId' in event ? event.effectId : event.effect.id,
              ...(event.type === 'effect_settled' ? [event.by] : []),
              ...(event.type === 'effect' && event.redelivered ? ['redelivered'] : []),
            ].join(' '),
          ]
        : [],
    );
  return { rb, clock, session, events, effectEvents };
}

/** Brings a session to the approval of decision d1 (run_worker writer), then approves it. */
function approveWorker(session: Awaited<ReturnType<typeof boot>>['session']) {
  session.send({ type: 'user_submitted_input', text: 'a poem' });
  session.send({
    type: 'main_agent_decision_created',
    decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
  });
  return session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
}

describe('effect handlers', () => {
  it('run a pending effect after the step that recorded it is saved, and apply its events once', async () => {
    const store = new MemorySnapshotStore();
    const calls: { id: string; attempt: number; key: string; storedWithIt: boolean }[] = [];
    const h = await boot(
      {
        run_worker: async (effect, ctx) => {
          calls.push({
            id: effect.id,
            attempt: ctx.attempt,
            key: ctx.idempotencyKey,
            storedWithIt: (store.records.get('S') ?? '').includes(`"id":"${effect.id}"`),
          });
          return poemWritten(ctx.session, effect.workerId);
        },
      },
      { store },
    );
    const approved = approveWorker(h.session);
    const run = approved.effects[0];
    expect(plainEffectIds(run)).toMatchObject({ type: 'run_worker', workerId: 'poet', id: 'S:e2' });
    expect(calls, 'nothing runs inside the step').toEqual([]);
    await settle(10);
    expect(plainEffectIds(calls)).toEqual([
      { id: 'S:e2', attempt: 1, key: 'S:e2', storedWithIt: true },
    ]);
    expect(h.session.view()).toMatchObject({
      phase: 'waiting_user',
      waitingReason: { kind: 'review_artifact' },
      currentWorkerId: null,
      pendingEffects: [],
    });
    expect(h.effectEvents()).toEqual([
      'effect S:e1',
      'effect_settled S:e1 main_agent_decision_created',
      'effect S:e2',
      'effect_started S:e2',
      'effect_settled S:e2 worker_started',
    ]);
    // Applied once: each returned event is in the history once.
    const history = h.rb.system.system
      .get('session:S')
      ?.getSnapshot()
      .context.history.map((entry: { event: { type: string } }) => entry.event.type);
    expect(history?.filter((type: string) => type.startsWith('worker_'))).toEqual([
      'worker_started',
      'worker_completed',
    ]);
    await h.rb.stop();
  });

  it('retry a throwing handler with backoff on the clock, then fail the effect and the session', async () => {
    const attempts: number[] = [];
    const h = await boot(
      {
        invoke_main_agent: (_effect, ctx) => {
          attempts.push(ctx.attempt);
          throw new Error(`model down #${ctx.attempt}`);
        },
      },
      { effectRetry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 150 } },
    );
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    await settle(10);
    expect(attempts).toEqual([1]);
    expect(plainEffectIds(h.session.view().pendingEffects)).toEqual([
      expect.objectContaining({
        id: 'S:e1',
        status: 'pending',
        attempts: 1,
        lastError: 'model down #1',
        nextAttemptAt: 1_100,
      }),
    ]);
    h.clock.advance(99);
    await settle(10);
    expect(attempts, 'not before its time').toEqual([1]);
    h.clock.advance(1);
    await settle(10);
    expect(attempts).toEqual([1, 2]);
    // The delay doubles (200) but is capped at maxDelayMs (150).
    expect(h.session.view().pendingEffects[0]?.nextAttemptAt).toBe(1_250);
    h.clock.advance(150);
    await settle(10);
    expect(attempts).toEqual([1, 2, 3]);
    expect(plainEffectIds(h.session.view())).toMatchObject({
      phase: 'error',
      errorReason: 'effect S:e1 (invoke_main_agent) failed after 3 attempts: model down #3',
      pendingEffects: [{ id: 'S:e1', status: 'failed', attempts: 3, lastError: 'model down #3' }],
    });
    h.clock.advance(10_000);
    await settle(10);
    expect(attempts, 'a failed effect is not run again').toEqual([1, 2, 3]);
    await h.rb.stop();
  });

  it('count a handler that returns something other than events as a failed attempt, naming it', async () => {
    const h = await boot(
      { invoke_main_agent: () => 'a decision' as never },
      { effectRetry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 } },
    );
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    await settle(10);
    expect(plainEffectIds(h.session.view().pendingEffects)).toEqual([
      expect.objectContaining({
        id: 'S:e1',
        status: 'pending',
        attempts: 1,
        lastError:
          'invalid_argument: an effect handler must return an array of runtime events or nothing, got "a decision"',
      }),
    ]);
    expect(h.session.view().phase, 'nothing it returned was applied').toBe('running');
    await h.rb.stop();
  });

  it('fire the AbortSignal when the effect is cancelled or the session closed, and drop what returns then', async () => {
    const signals: AbortSignal[] = [];
    const release: (() => void)[] = [];
    const h = await boot({
      invoke_main_agent: (_effect, ctx) => {
        signals.push(ctx.signal);
        return new Promise((resolve) => {
          release.push(() => resolve([{ type: 'flow_completed' }]));
        });
      },
    });
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    await settle(10);
    expect(signals.map((signal) => signal.aborted)).toEqual([false]);
    // The host answers by hand meanwhile: the effect is settled, the handler aborted.
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'ask_user', message: 'which?' },
    });
    expect(signals[0]?.aborted).toBe(true);
    release[0]?.();
    await settle(10);
    expect(h.session.view().phase, 'its flow_completed was not applied').toBe('waiting_user');
    h.session.send({ type: 'user_submitted_input', text: 'this one' });
    await settle(10);
    expect(signals.map((signal) => signal.aborted)).toEqual([true, false]);
    h.session.close();
    expect(signals[1]?.aborted).toBe(true);
    await h.rb.stop();
  });

  it('leave the AbortSignal of a handler that returned alone: its own result settles the effect', async () => {
    const signals: AbortSignal[] = [];
    const h = await boot({
      invoke_main_agent: (_effect, ctx) => {
        signals.push(ctx.signal);
        return [
          {
            type: 'main_agent_decision_created',
            decision: { id: 'd1', kind: 'ask_user', message: 'which?' },
          },
        ];
      },
    });
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    await settle(10);
    expect(h.effectEvents().slice(0, 3)).toEqual([
      'effect S:e1',
      'effect_started S:e1',
      'effect_settled S:e1 main_agent_decision_created',
    ]);
    expect(h.session.view().phase).toBe('waiting_user');
    expect(signals.map((signal) => signal.aborted)).toEqual([false]);
    await h.rb.stop();
    expect(signals[0]?.aborted, 'not even when the rolebox stops').toBe(false);
  });

  it('deliver effects without a handler as `effect` events, settle an emit_message as delivered', async () => {
    const h = await boot({});
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'ask_user', message: 'which?' },
    });
    await settle(10);
    expect(h.effectEvents()).toEqual([
      'effect S:e1',
      'effect_settled S:e1 main_agent_decision_created',
      'effect S:e2',
      'effect_settled S:e2 delivered',
    ]);
    expect(h.session.view().pendingEffects).toEqual([]);
    await h.rb.stop();
  });
});

describe("a handler's result passes the checks `send` makes", () => {
  it('refuses a result with decision_mismatch as a failed attempt, applies none of it, and fails the effect after the last', async () => {
    const h = await boot(
      {
        // The decision is taken; the approval names another decision: `send` would refuse it.
        invoke_main_agent: () => [
          {
            type: 'main_agent_decision_created',
            decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
          },
          { type: 'user_approved_next_step', decisionId: 'd2' },
        ],
      },
      { effectRetry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 } },
    );
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    await settle(10);
    const [entry] = h.session.view().pendingEffects;
    expect(entry).toMatchObject({ status: 'pending', attempts: 1, nextAttemptAt: 1_100 });
    expect(entry?.lastError).toBe(
      `decision_mismatch: effect ${entry?.id}: event 2 of 2 of its result is refused: user_approved_next_step: decision "d2" is not the one awaiting approval (d1)`,
    );
    expect(entry?.result, 'a refused result is never recorded').toBeUndefined();
    expect(h.session.view(), 'nothing of it was applied, not even its first event').toMatchObject({
      phase: 'running',
      waitingReason: null,
    });
    h.clock.advance(100);
    await settle(10);
    expect(h.session.view()).toMatchObject({
      phase: 'error',
      errorReason: expect.stringContaining(
        `effect ${entry?.id} (invoke_main_agent) failed after 2 attempts: decision_mismatch: `,
      ),
      pendingEffects: [expect.objectContaining({ status: 'failed', attempts: 2 })],
    });
    await h.rb.stop();
  });

  it('refuses a worker_completed naming an artifact never written with unknown_artifact', async () => {
    const h = await boot(
      {
        run_worker: (effect) => [
          { type: 'worker_started', workerId: effect.workerId, acceptanceMode: 'user_confirmed' },
          { type: 'worker_completed', artifactId: 'art-9' },
        ],
      },
      { effectRetry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 100 } },
    );
    approveWorker(h.session);
    await settle(10);
    const [entry] = h.session.view().pendingEffects;
    expect(entry).toMatchObject({ effect: { type: 'run_worker' }, status: 'pending', attempts: 1 });
    expect(entry?.lastError).toBe(
      `unknown_artifact: effect ${entry?.id}: event 2 of 2 of its result is refused: worker_completed: session has no artifact "art-9"; write it first`,
    );
    expect(h.session.view(), 'its worker_started was not applied either').toMatchObject({
      phase: 'running',
      currentWorkerId: null,
    });
    await h.rb.stop();
  });
});

/** A worker's result for `effect`: its artifact written, started and completed. */
function workerResult(
  effect: { workerId: string },
  session: {
    artifacts: {
      write(write: { name: string; workerId: string; content: string }): { id: string };
    };
  },
) {
  const art = session.artifacts.write({
    name: 'poem',
    workerId: effect.workerId,
    content: 'roses',
  });
  return [
    { type: 'worker_started', workerId: effect.workerId, acceptanceMode: 'user_confirmed' },
    { type: 'worker_completed', artifactId: art.id },
  ] as const;
}

describe('announcing an attempt', () => {
  /** The session steps of the effect runner in the journal, with the attempt a result carries. */
  const runnerSteps = (rb: Awaited<ReturnType<typeof boot>>['rb']) =>
    rb
      .recordRun()
      .journal.map(({ event }) => event)
      .filter((event) => String(event.type).startsWith('session.effect_'))
      .map((event) =>
        event.type === 'session.effect_result'
          ? `${event.type} attempt=${event.attempt} apply=${event.apply}`
          : event.type,
      );

  it('counts an attempt that returns within a turn in its result step: one step fewer, effect_started still first', async () => {
    const h = await boot(
      { run_worker: (effect, ctx) => [...workerResult(effect, ctx.session)] },
      { journal: true },
    );
    approveWorker(h.session);
    await settle(10);
    expect(h.session.view()).toMatchObject({ waitingReason: { kind: 'review_artifact' } });
    // Recorded and applied in one step: the save before it stored the result in its entry.
    expect(runnerSteps(h.rb)).toEqual(['session.effect_result attempt=1 apply=true']);
    expect(h.effectEvents().slice(2)).toEqual([
      'effect S:e2',
      'effect_started S:e2',
      'effect_settled S:e2 worker_started',
    ]);
    const started = h.events.find((event) => event.type === 'effect_started');
    expect(started).toMatchObject({ effectType: 'run_worker', attempt: 1 });
    await h.rb.stop();
  });

  it('announces a handler still running a turn later: running and counted in the view and the store, effect_started once', async () => {
    const store = new MemorySnapshotStore();
    let finish: (() => void) | undefined;
    const h = await boot(
      {
        run_worker: (effect, ctx) =>
          new Promise((resolve) => {
            finish = () => resolve([...workerResult(effect, ctx.session)]);
          }),
      },
      { store, journal: true },
    );
    approveWorker(h.session);
    await settle(10);
    expect(h.session.view().pendingEffects).toEqual([
      expect.objectContaining({ status: 'running', attempts: 1 }),
    ]);
    h.clock.advance(1_000);
    await settle(10);
    expect(store.records.get('S'), 'the debounced save stores the counted attempt').toMatch(
      /"status":"running","attempts":1/,
    );
    finish?.();
    await settle(10);
    expect(h.session.view()).toMatchObject({ pendingEffects: [] });
    expect(runnerSteps(h.rb)).toEqual([
      'session.effect_started',
      'session.effect_result attempt=undefined apply=true',
    ]);
    expect(h.effectEvents().filter((line) => line.startsWith('effect_started'))).toEqual([
      'effect_started S:e2',
    ]);
    await h.rb.stop();
  });
});

describe('effects across passivation', () => {
  it('redeliver a pending effect without a handler after every activation', async () => {
    const store = new MemorySnapshotStore();
    const h = await boot({}, { store, idleMs: 1_000 });
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    h.clock.advance(61_000);
    await settle(10);
    expect(h.events.some((event) => event.type === 'session_passivated')).toBe(true);
    const again = h.rb.session('S');
    expect(plainEffectIds(again.view().pendingEffects.map((entry) => entry.id))).toEqual(['S:e1']);
    expect(h.effectEvents()).toEqual(['effect S:e1', 'effect S:e1 redelivered']);
    await h.rb.stop();
  });

  it('keep a session with a running handler live, and wake a passivated one at its retry time', async () => {
    const store = new MemorySnapshotStore();
    let finish: (() => void) | undefined;
    let calls = 0;
    const h = await boot(
      {
        invoke_main_agent: (_effect, ctx) => {
          calls += 1;
          if (ctx.attempt === 1) throw new Error('rate limited');
          if (ctx.attempt === 2)
            return new Promise((resolve) => {
              finish = () => resolve([{ type: 'flow_completed' }]);
            });
          return undefined;
        },
      },
      { store, idleMs: 1_000, effectRetry: { initialDelayMs: 120_000, maxDelayMs: 120_000 } },
    );
    h.session.send({ type: 'user_submitted_input', text: 'go' });
    await settle(10);
    expect(calls).toBe(1);
    // Waiting for its retry, the session may be passivated: its wake-up holds the retry time.
    h.clock.advance(61_000);
    await settle(10);
    expect(h.events.filter((event) => event.type === 'session_passivated')).toHaveLength(1);
    h.clock.advance(60_000);
    await settle(10);
    expect(h.events.filter((event) => event.type === 'session_activated')).toEqual([
      { type: 'session_activated', sessionId: 'S', trigger: 'wake_up' },
    ]);
    expect(calls).toBe(2);
    // Its handler is running: the idle sweep leaves it live.
    h.clock.advance(300_000);
    await settle(10);
    expect(h.events.filter((event) => event.type === 'session_passivated')).toHaveLength(1);
    finish?.();
    await settle(10);
    expect(h.rb.session('S').view()).toMatchObject({ phase: 'done', pendingEffects: [] });
    await h.rb.stop();
  });
});
