import { describe, expect, it } from 'vitest';
import type { RuntimeEvent } from '../src/index.js';
import { plainEffectIds } from './support/effect-ids.js';
import { errorOf } from './support/errors.js';
import { follow, ROUTES, sessionHarness, withId } from './support/sessions.js';

const start = ROUTES['waiting_user.input'] as RuntimeEvent[];
const toRunning = ROUTES.running as RuntimeEvent[];

describe('SPEC §4.2, row by row', () => {
  it('session_started with an initial skill and an intake prompt → waiting_user.intake', async () => {
    const h = await sessionHarness();
    const result = h.session.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
      intakePrompt: 'Topic?',
    });
    expect(result).toEqual({
      phase: 'waiting_user',
      waitingReason: { kind: 'intake', prompt: 'Topic?' },
      effects: [],
    });
  });

  it('session_started with an initial skill only → waiting_user.input', async () => {
    const h = await sessionHarness();
    expect(
      h.session.send({ type: 'session_started', availableSkills: [], initialSkill: 'write' })
        .waitingReason,
    ).toEqual({ kind: 'input' });
  });

  it('session_started without a skill → waiting_user.skill_selection with the skills', async () => {
    const h = await sessionHarness();
    const skills = [{ name: 'write', description: 'Write a draft' }, { name: 'review' }];
    expect(
      h.session.send({ type: 'session_started', availableSkills: skills }).waitingReason,
    ).toEqual({ kind: 'skill_selection', availableSkills: skills });
  });

  it('skill_selected → intake when an intake prompt was given, else input', async () => {
    const withIntake = await sessionHarness();
    withIntake.session.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      intakePrompt: 'Topic?',
    });
    expect(
      withIntake.session.send({ type: 'skill_selected', skill: 'write' }).waitingReason,
    ).toEqual({ kind: 'intake', prompt: 'Topic?' });
    const withoutIntake = await sessionHarness();
    follow(withoutIntake, ROUTES['waiting_user.skill_selection'] as RuntimeEvent[]);
    expect(
      withoutIntake.session.send({ type: 'skill_selected', skill: 'review' }).waitingReason,
    ).toEqual({ kind: 'input' });
    expect(
      errorOf(() => withIntake.session.send({ type: 'skill_selected', skill: 'write' })).code,
    ).toBe('event_not_allowed');
  });

  it('skill_selected refuses a skill that is not offered', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.skill_selection'] as RuntimeEvent[]);
    const error = errorOf(() => h.session.send({ type: 'skill_selected', skill: 'dance' }));
    expect(error.code).toBe('invalid_event');
    expect(error.message).toContain('"dance"');
  });

  it.each(['waiting_user.intake', 'waiting_user.input', 'waiting_user.revision'])(
    'user_submitted_input in %s → running + invoke_main_agent',
    async (state) => {
      const h = await sessionHarness();
      follow(h, ROUTES[state] as RuntimeEvent[]);
      const result = h.session.send({ type: 'user_submitted_input', text: 'go on' });
      expect(result).toEqual({
        phase: 'running',
        waitingReason: null,
        effects: [withId({ type: 'invoke_main_agent', reason: 'user_submitted_input' })],
      });
    },
  );

  it('user_submitted_input with a resume context (worker questions) → running + resume_worker', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.worker_questions'] as RuntimeEvent[]);
    expect(h.session.view().waitingReason).toEqual({
      kind: 'worker_questions',
      workerId: 'writer',
      questions: ['Which genre?'],
    });
    const result = h.session.send({ type: 'user_submitted_input', text: 'noir' });
    expect(result).toEqual({
      phase: 'running',
      waitingReason: null,
      effects: [withId({ type: 'resume_worker', workerId: 'writer', answer: 'noir' })],
    });
    expect(h.session.view().currentWorkerId).toBe('writer');
  });

  it('user_confirmed_intake → running + invoke_main_agent', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.intake'] as RuntimeEvent[]);
    expect(h.session.send({ type: 'user_confirmed_intake' })).toEqual({
      phase: 'running',
      waitingReason: null,
      effects: [withId({ type: 'invoke_main_agent', reason: 'user_confirmed_intake' })],
    });
  });

  describe.each(['running', 'waiting_user.input'])('main_agent_decision_created in %s', (state) => {
    it('ask_user → waiting_user.input with the message and questions, and emits the message', async () => {
      const h = await sessionHarness();
      follow(h, ROUTES[state] as RuntimeEvent[]);
      const result = h.session.send({
        type: 'main_agent_decision_created',
        decision: {
          id: 'd1',
          kind: 'ask_user',
          message: 'Which tone?',
          questions: ['formal?', 'playful?'],
        },
      });
      expect(result).toEqual({
        phase: 'waiting_user',
        waitingReason: {
          kind: 'input',
          message: 'Which tone?',
          questions: ['formal?', 'playful?'],
        },
        effects: [withId({ type: 'emit_message', message: 'Which tone?' })],
      });
    });

    it('review_blackboard → waiting_user.input', async () => {
      const h = await sessionHarness();
      follow(h, ROUTES[state] as RuntimeEvent[]);
      expect(
        h.session.send({
          type: 'main_agent_decision_created',
          decision: { id: 'd1', kind: 'review_blackboard' },
        }).waitingReason,
      ).toEqual({ kind: 'input' });
    });

    it('finish → done', async () => {
      const h = await sessionHarness();
      follow(h, ROUTES[state] as RuntimeEvent[]);
      expect(
        h.session.send({
          type: 'main_agent_decision_created',
          decision: { id: 'd1', kind: 'finish' },
        }).phase,
      ).toBe('done');
    });

    it.each(['run_worker', 'create_temp_worker'] as const)(
      '%s with requiresApproval → waiting_user.approve_step',
      async (kind) => {
        const h = await sessionHarness();
        follow(h, ROUTES[state] as RuntimeEvent[]);
        const result = h.session.send({
          type: 'main_agent_decision_created',
          decision: { id: 'd7', kind, workerId: 'w', requiresApproval: true },
        });
        expect(result).toEqual({
          phase: 'waiting_user',
          waitingReason: { kind: 'approve_step', decisionId: 'd7' },
          effects: [],
        });
      },
    );

    it.each(['run_worker', 'create_temp_worker'] as const)(
      '%s without approval → running + run_worker',
      async (kind) => {
        const h = await sessionHarness();
        follow(h, ROUTES[state] as RuntimeEvent[]);
        const result = h.session.send({
          type: 'main_agent_decision_created',
          decision: { id: 'd7', kind, workerId: 'w', instruction: 'draft it' },
        });
        expect(result).toEqual({
          phase: 'running',
          waitingReason: null,
          effects: [
            withId({
              type: 'run_worker',
              workerId: 'w',
              decisionId: 'd7',
              instruction: 'draft it',
            }),
          ],
        });
      },
    );
  });

  it('user_approved_next_step with the waiting decision id → running + run_worker', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.approve_step'] as RuntimeEvent[]);
    const mismatch = errorOf(() =>
      h.session.send({ type: 'user_approved_next_step', decisionId: 'd2' }),
    );
    expect(mismatch.code).toBe('decision_mismatch');
    expect(mismatch.message).toContain('"d2"');
    expect(h.where()).toBe('waiting_user.approve_step');
    expect(h.session.send({ type: 'user_approved_next_step', decisionId: 'd1' })).toEqual({
      phase: 'running',
      waitingReason: null,
      effects: [withId({ type: 'run_worker', workerId: 'writer', decisionId: 'd1' })],
    });
  });

  it('user_rejected_next_step → running + invoke_main_agent', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.approve_step'] as RuntimeEvent[]);
    expect(
      errorOf(() => h.session.send({ type: 'user_rejected_next_step', decisionId: 'other' })).code,
    ).toBe('decision_mismatch');
    expect(h.session.send({ type: 'user_rejected_next_step', decisionId: 'd1' }).effects).toEqual([
      withId({ type: 'invoke_main_agent', reason: 'user_rejected_next_step' }),
    ]);
    expect(h.where()).toBe('running');
  });

  it('worker_started sets the current worker and its acceptance mode', async () => {
    const h = await sessionHarness();
    follow(h, toRunning);
    h.session.send({
      type: 'worker_started',
      workerId: 'writer',
      acceptanceMode: 'no_confirmation',
    });
    expect(h.session.view()).toMatchObject({
      phase: 'running',
      currentWorkerId: 'writer',
      acceptanceMode: 'no_confirmation',
    });
  });

  it('worker_needs_input → waiting_user.worker_questions', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.worker_questions'] as RuntimeEvent[]);
    expect(h.where()).toBe('waiting_user.worker_questions');
  });

  it('user_accepted_artifact → accepted, running + invoke_main_agent', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.review_artifact'] as RuntimeEvent[]);
    expect(
      errorOf(() => h.session.send({ type: 'user_accepted_artifact', artifactId: 'art-9' })).code,
    ).toBe('artifact_mismatch');
    const result = h.session.send({ type: 'user_accepted_artifact', artifactId: 'art-1' });
    expect(result.effects).toEqual([
      withId({ type: 'invoke_main_agent', reason: 'user_accepted_artifact' }),
    ]);
    expect(h.session.artifacts.require('art-1').status).toBe('accepted');
    expect(h.session.facts().map((artifact) => artifact.id)).toEqual(['art-1']);
  });

  it('user_rejected_artifact → rejected, waiting_user.revision', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.revision'] as RuntimeEvent[]);
    expect(h.session.artifacts.require('art-1').status).toBe('rejected');
    expect(h.session.view().waitingReason).toEqual({ kind: 'revision' });
    expect(h.session.facts()).toEqual([]);
  });

  it('user_requested_revision in review_artifact → revision_requested, waiting_user.revision with the instruction', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.review_artifact'] as RuntimeEvent[]);
    const result = h.session.send({ type: 'user_requested_revision', instruction: 'shorter' });
    expect(result).toEqual({
      phase: 'waiting_user',
      waitingReason: { kind: 'revision', instruction: 'shorter' },
      effects: [],
    });
    expect(h.session.artifacts.require('art-1').status).toBe('revision_requested');
  });

  it('user_requested_revision in approve_step → running + invoke_main_agent with the instruction', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES['waiting_user.approve_step'] as RuntimeEvent[]);
    const result = h.session.send({
      type: 'user_requested_revision',
      instruction: 'use a cheaper worker',
    });
    expect(result.effects).toEqual([
      withId({
        type: 'invoke_main_agent',
        reason: 'user_requested_revision',
        instruction: 'use a cheaper worker',
      }),
    ]);
    expect(h.where()).toBe('running');
  });

  it('programmatic_review_passed → accepted + invoke_main_agent; _failed → revision_requested + waiting_user.revision', async () => {
    for (const outcome of ['passed', 'failed'] as const) {
      const h = await sessionHarness({ acceptanceMode: 'programmatic_review' });
      follow(h, toRunning);
      expect(
        errorOf(() => h.session.send({ type: 'programmatic_review_passed' })).message,
      ).toContain('no artifact is under programmatic review');
      h.session.artifacts.write({ name: 'story', content: 'v1' });
      expect(h.session.send({ type: 'worker_completed', artifactId: 'art-1' }).effects).toEqual([
        withId({ type: 'run_programmatic_review', artifactId: 'art-1' }),
      ]);
      if (outcome === 'passed') {
        expect(h.session.send({ type: 'programmatic_review_passed' }).effects).toEqual([
          withId({ type: 'invoke_main_agent', reason: 'programmatic_review_passed' }),
        ]);
        expect(h.session.artifacts.require('art-1').status).toBe('accepted');
        expect(h.where()).toBe('running');
      } else {
        expect(
          h.session.send({ type: 'programmatic_review_failed', reason: 'too long' }).waitingReason,
        ).toEqual({ kind: 'revision', instruction: 'too long' });
        expect(h.session.artifacts.require('art-1').status).toBe('revision_requested');
      }
    }
  });

  it('flow_completed → done', async () => {
    const h = await sessionHarness();
    follow(h, ROUTES.done as RuntimeEvent[]);
    expect(h.session.view()).toMatchObject({ phase: 'done', waitingReason: null });
  });

  it.each(Object.keys(ROUTES).filter((state) => state !== 'done' && state !== 'error'))(
    'runtime_failed in %s → error',
    async (state) => {
      const h = await sessionHarness();
      follow(h, ROUTES[state] as RuntimeEvent[]);
      expect(h.session.send({ type: 'runtime_failed', reason: 'disk full' })).toEqual({
        phase: 'error',
        waitingReason: null,
        effects: [],
      });
      expect(h.session.view().errorReason).toBe('disk full');
    },
  );

  it('every applied event is appended to the history with its time', async () => {
    const h = await sessionHarness();
    follow(h, start);
    h.clock.advance(250);
    h.session.send({ type: 'user_submitted_input', text: 'hello' });
    expect(errorOf(() => h.session.send({ type: 'user_confirmed_intake' })).code).toBe(
      'event_not_allowed',
    );
    const context = h.rb.system.system.get('session:S')?.getSnapshot().context as {
      history: unknown[];
    };
    expect(context.history).toEqual([
      { at: 1_000, event: start[0] },
      { at: 1_250, event: { type: 'user_submitted_input', text: 'hello' } },
    ]);
  });
});

