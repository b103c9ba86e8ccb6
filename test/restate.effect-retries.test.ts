// Effect retries and the effect host events on Restate (issue 24), through a real
// restate-server: a handler of the effect service that throws is retried after the
// endpoint's `effectRetry` backoff (a durable ctx.sleep), each attempt counted in the
// session object's outbox; after the last one (or a TerminalError) the effect is `failed`
// and the session gets `runtime_failed`. The event sink sees `effect_started`,
// `effect_failed` and `effect_settled` in the order an in-process rolebox emits them for the
// same handler, on the simulated clock.
import * as restate from '@restatedev/restate-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRolebox,
  type EffectRetryOptions,
  type HostEvent,
  type RuntimeEvent,
} from '../src/index.js';
import {
  type HostEventBatch,
  roleboxEffectService,
  serveRoleboxOnRestate,
  type WireHostEvent,
} from '../src/restate/index.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { APPROVE_POET, UNTIL_POET_APPROVAL } from './support/poem-flow.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import {
  HandlerGate,
  restateUnavailable,
  type ServedRestate,
  startServedRestate,
  sunkEvents,
} from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate effect retry tests: ${unavailable}`);

const RETRY: EffectRetryOptions = { maxAttempts: 3, initialDelayMs: 40, maxDelayMs: 60 };

/**
 * What the `run_worker` handler does at attempt `attempt` of a session's worker: the same
 * code in process and on Restate. `flaky` fails twice, then answers; `broken` always
 * fails; `refused` fails for good at once (a TerminalError, Restate only).
 */
function workerAttempt(sessionId: string, attempt: number, workerId: string): RuntimeEvent[] {
  if (sessionId.startsWith('flaky') && attempt <= 2) throw new Error(`flaky #${attempt}`);
  if (sessionId.startsWith('broken')) throw new Error(`down #${attempt}`);
  if (sessionId.startsWith('refused')) throw new restate.TerminalError('no such worker');
  return [
    { type: 'worker_started', workerId, acceptanceMode: 'user_confirmed' },
    { type: 'worker_needs_input', workerId, questions: ['which rhyme?'] },
  ];
}

/**
 * The effect events of a session, in order, with what each says (times and effect ids left
 * out: each flow has one effect of each type).
 */
function effectSequence(events: readonly (HostEvent | WireHostEvent)[]): string[] {
  return events.flatMap((event) => {
    switch (event.type) {
      case 'effect':
        return [`effect ${event.effect.type}`];
      case 'effect_started':
        return [`started ${event.effectType} #${event.attempt}`];
      case 'effect_failed':
        return [
          `failed ${event.effectType} #${event.attempt} ${event.error}${event.nextAttemptAt === undefined ? '' : ' (retried)'}`,
        ];
      case 'effect_settled':
        return [`settled ${event.effectType} by ${event.by}`];
      default:
        return [];
    }
  });
}

/** What a session answers, embedded or on Restate (each call awaited). */
interface Sendable {
  send(event: RuntimeEvent): unknown;
}

/** Opens the flow up to the approval of d1 (run_worker poet), and approves it. */
async function approveWorker(session: Sendable): Promise<void> {
  for (const event of [...UNTIL_POET_APPROVAL, APPROVE_POET]) await session.send(event);
}

/** The same flow in process, on the simulated clock: its effect sequence and final view. */
async function inProcess(sessionId: string) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    clock,
    ids: seededIdSource(1),
    effectRetry: RETRY,
    effects: {
      run_worker: (effect, ctx) => workerAttempt(sessionId, ctx.attempt, effect.workerId),
    },
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const session = await rb.openSession({ id: sessionId });
  await approveWorker(session);
  for (let round = 0; round < 10; round++) {
    await settle(10);
    clock.advance(100);
  }
  const view = session.view();
  await rb.stop();
  return { sequence: effectSequence(events), view };
}

