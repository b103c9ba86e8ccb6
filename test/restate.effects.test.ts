// Session effects on Restate (issue 24 item 5), through a real restate-server: each pending
// effect runs in its own durable invocation of an effect service, keyed by the effect id,
// outside the session's exclusive handler (the session answers while a handler runs); the
// handler's events come back to the session object and are applied once; an endpoint that
// goes away while a handler runs resumes it, its journaled model call not made again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleboxEffectService, serveRoleboxOnRestate } from '../src/restate/index.js';
import { plainEffectIds } from './support/effect-ids.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import {
  HandlerGate,
  restateUnavailable,
  type ServedRestate,
  startServedRestate,
} from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate effect tests: ${unavailable}`);

describe.skipIf(unavailable !== undefined)('session effects on Restate', () => {
  let rig: ServedRestate;
  /** Model calls made (inside ctx.run), by effect id. */
  const modelCalls = new Map<string, number>();
  /** Invocation attempts of the effect service, by effect id. */
  const attempts = new Map<string, number>();
  const workerGate = new HandlerGate();

  const effects = roleboxEffectService('test-effects', {
    invoke_main_agent: async (effect, ctx) => {
      attempts.set(effect.id, (attempts.get(effect.id) ?? 0) + 1);
      // Session R's main agent answers with an approval of a decision it did not make.
      if (effect.id.startsWith('R:'))
        return [
          {
            type: 'main_agent_decision_created',
            decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
          },
          { type: 'user_approved_next_step', decisionId: 'd2' },
        ];
      const decided = await ctx.run('model', () => {
        modelCalls.set(effect.id, (modelCalls.get(effect.id) ?? 0) + 1);
        return 'run_worker poet';
      });
      expect(decided).toBe('run_worker poet');
      return [
        {
          type: 'main_agent_decision_created',
          decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
        },
      ];
    },
    run_worker: async (effect, ctx) => {
      attempts.set(effect.id, (attempts.get(effect.id) ?? 0) + 1);
      const text = await ctx.run('model', () => {
        modelCalls.set(effect.id, (modelCalls.get(effect.id) ?? 0) + 1);
        return 'roses are red';
      });
      // The first attempt waits here, its model call journaled, until the test lets it go.
      await workerGate.reach();
      return [
        { type: 'worker_started', workerId: effect.workerId, acceptanceMode: 'user_confirmed' },
        { type: 'worker_needs_input', workerId: effect.workerId, questions: [text] },
      ];
    },
  });
  const served = serveRoleboxOnRestate({
    effects: { service: 'test-effects' },
    services: [effects],
  });

  beforeAll(async () => {
    rig = await startServedRestate(served);
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    workerGate.release();
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    'runs each effect in its own invocation, applies its events once, and resumes one whose endpoint went away',
    async () => {
      workerGate.arm();
      const session = await rig.client.openSession({ id: 'S' });
      await session.send({
        type: 'session_started',
        availableSkills: [{ name: 'write' }],
        initialSkill: 'write',
      });
      const submitted = await session.send({ type: 'user_submitted_input', text: 'a poem' });
      expect(plainEffectIds(submitted.effects)).toEqual([
        expect.objectContaining({ type: 'invoke_main_agent', id: 'S:e1' }),
      ]);
      // The main agent's decision comes back through effectReturned.
      await expect
        .poll(async () => (await session.view()).waitingReason?.kind, { timeout: 30_000 })
        .toBe('approve_step');
      expect((await session.view()).pendingEffects).toEqual([]);

      await session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
      await workerGate.reached;
      // The handler runs outside the session's exclusive handler: the session answers.
      const during = await session.view();
      expect(plainEffectIds(during.pendingEffects)).toEqual([
        expect.objectContaining({
          id: 'S:e2',
          effect: expect.objectContaining({ type: 'run_worker' }),
        }),
      ]);
      await session.message('while the worker writes');

      // The endpoint goes away while the handler waits; it comes back, Restate retries the
      // invocation, the journaled model call answers from the journal.
      await rig.restartEndpoint(() => workerGate.release());
      await expect
        .poll(async () => (await session.view()).waitingReason?.kind, { timeout: 60_000 })
        .toBe('worker_questions');
      const after = await session.view();
      expect(after.pendingEffects).toEqual([]);
      const attemptsById = plainEffectIds(Object.fromEntries(attempts));
      expect(attemptsById['S:e2']).toBeGreaterThanOrEqual(2);
      expect(plainEffectIds(Object.fromEntries(modelCalls))).toEqual({ 'S:e1': 1, 'S:e2': 1 });
      expect(attemptsById['S:e1']).toBe(1);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'fails an effect whose reported events the session refuses, with the code; a reopened id numbers its effects apart',
    async () => {
      const started = {
        type: 'session_started',
        availableSkills: [{ name: 'write' }],
        initialSkill: 'write',
      } as const;
      const first = await rig.client.openSession({ id: 'R' });
      await first.send(started);
      const [effect] = (await first.send({ type: 'user_submitted_input', text: 'a poem' })).effects;
      await expect.poll(async () => (await first.view()).phase, { timeout: 30_000 }).toBe('error');
      const failed = await first.view();
      expect(failed.errorReason).toContain(`effect ${effect?.id} (invoke_main_agent) failed`);
      expect(failed.errorReason).toContain(
        'decision_mismatch: effect ' +
          `${effect?.id}: event 2 of 2 of its result is refused: user_approved_next_step: decision "d2"`,
      );
      // Had its decision been applied, it would have settled the effect: it failed instead.
      expect(failed.pendingEffects).toEqual([expect.objectContaining({ status: 'failed' })]);
      await first.close();
      const again = await rig.client.openSession({ id: 'R' });
      await again.send(started);
      const [next] = (await again.send({ type: 'user_submitted_input', text: 'a poem' })).effects;
      expect(plainEffectIds(next?.id)).toBe('R:e1');
      expect(next?.id, 'the same number, another incarnation').not.toBe(effect?.id);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