describe('acceptance modes', () => {
  async function completeWith(mode: 'user_confirmed' | 'no_confirmation' | 'programmatic_review') {
    const h = await sessionHarness();
    follow(h, toRunning);
    h.session.send({ type: 'worker_started', workerId: 'writer', acceptanceMode: mode });
    const draft = h.session.artifacts.write({ name: 'story', workerId: 'writer', content: 'v1' });
    const result = h.session.send({
      type: 'worker_completed',
      artifactId: draft.id,
      questions: ['ok?'],
      assessment: 'solid',
    });
    return {
      h,
      result,
      status: h.session.artifacts.require(draft.id).status,
      view: h.session.view(),
    };
  }

  it('user_confirmed: under review, waiting for the user', async () => {
    const { result, status, view } = await completeWith('user_confirmed');
    expect(result).toEqual({
      phase: 'waiting_user',
      waitingReason: {
        kind: 'review_artifact',
        artifactId: 'art-1',
        questions: ['ok?'],
        assessment: 'solid',
      },
      effects: [],
    });
    expect(status).toBe('under_review');
    expect(view.currentWorkerId).toBeNull();
  });

  it('no_confirmation: accepted at once, main agent invoked', async () => {
    const { result, status, h } = await completeWith('no_confirmation');
    expect(result).toEqual({
      phase: 'running',
      waitingReason: null,
      effects: [withId({ type: 'invoke_main_agent', reason: 'worker_completed' })],
    });
    expect(status).toBe('accepted');
    expect(h.session.facts()).toHaveLength(1);
  });

  it('programmatic_review: under review, review run', async () => {
    const { result, status } = await completeWith('programmatic_review');
    expect(result).toEqual({
      phase: 'running',
      waitingReason: null,
      effects: [withId({ type: 'run_programmatic_review', artifactId: 'art-1' })],
    });
    expect(status).toBe('under_review');
  });

  it('a session opened with an acceptance mode uses it until a worker says otherwise', async () => {
    const h = await sessionHarness({ acceptanceMode: 'no_confirmation' });
    follow(h, toRunning);
    h.session.artifacts.write({ name: 'story' });
    expect(h.session.send({ type: 'worker_completed', artifactId: 'art-1' }).effects).toEqual([
      withId({ type: 'invoke_main_agent', reason: 'worker_completed' }),
    ]);
  });

  it('worker_completed needs a drafted artifact of this session', async () => {
    const h = await sessionHarness();
    follow(h, toRunning);
    const unknown = errorOf(() =>
      h.session.send({ type: 'worker_completed', artifactId: 'art-1' }),
    );
    expect(unknown.code).toBe('unknown_artifact');
    h.session.artifacts.write({ name: 'story' });
    h.session.artifacts.setStatus('art-1', 'under_review');
    expect(
      errorOf(() => h.session.send({ type: 'worker_completed', artifactId: 'art-1' })).code,
    ).toBe('invalid_artifact_transition');
  });
});

