// The effect outbox of a session (issue 24 item 1): every effect is numbered and recorded
// as pending in the step that emits it, settled by the event that answers it (the README
// table), cancelled when the session moves past it, or settled by the host.
import { describe, expect, it } from 'vitest';
import type { HostEvent, RuntimeEvent } from '../src/index.js';
import { MACHINE_MIGRATIONS } from '../src/persistence/machine-migrations.js';
import { cancellationBy, outboxAfter } from '../src/session/effect-outbox.js';
import { errorOf } from './support/errors.js';
import { follow, ROUTES, sessionHarness } from './support/sessions.js';

const pendingIds = (h: Awaited<ReturnType<typeof sessionHarness>>) =>
  h.session.view().pendingEffects.map((entry) => `${entry.id} ${entry.effect.type}`);

const settled = (events: readonly HostEvent[]) =>
  events.flatMap((event) =>
    event.type === 'effect_settled'
      ? [`${event.effectId} ${event.by}${event.reason ? ` (${event.reason})` : ''}`]
      : [],
  );

describe('the effect outbox', () => {
  it('numbers effects <sessionId>:e<n> and records each as pending in the step that emits it', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.intake'] as RuntimeEvent[]);
    const result = h.session.send({ type: 'user_confirmed_intake' });
    expect(result.effects).toEqual([
      { id: 'S:e1', type: 'invoke_main_agent', reason: 'user_confirmed_intake' },
    ]);
    expect(h.session.view().pendingEffects).toEqual([
      {
        id: 'S:e1',
        effect: { id: 'S:e1', type: 'invoke_main_agent', reason: 'user_confirmed_intake' },
        status: 'pending',
        attempts: 0,
      },
    ]);
    // The same step's persisted snapshot holds it: it is saved with the transition.
    expect(h.persisted()).toContain('"pendingEffects":[{"id":"S:e1"');
  });

  it('settles each effect by the event that answers it (the README table)', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.intake'] as RuntimeEvent[]);
    h.session.send({ type: 'user_confirmed_intake' });
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'writer' },
    });
    expect(pendingIds(h)).toEqual(['S:e2 run_worker']);
    h.session.send({ type: 'worker_started', workerId: 'other', acceptanceMode: 'user_confirmed' });
    expect(pendingIds(h), 'another worker does not answer it').toEqual(['S:e2 run_worker']);
    h.session.send({
      type: 'worker_started',
      workerId: 'writer',
      acceptanceMode: 'user_confirmed',
    });
    expect(pendingIds(h)).toEqual([]);
    const art = h.session.artifacts.write({ name: 'story', workerId: 'writer', content: 'x' });
    h.session.send({ type: 'worker_completed', artifactId: art.id });
    h.session.send({ type: 'user_accepted_artifact', artifactId: art.id });
    expect(pendingIds(h)).toEqual(['S:e3 invoke_main_agent']);
    h.session.send({ type: 'flow_completed' });
    expect(pendingIds(h)).toEqual([]);
    expect(settled(h.events)).toEqual([
      'S:e1 main_agent_decision_created',
      'S:e2 worker_started',
      'S:e3 flow_completed',
    ]);
  });

  it('settles a programmatic review by its outcome, and a resumed worker by its questions', async () => {
    const h = await sessionHarness({ acceptanceMode: 'programmatic_review' });
    follow(h, ROUTES.running as RuntimeEvent[]);
    h.session.send({
      type: 'worker_started',
      workerId: 'writer',
      acceptanceMode: 'programmatic_review',
    });
    const art = h.session.artifacts.write({ name: 'story', workerId: 'writer', content: 'x' });
    const review = h.session.send({ type: 'worker_completed', artifactId: art.id }).effects[0];
    expect(review?.type).toBe('run_programmatic_review');
    h.session.send({ type: 'programmatic_review_failed', reason: 'too short' });
    expect(settled(h.events)).toContain(`${review?.id} programmatic_review_failed`);
    h.session.send({ type: 'user_submitted_input', text: 'longer' });
    h.session.send({
      type: 'worker_needs_input',
      workerId: 'writer',
      questions: ['how long?'],
    });
    const resume = h.session.send({ type: 'user_submitted_input', text: 'long' }).effects[0];
    expect(resume?.type).toBe('resume_worker');
    h.session.send({ type: 'worker_needs_input', workerId: 'writer', questions: ['sure?'] });
    expect(settled(h.events)).toContain(`${resume?.id} worker_needs_input`);
  });

  it('cancels, with a reason, what the session moved past: a superseded worker, a failed session', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES.running as RuntimeEvent[]);
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'writer' },
    });
    const [worker] = h.session.view().pendingEffects;
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd2', kind: 'ask_user', message: 'which?' },
    });
    // The message is still pending (nothing answers it); the superseded worker is cancelled.
    expect(pendingIds(h)).toEqual([expect.stringMatching(/emit_message$/)]);
    expect(settled(h.events)).toContain(`${worker?.id} cancelled (superseded by decision d2)`);
    h.session.send({ type: 'user_submitted_input', text: 'this' });
    h.session.send({ type: 'runtime_failed', reason: 'model down' });
    expect(settled(h.events).at(-1)).toMatch(/cancelled \(the session failed: model down\)$/);
    expect(pendingIds(h)).toEqual([expect.stringMatching(/emit_message$/)]);
  });

  it('cancels on a rejected step or a finish, never an emit_message or a failed effect (the rule)', () => {
    const worker = { id: 'S:e1', type: 'run_worker', workerId: 'w', decisionId: 'd1' } as const;
    const message = { id: 'S:e2', type: 'emit_message', message: 'hi' } as const;
    for (const event of [
      { type: 'user_rejected_next_step', decisionId: 'd1' },
      { type: 'user_rejected_artifact', artifactId: 'art-1' },
      { type: 'user_requested_revision', instruction: 'again' },
    ] as const) {
      expect(cancellationBy(event, worker), event.type).toBe(
        `the user moved past it (${event.type})`,
      );
      expect(cancellationBy(event, message), event.type).toBeUndefined();
    }
    const finish = {
      type: 'main_agent_decision_created',
      decision: { id: 'd9', kind: 'finish' },
    } as const;
    expect(cancellationBy(finish, worker)).toBe('the flow finished');
    const entries = [
      { id: 'S:e1', effect: worker, status: 'failed', attempts: 3 },
      { id: 'S:e3', effect: { ...worker, id: 'S:e3' }, status: 'running', attempts: 1 },
    ] as const;
    const change = outboxAfter(entries, finish);
    expect(change.remaining.map((entry) => entry.id)).toEqual(['S:e1']);
    expect(change.cancelled.map(({ entry, reason }) => `${entry.id} ${reason}`)).toEqual([
      'S:e3 the flow finished',
    ]);
  });
});

