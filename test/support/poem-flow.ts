// The writing flow the effect tests share: a session asked for a poem, its main agent
// deciding to run worker `poet` with approval, and a worker that writes the poem.
import type { RuntimeEvent, SessionHandle } from '../../src/index.js';

/** Brings a fresh session to the approval of decision d1 (run_worker poet). */
export const UNTIL_POET_APPROVAL: readonly RuntimeEvent[] = [
  { type: 'session_started', availableSkills: [{ name: 'write' }], initialSkill: 'write' },
  { type: 'user_submitted_input', text: 'a poem' },
  {
    type: 'main_agent_decision_created',
    decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
  },
];

/** The approval of d1, which emits the `run_worker` effect. */
export const APPROVE_POET: RuntimeEvent = { type: 'user_approved_next_step', decisionId: 'd1' };

/** Sends the flow up to d1's approval, then the approval; answers what the last send answered. */
export function approvePoet<R>(session: { send(event: RuntimeEvent): R }): R {
  for (const event of UNTIL_POET_APPROVAL) session.send(event);
  return session.send(APPROVE_POET);
}

/** What a `run_worker` handler answers once it wrote the poem: started, then completed with it. */
export function poemWritten(session: SessionHandle, workerId: string): RuntimeEvent[] {
  const draft = session.artifacts.write({ name: 'poem', workerId, content: 'roses' });
  return [
    { type: 'worker_started', workerId, acceptanceMode: 'user_confirmed' },
    { type: 'worker_completed', artifactId: draft.id },
  ];
}