describe.skipIf(unavailable !== undefined)('effect retries on Restate', () => {
  let rig: ServedRestate;
  /** The attempts the handler was called with, by session id. */
  const calls = new Map<string, number[]>();
  const batches: HostEventBatch[] = [];
  const third = new HandlerGate();
  const moved = new HandlerGate();

  const effects = roleboxEffectService('retry-effects', {
    run_worker: async (effect, _ctx, { attempt, sessionId }) => {
      calls.set(sessionId, [...(calls.get(sessionId) ?? []), attempt]);
      if (sessionId === 'flaky' && attempt === 3) {
        // The third attempt waits here, so the test sees it running.
        await third.reach();
      }
      if (sessionId === 'moved') {
        // Its first attempt waits here while the host answers the effect, then throws.
        await moved.reach();
        throw new Error('too late');
      }
      return workerAttempt(sessionId, attempt, effect.workerId);
    },
  });
  const sink = restate.service({
    name: 'retry-sink',
    handlers: {
      hostEvents: async (_ctx: restate.Context, batch: HostEventBatch) => {
        batches.push(batch);
      },
    },
  });
  const served = serveRoleboxOnRestate({
    effects: { service: 'retry-effects' },
    eventSink: { service: 'retry-sink' },
    effectRetry: RETRY,
    services: [effects, sink],
  });

  /** The host events the sink received for a session, one per batch `seq`, in order. */
  const sunk = (sessionId: string) => sunkEvents(batches, sessionId);

  beforeAll(async () => {
    rig = await startServedRestate(served);
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    third.release();
    moved.release();
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    'retries a handler that failed twice, counting its attempts in the object, and applies the third attempt once',
    async () => {
      third.arm();
      const session = await rig.client.openSession({ id: 'flaky' });
      await approveWorker(session);
      await third.reached;
      // While the third attempt runs, the object's outbox says so, with the last error.
      expect((await session.view()).pendingEffects).toEqual([
        expect.objectContaining({
          effect: expect.objectContaining({ type: 'run_worker' }),
          status: 'running',
          attempts: 3,
          lastError: 'flaky #2',
        }),
      ]);
      third.release();
      await expect
        .poll(async () => (await session.view()).waitingReason?.kind, { timeout: 60_000 })
        .toBe('worker_questions');
      expect((await session.view()).pendingEffects).toEqual([]);
      expect(calls.get('flaky')).toEqual([1, 2, 3]);
      const expected = [
        'effect invoke_main_agent',
        'settled invoke_main_agent by main_agent_decision_created',
        'effect run_worker',
        'started run_worker #1',
        'failed run_worker #1 flaky #1 (retried)',
        'started run_worker #2',
        'failed run_worker #2 flaky #2 (retried)',
        'started run_worker #3',
        'settled run_worker by worker_started',
      ];
      await expect.poll(() => effectSequence(sunk('flaky')), { timeout: 30_000 }).toEqual(expected);
      const embedded = await inProcess('flaky');
      expect(embedded.sequence, 'the same sequence in process').toEqual(expected);
      expect(embedded.view.waitingReason?.kind).toBe('worker_questions');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'fails the effect and the session after the last attempt, and never calls the handler again',
    async () => {
      const session = await rig.client.openSession({ id: 'broken' });
      await approveWorker(session);
      await expect
        .poll(async () => (await session.view()).phase, { timeout: 60_000 })
        .toBe('error');
      const view = await session.view();
      const failed = view.pendingEffects[0];
      expect(view).toMatchObject({
        errorReason: `effect ${failed?.id} (run_worker) failed after 3 attempts: down #3`,
        pendingEffects: [{ status: 'failed', attempts: 3, lastError: 'down #3' }],
      });
      expect(failed?.effect.type).toBe('run_worker');
      expect(failed?.nextAttemptAt).toBeUndefined();
      const expected = [
        'effect invoke_main_agent',
        'settled invoke_main_agent by main_agent_decision_created',
        'effect run_worker',
        'started run_worker #1',
        'failed run_worker #1 down #1 (retried)',
        'started run_worker #2',
        'failed run_worker #2 down #2 (retried)',
        'started run_worker #3',
        'failed run_worker #3 down #3',
      ];
      await expect
        .poll(() => effectSequence(sunk('broken')), { timeout: 30_000 })
        .toEqual(expected);
      const embedded = await inProcess('broken');
      expect(embedded.sequence, 'the same sequence in process').toEqual(expected);
      expect(embedded.view).toMatchObject({
        phase: 'error',
        errorReason: `effect ${embedded.view.pendingEffects[0]?.id} (run_worker) failed after 3 attempts: down #3`,
      });
      // Longer than every backoff: no fourth attempt comes.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(calls.get('broken')).toEqual([1, 2, 3]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'fails the effect at once for a TerminalError, whatever attempts are left',
    async () => {
      const session = await rig.client.openSession({ id: 'refused' });
      await approveWorker(session);
      await expect
        .poll(async () => (await session.view()).phase, { timeout: 60_000 })
        .toBe('error');
      const view = await session.view();
      expect(view).toMatchObject({
        errorReason: `effect ${view.pendingEffects[0]?.id} (run_worker) failed after 1 attempt: no such worker`,
        pendingEffects: [{ status: 'failed', attempts: 1, lastError: 'no such worker' }],
      });
      await expect
        .poll(() => effectSequence(sunk('refused')).slice(3), { timeout: 30_000 })
        .toEqual(['started run_worker #1', 'failed run_worker #1 no such worker']);
      expect(calls.get('refused')).toEqual([1]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'ignores the failure of an attempt whose effect the session settled meanwhile, and attempts it no more',
    async () => {
      moved.arm();
      const session = await rig.client.openSession({ id: 'moved' });
      await approveWorker(session);
      await moved.reached;
      // The host answers the effect while its handler still runs.
      await session.send({
        type: 'worker_started',
        workerId: 'poet',
        acceptanceMode: 'user_confirmed',
      });
      expect((await session.view()).pendingEffects).toEqual([]);
      moved.release();
      await expect.poll(() => sunk('moved').length, { timeout: 30_000 }).toBeGreaterThan(0);
      // Longer than every backoff: the failed attempt changed nothing, and none followed.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(calls.get('moved')).toEqual([1]);
      expect(await session.view()).toMatchObject({ phase: 'running', pendingEffects: [] });
      expect(effectSequence(sunk('moved')).slice(2)).toEqual([
        'effect run_worker',
        'started run_worker #1',
        'settled run_worker by worker_started',
      ]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
