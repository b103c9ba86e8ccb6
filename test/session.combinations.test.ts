import { describe, expect, it } from 'vitest';
import { RUNTIME_EVENT_TYPES, type RuntimeEvent, type RuntimeEventType } from '../src/index.js';
import { errorOf } from './support/errors.js';
import { follow, ROUTES, sessionHarness } from './support/sessions.js';

// Every state a session can be in, as a route from a fresh session.
const STATES: Record<string, readonly RuntimeEvent[]> = {
  ...ROUTES,
  'running, worker in flight': [
    ...(ROUTES.running as RuntimeEvent[]),
    { type: 'worker_started', workerId: 'writer', acceptanceMode: 'programmatic_review' },
  ],
  'running, programmatic review': [
    ...(ROUTES.running as RuntimeEvent[]),
    { type: 'worker_started', workerId: 'writer', acceptanceMode: 'programmatic_review' },
    { type: 'worker_completed', artifactId: 'art-1' },
  ],
};

// SPEC §4.2's "allowed in" column, transcribed independently of the machine.
const RUNNING = ['running', 'running, worker in flight', 'running, programmatic review'];
const ALLOWED: Record<RuntimeEventType, readonly string[]> = {
  session_started: ['idle'],
  skill_selected: ['waiting_user.skill_selection'],
  user_submitted_input: [
    'waiting_user.intake',
    'waiting_user.input',
    'waiting_user.worker_questions',
    'waiting_user.revision',
  ],
  user_confirmed_intake: ['waiting_user.intake'],
  main_agent_decision_created: [...RUNNING, 'waiting_user.input'],
  user_approved_next_step: ['waiting_user.approve_step'],
  user_rejected_next_step: ['waiting_user.approve_step'],
  worker_started: RUNNING,
  worker_needs_input: RUNNING,
  worker_completed: RUNNING,
  user_accepted_artifact: ['waiting_user.review_artifact'],
  user_rejected_artifact: ['waiting_user.review_artifact'],
  user_requested_revision: ['waiting_user.review_artifact', 'waiting_user.approve_step'],
  // Only while an artifact is under programmatic review.
  programmatic_review_passed: ['running, programmatic review'],
  programmatic_review_failed: ['running, programmatic review'],
  flow_completed: RUNNING,
  runtime_failed: Object.keys(STATES).filter((state) => state !== 'done' && state !== 'error'),
  // Only once a wait's deadline has come; these sessions have none (the limit is off).
  wait_expired: [],
};

/** A well-formed event of each type, with the ids the routes use. */
function sample(type: RuntimeEventType, draftId: string): RuntimeEvent {
  switch (type) {
    case 'session_started':
      return { type, availableSkills: [{ name: 'write' }] };
    case 'skill_selected':
      return { type, skill: 'write' };
    case 'user_submitted_input':
      return { type, text: 'more' };
    case 'main_agent_decision_created':
      return { type, decision: { id: 'd9', kind: 'ask_user', message: 'ok?' } };
    case 'user_approved_next_step':
    case 'user_rejected_next_step':
      return { type, decisionId: 'd1' };
    case 'worker_started':
      return { type, workerId: 'w2', acceptanceMode: 'user_confirmed' };
    case 'worker_needs_input':
      return { type, workerId: 'writer', questions: ['why?'] };
    case 'worker_completed':
      return { type, artifactId: draftId };
    case 'user_accepted_artifact':
    case 'user_rejected_artifact':
      return { type, artifactId: 'art-1' };
    case 'user_requested_revision':
      return { type, instruction: 'again' };
    case 'programmatic_review_failed':
      return { type, reason: 'too long' };
    case 'runtime_failed':
      return { type, reason: 'boom' };
    default:
      return { type } as RuntimeEvent;
  }
}

describe('every (phase, waiting reason) × event combination', () => {
  it('the table names only states and events that exist', () => {
    expect(Object.keys(ALLOWED).sort()).toEqual([...RUNTIME_EVENT_TYPES].sort());
    for (const states of Object.values(ALLOWED))
      for (const state of states) expect(STATES).toHaveProperty([state]);
  });

  for (const [state, route] of Object.entries(STATES)) {
    for (const type of RUNTIME_EVENT_TYPES) {
      const allowed = ALLOWED[type].includes(state);
      it(`${state} × ${type}: ${allowed ? 'applied' : 'refused, nothing changes'}`, async () => {
        const h = await sessionHarness();
        follow(h, route);
        // A spare draft, so that worker_completed names an artifact that could be reviewed.
        const draft = h.session.artifacts.write({ name: 'spare', content: 'x' });
        const before = h.persisted();
        const event = sample(type, draft.id);
        if (allowed) {
          expect(() => h.session.send(event)).not.toThrow();
          expect(h.persisted()).not.toBe(before);
        } else {
          const error = errorOf(() => h.session.send(event));
          expect(error.code).toBe('event_not_allowed');
          const phase = state.split(/[.,]/)[0];
          expect(error.message).toContain(`event ${type} is not allowed in phase ${phase}`);
          if (state.startsWith('waiting_user.'))
            expect(error.message).toContain(`waiting reason ${state.slice(13)}`);
          expect(error.details).toMatchObject({ event: type, phase });
          expect(h.persisted()).toBe(before);
        }
      });
    }
  }
});
