import type { AnyMachineSnapshot } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import {
  createSessionMachine,
  FunctionCatalog,
  type TimedRuntimeEvent,
} from '../../machines/index.js';
import {
  type AcceptanceMode,
  DEFAULT_LIMITS,
  defaultConditionRegistry,
  RUNTIME_EVENT_TYPES,
  type RuntimeEvent,
  type SendResult,
  type SessionContext,
  type SessionHandle,
} from '../../src/index.js';
import { SimulatedClock } from '../../src/testing/index.js';

// The session machine as a model of the runtime events (the container events are covered
// by the function and loop tests). Its only outbound action is a no-op here.
export const sessionModelMachine = createSessionMachine({
  catalog: new FunctionCatalog([]),
  conditions: defaultConditionRegistry,
  limits: DEFAULT_LIMITS,
  clock: new SimulatedClock(),
}).provide({ actions: { emitHostEventOrReport: () => {} } });

/** Runtime event types, for filtering out the container events. */
export const RUNTIME_EVENT_SET = new Set<string>(RUNTIME_EVENT_TYPES);

/** Artifact ids follow the writes: the system under test writes one new draft before each worker_completed. */
function completedSoFar(context: SessionContext): number {
  return context.history.filter((entry) => entry.event.type === 'worker_completed').length;
}

/** Every runtime event the model offers in a state, with the ids that state awaits. */
export function sessionModelEvents(snapshot: AnyMachineSnapshot): TimedRuntimeEvent[] {
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

/** The parts of a session state that matter to its behaviour, as a graph vertex. */
export function serializeSessionState(snapshot: AnyMachineSnapshot): string {
  const context = snapshot.context as SessionContext;
  return JSON.stringify([
    snapshot.value,
    context.acceptanceMode,
    context.currentWorkerId !== null,
    context.resumeContext !== null,
    context.reviewArtifactId !== null,
    context.intakePrompt !== null,
  ]);
}

/** Sends a model event to a real session; writes the draft a worker_completed names first. */
export function sendModelEvent(session: SessionHandle, event: TimedRuntimeEvent): SendResult {
  const { at: _at, ...runtimeEvent } = event;
  if (runtimeEvent.type === 'worker_completed')
    session.artifacts.write({ name: `story-${runtimeEvent.artifactId}` });
  return session.send(runtimeEvent as RuntimeEvent);
}

/** Every shortest path of the session model over the runtime events, from a new session. */
export function sessionModelPaths() {
  return getShortestPaths(sessionModelMachine, {
    input: { sessionId: 'S', at: 0 },
    events: sessionModelEvents as never,
    filterEvents: (_snapshot, event) => RUNTIME_EVENT_SET.has(event.type),
    serializeState: serializeSessionState as never,
    serializeEvent: (event) => JSON.stringify(event),
  });
}
