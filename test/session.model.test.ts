import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { createTestModel } from 'xstate/graph';
import {
  type AcceptanceMode,
  createSessionMachine,
  DEFAULT_LIMITS,
  defaultConditionRegistry,
  FunctionCatalog,
  RUNTIME_EVENT_TYPES,
  type RuntimeEvent,
  type SessionContext,
  SimulatedClock,
  type TimedRuntimeEvent,
  WAITING_REASON_KINDS,
} from '../src/index.js';
import { sessionHarness } from './support/sessions.js';

// The session machine is the model; a real rolebox driven through session.send() is the
// system under test. Only runtime events are modelled (the container events are covered
// by the function and loop tests).
const machine = createSessionMachine({
  catalog: new FunctionCatalog([]),
  conditions: defaultConditionRegistry,
  limits: DEFAULT_LIMITS,
  clock: new SimulatedClock(),
}).provide({ actions: { tellParent: () => {} } });

const RUNTIME = new Set<string>(RUNTIME_EVENT_TYPES);

/** Artifact ids follow the writes: the SUT writes one new draft before each worker_completed. */
function completedSoFar(context: SessionContext): number {
  return context.history.filter((entry) => entry.event.type === 'worker_completed').length;
}

function modelEvents(snapshot: AnyMachineSnapshot): TimedRuntimeEvent[] {
  const context = snapshot.context as SessionContext;
  const reason = context.waitingReason;
  const events: RuntimeEvent[] = [
    { type: 'session_started', availableSkills: [{ name: 'write' }] },
    { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
    {
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
      intakePrompt: 'Topic?',
    },
    { type: 'skill_selected', skill: 'write' },
    { type: 'user_submitted_input', text: 'go' },
    { type: 'user_confirmed_intake' },
    {
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'ask_user', message: 'tone?' },
    },
    {
      type: 'main_agent_decision_created',
      decision: { id: 'd2', kind: 'run_worker', workerId: 'w', requiresApproval: true },
    },
    {
      type: 'main_agent_decision_created',
      decision: { id: 'd3', kind: 'run_worker', workerId: 'w' },
    },
    { type: 'main_agent_decision_created', decision: { id: 'd4', kind: 'finish' } },
    ...(['user_confirmed', 'no_confirmation', 'programmatic_review'] as AcceptanceMode[]).map(
      (acceptanceMode): RuntimeEvent => ({ type: 'worker_started', workerId: 'w', acceptanceMode }),
    ),
    { type: 'worker_needs_input', workerId: 'w', questions: ['which?'] },
    { type: 'worker_completed', artifactId: `art-${completedSoFar(context) + 1}` },
    { type: 'programmatic_review_passed' },
    { type: 'programmatic_review_failed', reason: 'too long' },
    { type: 'user_requested_revision', instruction: 'again' },
    { type: 'flow_completed' },
    { type: 'runtime_failed', reason: 'boom' },
  ];
  if (reason?.kind === 'approve_step') {
    events.push(
      { type: 'user_approved_next_step', decisionId: reason.decisionId },
      { type: 'user_rejected_next_step', decisionId: reason.decisionId },
    );
  }
  if (reason?.kind === 'review_artifact') {
    events.push(
      { type: 'user_accepted_artifact', artifactId: reason.artifactId },
      { type: 'user_rejected_artifact', artifactId: reason.artifactId },
    );
  }
  return events.map((event) => ({ ...event, at: 0 }) as TimedRuntimeEvent);
}

const model = createTestModel(machine, {
  input: { sessionId: 'S', at: 0 },
  events: modelEvents as never,
  filterEvents: (_snapshot, event) => RUNTIME.has(event.type),
  serializeState: (snapshot) => {
    const context = snapshot.context as SessionContext;
    return JSON.stringify([
      snapshot.value,
      context.acceptanceMode,
      context.currentWorkerId !== null,
      context.resumeContext !== null,
      context.reviewArtifactId !== null,
      context.intakePrompt !== null,
    ]);
  },
  serializeEvent: (event) => JSON.stringify(event),
});

const STATE_KEYS = [
  'idle',
  'running',
  'done',
  'error',
  ...WAITING_REASON_KINDS.map((kind) => `waiting_user.${kind}`),
];
const paths = model.getShortestPaths();

describe('session machine model', () => {
  it('reaches every phase and every waiting-reason sub-state', () => {
    const reached = new Set<string>();
    for (const path of paths) {
      for (const step of path.steps) {
        const value = step.state.value as string | Record<string, string>;
        reached.add(typeof value === 'string' ? value : `waiting_user.${value.waiting_user}`);
      }
    }
    expect([...reached].sort()).toEqual([...STATE_KEYS].sort());
  });

  for (const path of paths) {
    const route = path.steps
      .slice(1)
      .map(({ event }) => event.type)
      .join(' → ');
    it(`${route || '(opened)'}`, async () => {
      const h = await sessionHarness();
      const expectWhere = (key: string) => () => expect(h.where()).toBe(key);
      await model.testPath(path, {
        states: Object.fromEntries(STATE_KEYS.map((key) => [key, expectWhere(key)])),
        events: Object.fromEntries(
          RUNTIME_EVENT_TYPES.map((type) => [
            type,
            ({ event }: { event: unknown }) => {
              const { at: _at, ...runtimeEvent } = event as TimedRuntimeEvent;
              if (runtimeEvent.type === 'worker_completed')
                h.session.artifacts.write({ name: `story-${runtimeEvent.artifactId}` });
              h.session.send(runtimeEvent as RuntimeEvent);
            },
          ]),
        ),
      });
    });
  }
});
