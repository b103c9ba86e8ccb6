// `npm run example` runs this: the approval workflow of the signal seed, then a session that
// waits for the user twice (approve a worker step, review its artifact).
import { createRolebox, defineFunction } from 'rolebox';

const rb = createRolebox({
  functions: [
    defineFunction({
      name: 'awaiting-approval',
      description: 'Ask for approval, wait for a human answer, then finish.',
      gate: 'signal_observed(answer)',
      continue_until: 'signal_observed(answer)',
      observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
      transitions: [{ when: 'signal_observed(escalate)', activate: ['emergency-handler'] }],
    }),
    defineFunction({ name: 'emergency-handler', continue_until: 'signal_observed(answer)' }),
  ],
});
rb.on('effect', ({ effect }) => console.log(`  [host] effect ${JSON.stringify(effect)}`));
await rb.start();

console.log('== Agent signals and a function FSM ==');
const agent = await rb.openSession({ id: 'signals' });
agent.activate('awaiting-approval');
const phases = () =>
  agent
    .view()
    .functions.map((f) => `${f.name}=${f.phase}`)
    .join(' ');
console.log(`activated: ${phases()}`);
console.log(
  agent.tool('|signal| type=need_approval, payload={"reason": "touches production"}').text,
);
console.log(`idle → ${JSON.stringify(agent.idle())}`);
console.log(agent.tool('|signal| type=answer, payload={"approved": true}').text);
console.log(`  ${phases()}`);
console.log(`idle → ${JSON.stringify(agent.idle())}`);
console.log(`  ${phases()}; artifact approval-data = ${agent.artifacts.list()[0]?.content}`);

console.log('\n== A runtime session with a human in the loop ==');
const session = await rb.openSession({ id: 'writing' });
const show = (label: string) => {
  const view = session.view();
  console.log(
    `${label} → ${view.phase}${view.waitingReason ? ` (${JSON.stringify(view.waitingReason)})` : ''}`,
  );
};
session.send({
  type: 'session_started',
  availableSkills: [{ name: 'write' }],
  initialSkill: 'write',
  intakePrompt: 'What shall I write?',
});
show('session_started');
session.send({ type: 'user_submitted_input', text: 'A haiku about autumn' });
show('user_submitted_input');
session.send({
  type: 'main_agent_decision_created',
  decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
});
show('decision run_worker (needs approval)');
session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
show('user_approved_next_step');
session.send({ type: 'worker_started', workerId: 'poet', acceptanceMode: 'user_confirmed' });
const draft = session.artifacts.write({
  name: 'haiku',
  workerId: 'poet',
  content: 'Leaves let go, unasked',
});
session.send({ type: 'worker_completed', artifactId: draft.id, assessment: 'five-seven-five' });
show('worker_completed');
session.send({ type: 'user_accepted_artifact', artifactId: draft.id });
show('user_accepted_artifact');
session.send({ type: 'flow_completed' });
show('flow_completed');
console.log(
  `facts: ${JSON.stringify(session.facts().map((artifact) => `${artifact.name}: ${artifact.content}`))}`,
);

await rb.stop();
