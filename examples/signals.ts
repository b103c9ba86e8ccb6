// The approval workflow of the signal seed (§4.3), end to end: `npm start` runs this.
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
rb.on('continue', (event) =>
  console.log(`  [host] continue the agent for ${event.functions.join(', ')}`),
);
await rb.start();

const session = await rb.openSession({ id: 'demo' });
session.activate('awaiting-approval');
const phase = () =>
  session
    .view()
    .functions.map((f) => `${f.name}=${f.phase}`)
    .join(' ');

console.log(`activated: ${phase()}`);
console.log(
  session.tool('|signal| type=need_approval, payload={"reason": "touches production"}').text,
);
console.log(`  ${phase()}`);
console.log(`idle → ${JSON.stringify(session.idle())}`);
console.log(session.tool('|signal| type=answer, payload={"approved": true}').text);
console.log(`  ${phase()}`);
console.log(`idle → ${JSON.stringify(session.idle())}`);
console.log(`  ${phase()}`);
console.log(`artifact approval-data = ${session.view().artifacts[0]?.content}`);

await rb.stop();