describe('session.settleEffect', () => {
  it('settles by hand: with events applied in one step, with an error, or just settled', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES.running as RuntimeEvent[]);
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'writer' },
    });
    const [run] = h.session.view().pendingEffects;
    const art = h.session.artifacts.write({ name: 'story', workerId: 'writer', content: 'x' });
    const result = h.session.settleEffect(run?.id as string, {
      events: [
        { type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' },
        { type: 'worker_completed', artifactId: art.id },
      ],
    });
    expect(result.phase).toBe('waiting_user');
    expect(h.where()).toBe('waiting_user.review_artifact');
    expect(pendingIds(h)).toEqual([]);
    h.session.send({ type: 'user_accepted_artifact', artifactId: art.id });
    const [agent] = h.session.view().pendingEffects;
    h.session.settleEffect(agent?.id as string, { error: 'no model' });
    expect(h.session.view()).toMatchObject({
      phase: 'error',
      errorReason: `effect ${agent?.id} (invoke_main_agent) failed after 0 attempts: no model`,
      pendingEffects: [{ id: agent?.id, status: 'failed', lastError: 'no model' }],
    });
    h.session.settleEffect(agent?.id as string);
    expect(pendingIds(h)).toEqual([]);
  });

  it('refuses an id that is not pending (an Object.prototype key too) or a bad settlement, and changes nothing', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES.running as RuntimeEvent[]);
    const [agent] = h.session.view().pendingEffects;
    const id = agent?.id as string;
    const before = h.persisted();
    for (const bad of ['S:e99', 'constructor', '__proto__', 42, undefined]) {
      const error = errorOf(() => h.session.settleEffect(bad as string));
      expect(error.code, String(bad)).toBe('unknown_effect');
      expect(error.message).toContain(JSON.stringify(bad) ?? 'undefined');
    }
    expect(
      errorOf(() => h.session.settleEffect(id, { events: [{ type: 'nope' }] } as never)).code,
    ).toBe('invalid_event');
    expect(errorOf(() => h.session.settleEffect(id, { error: '' })).code).toBe('invalid_argument');
    expect(errorOf(() => h.session.settleEffect(id, { eror: 'x' } as never)).code).toBe(
      'invalid_argument',
    );
    expect(
      errorOf(() =>
        h.session.settleEffect(id, { error: 'x', events: [{ type: 'flow_completed' }] }),
      ).code,
    ).toBe('invalid_argument');
    expect(h.persisted()).toBe(before);
  });
});

describe('session machine 2 → 3', () => {
  it('restores a version-2 session with an empty outbox', () => {
    const migrate = MACHINE_MIGRATIONS.session[2];
    const old = { status: 'active', value: 'running', context: { sessionId: 'S', history: [] } };
    expect(migrate?.(old)).toEqual({
      ...old,
      context: { sessionId: 'S', history: [], effectCount: 0, pendingEffects: [] },
    });
    expect(migrate?.({ children: {} }), 'a record without a context').toEqual({ children: {} });
  });
});
