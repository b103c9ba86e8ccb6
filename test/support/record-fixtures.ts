// Records the replay fixtures, test/fixtures/*.run.json. Run it (npm run fixtures:record)
// after a deliberate change of behaviour, check the diff, and commit the new recordings.
import { join } from 'node:path';
import {
  createRolebox,
  defineFunction,
  MemorySnapshotStore,
  type Rolebox,
  type RoleboxOptions,
} from '../../src/index.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
  writeRunFile,
} from '../../src/testing/index.js';

const here = join(import.meta.dirname, '..', 'fixtures');

async function recording(
  options: RoleboxOptions = {},
): Promise<{ rb: Rolebox; clock: SimulatedClock }> {
  const clock = (options.clock as SimulatedClock | undefined) ?? new SimulatedClock(1_000);
  const rb = createRolebox({ clock, ids: seededIdSource(42), journal: true, ...options });
  await rb.start();
  return { rb, clock };
}

async function approvalWorkflow() {
  const { rb } = await recording({
    functions: [
      defineFunction({
        name: 'awaiting-approval',
        gate: 'signal_observed(answer)',
        continue_until: 'signal_observed(answer)',
        observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
        transitions: [{ when: 'signal_observed(escalate)', activate: ['emergency-handler'] }],
      }),
      defineFunction({ name: 'emergency-handler' }),
    ],
  });
  const session = await rb.openSession({ id: 'approval' });
  session.activate('awaiting-approval');
  session.tool('|signal| type=need_approval, payload={"reason": "touches production"}');
  session.idle();
  session.tool('|signal| type=answer, payload={"approved": true}');
  session.idle();
  return rb.recordRun();
}

async function threeRoundLoop() {
  const dispatcher = new ScriptedDispatcher();
  const { rb, clock } = await recording({ dispatcher });
  const session = await rb.openSession({ id: 'loop' });
  session.startLoop('|loop:3| analyse the proposals');
  await settle();
  for (const summary of ['B is cheapest.', 'B is cheapest; C is fastest.', 'Recommend B.']) {
    clock.advance(4_000);
    dispatcher.complete(undefined, summary);
    await settle();
    clock.advance(2_000);
    await settle();
  }
  return rb.recordRun();
}

async function cancelledLoop() {
  const dispatcher = new ScriptedDispatcher();
  const { rb, clock } = await recording({ dispatcher });
  const session = await rb.openSession({ id: 'cancelled' });
  session.startLoop('|loop:3,fresh| check every link');
  await settle();
  clock.advance(3_000);
  dispatcher.complete(undefined, 'round one');
  await settle();
  clock.advance(2_000);
  await settle();
  clock.advance(500);
  session.message('/stop-loop');
  await settle();
  return rb.recordRun();
}

async function loopInterruptedByRestart() {
  const store = new MemorySnapshotStore();
  const dispatcher = new ScriptedDispatcher();
  const first = createRolebox({
    clock: new SimulatedClock(1_000),
    ids: seededIdSource(7),
    store,
    dispatcher,
  });
  await first.start();
  const session = await first.openSession({ id: 'restarted' });
  session.startLoop('|loop:2| summarise the week');
  await settle();
  await first.flush();
  first.system.stop(); // the process dies; the dispatcher loses the task meanwhile
  dispatcher.forget('task-1');
  const { rb } = await recording({ store, dispatcher, clock: new SimulatedClock(90_000) });
  await settle();
  return rb.recordRun();
}

async function sessionReviewCycle() {
  const { rb } = await recording();
  const session = await rb.openSession({ id: 'review' });
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
    intakePrompt: 'What story?',
  });
  session.send({ type: 'user_confirmed_intake' });
  session.send({
    type: 'main_agent_decision_created',
    decision: { id: 'd1', kind: 'run_worker', workerId: 'writer', requiresApproval: true },
  });
  session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
  session.send({ type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' });
  const first = session.artifacts.write({
    name: 'story',
    workerId: 'writer',
    content: 'draft one',
  });
  session.send({ type: 'worker_completed', artifactId: first.id });
  session.send({ type: 'user_rejected_artifact', artifactId: first.id });
  session.send({ type: 'user_submitted_input', text: 'darker, please' });
  session.send({
    type: 'main_agent_decision_created',
    decision: { id: 'd2', kind: 'run_worker', workerId: 'writer' },
  });
  session.send({ type: 'worker_started', workerId: 'writer', acceptanceMode: 'user_confirmed' });
  const second = session.artifacts.write({
    name: 'story',
    workerId: 'writer',
    content: 'draft two',
  });
  session.send({ type: 'worker_completed', artifactId: second.id });
  session.send({ type: 'user_accepted_artifact', artifactId: second.id });
  session.send({ type: 'flow_completed' });
  return rb.recordRun();
}

const fixtures = {
  'approval-workflow': approvalWorkflow,
  'three-round-loop': threeRoundLoop,
  'cancelled-loop': cancelledLoop,
  'loop-interrupted-by-restart': loopInterruptedByRestart,
  'session-review-cycle': sessionReviewCycle,
};
for (const [name, record] of Object.entries(fixtures)) {
  const run = await record();
  await writeRunFile(join(here, `${name}.run.json`), run);
  console.log(`${name}: ${run.journal.length} events`);
}
