// A journaled run with effect handlers replays clean, and replay checks the effects
// (issue 24 item 6): the runner's commands (started, attempt failed, result, apply) are
// journal entries, and each entry's snapshot holds the session's outbox, so a change in
// how an effect is recorded or settled is a divergence.
import { describe, expect, it } from 'vitest';
import { createRolebox, type HostEvent } from '../src/index.js';
import {
  formatReplayReport,
  type RecordedRun,
  replay,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { poemWritten } from './support/poem-flow.js';

/**
 * Records a run in which the main agent's handler fails once and then decides; the approved
 * worker's handler writes an artifact and completes.
 */
async function recordRunWithEffects(): Promise<{ run: RecordedRun; events: HostEvent[] }> {
  const clock = new SimulatedClock(1_000);
  let agentCalls = 0;
  const rb = createRolebox({
    clock,
    ids: seededIdSource(7),
    journal: true,
    effectRetry: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 100 },
    effects: {
      invoke_main_agent: () => {
        agentCalls += 1;
        if (agentCalls === 1) throw new Error('model down');
        return [
          {
            type: 'main_agent_decision_created',
            decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
          },
        ];
      },
      run_worker: (effect, ctx) => poemWritten(ctx.session, effect.workerId),
    },
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
  });
  session.send({ type: 'user_submitted_input', text: 'a poem' });
  await settle(10);
  clock.advance(100);
  await settle(10);
  session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
  await settle(10);
  expect(session.view()).toMatchObject({
    waitingReason: { kind: 'review_artifact' },
    pendingEffects: [],
  });
  const run = rb.recordRun();
  await rb.stop();
  return { run, events };
}

describe('replay of a journaled run with effects', () => {
  it('journals the effect runner’s steps and replays them clean', async () => {
    const { run, events } = await recordRunWithEffects();
    const types = run.journal.map((entry) => entry.event.type);
    for (const step of [
      'session.effect_started',
      'session.effect_attempt_failed',
      'session.effect_result',
    ])
      expect(types, step).toContain(step);
    // The host saw the effect's life too.
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['effect_started', 'effect_settled', 'effect_failed']),
    );
    expect(formatReplayReport(replay(run))).toBe(
      `replay ok: ${run.journal.length} event(s), every snapshot matched`,
    );
  });

  it('reports a divergence when a recorded effect differs from what the code records', async () => {
    const { run } = await recordRunWithEffects();
    // The recording says the failed attempt left another error than the code records.
    const index = run.journal.findIndex(
      (entry) => entry.event.type === 'session.effect_attempt_failed',
    );
    const altered = structuredClone(run) as unknown as { journal: { after: unknown }[] };
    const after = JSON.stringify(altered.journal[index]?.after).replace(
      '"lastError":"model down"',
      '"lastError":"model gone"',
    );
    expect(after).toContain('model gone');
    (altered.journal[index] as { after: unknown }).after = JSON.parse(after);
    const report = replay(altered as unknown as RecordedRun);
    expect(report.ok).toBe(false);
    expect(report.divergence).toMatchObject({ index, actor: 'session:S' });
    expect(report.divergence?.diff.join('\n')).toContain('lastError');
  });
});
