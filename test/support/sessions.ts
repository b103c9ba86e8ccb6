import { expect } from 'vitest';
import {
  type AcceptanceMode,
  createRolebox,
  defineFunction,
  type FunctionSpec,
  type HostEvent,
  type RoleboxLimits,
  type RuntimeEvent,
  type SessionEffect,
} from '../../src/index.js';
import { SimulatedClock, seededIdSource } from '../../src/testing/index.js';

/** A started rolebox on a simulated clock with one session, recording every effect. */
export async function sessionHarness(
  options: {
    acceptanceMode?: AcceptanceMode;
    strictSessions?: boolean;
    limits?: Partial<RoleboxLimits>;
    functions?: FunctionSpec[];
  } = {},
) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    clock,
    ids: seededIdSource(5),
    functions: (options.functions ?? []).map((spec) =>
      defineFunction(spec, { onWarning: () => {} }),
    ),
    ...(options.strictSessions ? { strictSessions: true } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const session = await rb.openSession({
    id: 'S',
    ...(options.acceptanceMode ? { acceptanceMode: options.acceptanceMode } : {}),
  });
  const effects = (): SessionEffect[] =>
    events.flatMap((event) => (event.type === 'effect' ? [event.effect] : []));
  /** Where the session is: `running`, `waiting_user.input`, … */
  const where = () => {
    const view = session.view();
    return view.phase === 'waiting_user' ? `waiting_user.${view.waitingReason?.kind}` : view.phase;
  };
  const persisted = () => JSON.stringify(rb.system.getPersistedSnapshot());
  return { rb, session, clock, events, effects, where, persisted };
}

/** Events that bring a fresh session to each (phase, waiting reason) it can be in. */
export const ROUTES: Readonly<Record<string, readonly RuntimeEvent[]>> = {
  idle: [],
  'waiting_user.skill_selection': [
    { type: 'session_started', availableSkills: [{ name: 'write' }, { name: 'review' }] },
  ],
  'waiting_user.intake': [
    {
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
      intakePrompt: 'What should I write?',
    },
  ],
  'waiting_user.input': [
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
  ],
  running: [
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'user_submitted_input', text: 'a short story' },
  ],
  'waiting_user.approve_step': [
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'user_submitted_input', text: 'a short story' },
    {
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'writer', requiresApproval: true },
    },
  ],
  'waiting_user.worker_questions': [
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'user_submitted_input', text: 'a short story' },
    { type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' },
    { type: 'worker_needs_input', workerId: 'writer', questions: ['Which genre?'] },
  ],
  'waiting_user.review_artifact': [
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'user_submitted_input', text: 'a short story' },
    { type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' },
    { type: 'worker_completed', artifactId: 'art-1' },
  ],
  'waiting_user.revision': [
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'user_submitted_input', text: 'a short story' },
    { type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' },
    { type: 'worker_completed', artifactId: 'art-1' },
    { type: 'user_rejected_artifact', artifactId: 'art-1' },
  ],
  done: [
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    { type: 'user_submitted_input', text: 'a short story' },
    { type: 'flow_completed' },
  ],
  error: [{ type: 'runtime_failed', reason: 'model unavailable' }],
};

/** Drives a harness's session along a route; writes the draft a `worker_completed` names. */
export function follow(
  harness: Awaited<ReturnType<typeof sessionHarness>>,
  route: readonly RuntimeEvent[],
): void {
  for (const event of route) {
    if (event.type === 'worker_completed')
      harness.session.artifacts.write({
        name: 'story',
        workerId: 'writer',
        content: 'Once upon a time',
      });
    harness.session.send(event);
  }
}

/** `effect` as the session emits it: with an id `<sessionId>:e<n>` (the order is checked where it matters). */
export const withId = <T extends object>(effect: T) => ({
  ...effect,
  id: expect.stringMatching(/^.+:e[1-9]\d*$/),
});