describe('the full writing flow', () => {
  it('intake → confirm → approved worker → review → reject → revision → input → … → accept → flow_completed', async () => {
    const h = await sessionHarness();
    const steps: [RuntimeEvent, string][] = [
      [
        {
          type: 'session_started',
          availableSkills: [{ name: 'write' }],
          initialSkill: 'write',
          intakePrompt: 'What story?',
        },
        'waiting_user.intake',
      ],
      [{ type: 'user_confirmed_intake' }, 'running'],
      [
        {
          type: 'main_agent_decision_created',
          decision: { id: 'd1', kind: 'run_worker', workerId: 'writer', requiresApproval: true },
        },
        'waiting_user.approve_step',
      ],
      [{ type: 'user_approved_next_step', decisionId: 'd1' }, 'running'],
      [{ type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' }, 'running'],
      [
        { type: 'worker_completed', artifactId: 'art-1', assessment: 'first draft' },
        'waiting_user.review_artifact',
      ],
      [{ type: 'user_rejected_artifact', artifactId: 'art-1' }, 'waiting_user.revision'],
      [{ type: 'user_submitted_input', text: 'make it darker' }, 'running'],
      [
        {
          type: 'main_agent_decision_created',
          decision: { id: 'd2', kind: 'ask_user', message: 'Keep the ending?' },
        },
        'waiting_user.input',
      ],
      [{ type: 'user_submitted_input', text: 'yes' }, 'running'],
      [
        {
          type: 'main_agent_decision_created',
          decision: { id: 'd3', kind: 'run_worker', workerId: 'writer' },
        },
        'running',
      ],
      [{ type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' }, 'running'],
      [{ type: 'worker_completed', artifactId: 'art-2' }, 'waiting_user.review_artifact'],
      [{ type: 'user_accepted_artifact', artifactId: 'art-2' }, 'running'],
      [{ type: 'flow_completed' }, 'done'],
    ];
    for (const [event, expected] of steps) {
      if (event.type === 'worker_completed')
        h.session.artifacts.write({
          name: 'story',
          workerId: 'writer',
          content: `draft for ${event.artifactId}`,
        });
      h.session.send(event);
      expect(h.where(), event.type).toBe(expected);
    }
    expect(plainEffectIds(h.effects())).toEqual([
      { type: 'invoke_main_agent', reason: 'user_confirmed_intake', id: 'S:e1' },
      { type: 'run_worker', workerId: 'writer', decisionId: 'd1', id: 'S:e2' },
      { type: 'invoke_main_agent', reason: 'user_submitted_input', id: 'S:e3' },
      { type: 'emit_message', message: 'Keep the ending?', id: 'S:e4' },
      { type: 'invoke_main_agent', reason: 'user_submitted_input', id: 'S:e5' },
      { type: 'run_worker', workerId: 'writer', decisionId: 'd3', id: 'S:e6' },
      { type: 'invoke_main_agent', reason: 'user_accepted_artifact', id: 'S:e7' },
    ]);
    expect(h.session.artifacts.list().map((artifact) => [artifact.id, artifact.status])).toEqual([
      ['art-1', 'superseded'],
      ['art-2', 'accepted'],
    ]);
    expect(h.session.facts().map((artifact) => artifact.content)).toEqual(['draft for art-2']);
  });
});

describe('strict sessions', () => {
  it('move to error on an event the phase does not allow, instead of refusing it', async () => {
    const h = await sessionHarness({ strictSessions: true });
    follow(h, start);
    const result = h.session.send({ type: 'flow_completed' });
    expect(result.phase).toBe('error');
    expect(h.session.view().errorReason).toBe(
      'event flow_completed is not allowed in phase waiting_user, waiting reason input (waiting_user.input)',
    );
    // A malformed event is still refused, in strict mode too.
    expect(errorOf(() => h.session.send({ type: 'flow_completed', extra: 1 } as never)).code).toBe(
      'invalid_event',
    );
  });
});

describe('malformed runtime events', () => {
  it.each([
    [{ type: 'world_ended' }, 'unknown runtime event type "world_ended"'],
    [{}, 'unknown runtime event type undefined'],
    ['session_started', 'unknown runtime event type undefined'],
    [{ type: 'session_started' }, 'availableSkills'],
    [{ type: 'session_started', availableSkills: [{ title: 'x' }] }, 'availableSkills.0'],
    [{ type: 'user_submitted_input', text: 5 }, 'text'],
    [
      { type: 'main_agent_decision_created', decision: { id: 'd', kind: 'run_worker' } },
      'decision.workerId',
    ],
    [
      { type: 'main_agent_decision_created', decision: { id: 'd', kind: 'dance' } },
      'decision.kind',
    ],
    [{ type: 'worker_started', workerId: 'w', acceptanceMode: 'maybe' }, 'acceptanceMode'],
    [{ type: 'worker_needs_input', workerId: 'w', questions: [] }, 'questions'],
    [{ type: 'flow_completed', now: true }, 'now'],
  ])('%j is refused naming %s, and nothing changes', async (event, named) => {
    const h = await sessionHarness();
    follow(h, toRunning);
    const before = h.persisted();
    const error = errorOf(() => h.session.send(event as never));
    expect(error.code).toBe('invalid_event');
    expect(error.message).toContain(named);
    expect(h.persisted()).toBe(before);
  });
});
