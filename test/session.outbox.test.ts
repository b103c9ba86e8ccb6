// The effect outbox of a session (issue 24 item 1): every effect is numbered and recorded
// as pending in the step that emits it, settled by the event that answers it (the README
// table), cancelled when the session moves past it, or settled by the host.
import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  type HostEvent,
  MemorySnapshotStore,
  type RuntimeEvent,
} from '../src/index.js';
import { MACHINE_MIGRATIONS } from '../src/persistence/machine-migrations.js';
import { cancellationBy, outboxAfter } from '../src/session/effect-outbox.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { plainEffectIds } from './support/effect-ids.js';
import { errorOf } from './support/errors.js';
import { follow, ROUTES, sessionHarness } from './support/sessions.js';

const pendingIds = (h: Awaited<ReturnType<typeof sessionHarness>>) =>
  plainEffectIds(
    h.session.view().pendingEffects.map((entry) => `${entry.id} ${entry.effect.type}`),
  );

const settled = (events: readonly HostEvent[]) =>
  events.flatMap((event) =>
    event.type === 'effect_settled'
      ? [`${event.effectId} ${event.by}${event.reason ? ` (${event.reason})` : ''}`]
      : [],
  );

describe('the effect outbox', () => {
  it('numbers effects <sessionId>:<nonce>:e<n> and records each as pending in the step that emits it', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.intake'] as RuntimeEvent[]);
    const result = h.session.send({ type: 'user_confirmed_intake' });
    const [effect] = result.effects;
    const nonce = /^S:([0-9a-z]{12}):e1$/.exec(effect?.id ?? '')?.[1];
    expect(nonce, `the id ${effect?.id} carries the incarnation's nonce`).toBeDefined();
    const id = `S:${nonce}:e1`;
    expect(result.effects).toEqual([
      { id, type: 'invoke_main_agent', reason: 'user_confirmed_intake' },
    ]);
    expect(h.session.view().pendingEffects).toEqual([
      {
        id,
        effect: { id, type: 'invoke_main_agent', reason: 'user_confirmed_intake' },
        status: 'pending',
        attempts: 0,
      },
    ]);
    // The same step's persisted snapshot holds it, and the nonce: saved with the transition.
    expect(h.persisted()).toContain(`"effectNonce":"${nonce}"`);
    expect(h.persisted()).toContain(`"pendingEffects":[{"id":"${id}"`);
  });

  it('numbers the effects of a session id closed and opened again apart: no id repeats', async () => {
    const h = await sessionHarness();
    const firstEffects = () => {
      const session = h.rb.session('S');
      follow({ ...h, session }, ROUTES['waiting_user.intake'] as RuntimeEvent[]);
      const confirmed = session.send({ type: 'user_confirmed_intake' }).effects;
      const decided = session.send({
        type: 'main_agent_decision_created',
        decision: { id: 'd1', kind: 'run_worker', workerId: 'writer' },
      }).effects;
      return [...confirmed, ...decided].map((effect) => effect.id);
    };
    const first = firstEffects();
    h.session.close();
    await h.rb.openSession({ id: 'S' });
    const second = firstEffects();
    expect(plainEffectIds(first), 'each incarnation numbers from e1').toEqual(['S:e1', 'S:e2']);
    expect(plainEffectIds(second)).toEqual(['S:e1', 'S:e2']);
    for (const id of second) expect(first).not.toContain(id);
    expect(
      h.rb
        .session('S')
        .view()
        .pendingEffects.map((entry) => entry.id),
    ).toEqual([second[1]]);
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
    expect(plainEffectIds(settled(h.events))).toEqual([
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

describe('settleEffect by hand passes the checks `send` makes', () => {
  it('refuses events the session would refuse (decision_mismatch, unknown_artifact) and changes nothing', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.intake'] as RuntimeEvent[]);
    const [agent] = h.session.send({ type: 'user_confirmed_intake' }).effects;
    const id = agent?.id as string;
    const before = h.persisted();
    const decided = {
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'writer', requiresApproval: true },
    } as const;
    const mismatch = errorOf(() =>
      h.session.settleEffect(id, {
        events: [decided, { type: 'user_approved_next_step', decisionId: 'd2' }],
      }),
    );
    expect(mismatch.code).toBe('decision_mismatch');
    expect(mismatch.message).toBe(
      `effect ${id}: event 2 of 2 of its result is refused: user_approved_next_step: decision "d2" is not the one awaiting approval (d1)`,
    );
    const unknown = errorOf(() =>
      h.session.settleEffect(id, {
        events: [
          { ...decided, decision: { ...decided.decision, requiresApproval: false } },
          { type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' },
          { type: 'worker_completed', artifactId: 'art-9' },
        ],
      }),
    );
    expect(unknown.code).toBe('unknown_artifact');
    expect(unknown.message).toContain('event 3 of 3 of its result is refused');
    expect(h.persisted()).toBe(before);
    // The same events, in an order the session takes, are applied.
    h.session.settleEffect(id, {
      events: [decided, { type: 'user_approved_next_step', decisionId: 'd1' }],
    });
    expect(h.where()).toBe('running');
    expect(h.session.view().currentWorkerId).toBeNull();
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

describe('session machine 3 → 4: effect ids carry the incarnation nonce', () => {
  it('the migration gives a stored session a null nonce and keeps its outbox as it is', () => {
    const migrate = MACHINE_MIGRATIONS.session[3];
    const entry = { id: 'S:e2', effect: { id: 'S:e2', type: 'run_worker' }, status: 'pending' };
    const old = {
      value: 'running',
      context: { sessionId: 'S', effectCount: 2, pendingEffects: [entry] },
    };
    expect(migrate?.(old)).toEqual({ ...old, context: { ...old.context, effectNonce: null } });
    expect(migrate?.({ children: {} }), 'a record without a context').toEqual({ children: {} });
  });

  it('a session stored by version 3 restores: its pending effect settles under its old id, the next ones go on from it', async () => {
    const clock = new SimulatedClock(1_000);
    const store = new MemorySnapshotStore();
    const writer = createRolebox({ clock, store, ids: seededIdSource(9) });
    await writer.start();
    const session = await writer.openSession({ id: 'S' });
    follow({ session } as never, ROUTES.running as RuntimeEvent[]);
    session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'writer' },
    });
    await writer.stop();
    // The record as version 3 wrote it: no nonce, ids `<sessionId>:e<n>`.
    const record = JSON.parse(store.records.get('S') as string);
    const { effectNonce, ...context } = record.snapshot.context;
    record.machineVersions.session = 3;
    record.snapshot.context = plainEffectIds(context);
    // Version 3 wrote no checksum.
    delete record.checksum;
    store.records.set('S', JSON.stringify(record));
    expect(record.snapshot.context.pendingEffects.map((entry: { id: string }) => entry.id)).toEqual(
      ['S:e2'],
    );

    const keys: string[] = [];
    const rb = createRolebox({
      clock,
      store,
      ids: seededIdSource(9),
      effects: {
        run_worker: (effect, ctx) => {
          keys.push(ctx.idempotencyKey);
          return [
            { type: 'worker_started', workerId: effect.workerId, acceptanceMode: 'user_confirmed' },
          ];
        },
      },
    });
    await rb.start();
    const restored = await rb.openSession({ id: 'S' });
    await settle(10);
    expect(keys, 'the stored effect ran under its stored id').toEqual(['S:e2']);
    expect(restored.view()).toMatchObject({ currentWorkerId: 'writer', pendingEffects: [] });
    const art = restored.artifacts.write({ name: 'story', workerId: 'writer', content: 'x' });
    const next = restored.send({ type: 'worker_completed', artifactId: art.id });
    expect(next.phase).toBe('waiting_user');
    const accepted = restored.send({ type: 'user_accepted_artifact', artifactId: art.id });
    expect(
      accepted.effects.map((effect) => effect.id),
      'numbered on from e2',
    ).toEqual(['S:e3']);
    await rb.stop();
    expect(JSON.parse(store.records.get('S') as string).snapshot.context.effectNonce).toBeNull();
  });
});
