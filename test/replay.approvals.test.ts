// A recorded run's approval trail replays to the same records (issue 25 item 5): replay
// compares every snapshot, the functions' approval requests with them, so a run whose
// recorded trail says something the code does not do (a forged `answeredBy`, a request that
// was never rejected) diverges, and the report names the approval request.
import { describe, expect, it } from 'vitest';
import { createRolebox, defineFunction } from '../src/index.js';
import {
  formatReplayReport,
  type RecordedRun,
  replay,
  SimulatedClock,
  seededIdSource,
} from '../src/testing/index.js';

/** A journaled run with approvals approved, rejected and answered, and its final trail. */
async function recordedApprovals() {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    clock,
    ids: seededIdSource(2),
    journal: true,
    functions: [
      defineFunction({ name: 'deploy', gate: 'signal_observed(answer)' }),
      defineFunction({ name: 'review', gate: 'signal_observed(answer)' }),
    ],
  });
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  session.activate('deploy');
  session.activate('review');
  session.signal({ type: 'need_approval', payload: { reason: 'migrate' } });
  clock.advance(1_000);
  session.approve('deploy:r1', { by: 'ana', note: 'ok', seenVersion: 1 });
  session.reject('review:r1', { by: 'bo', reason: 'no plan' });
  clock.advance(1_000);
  session.signal({ type: 'need_approval', payload: { reason: 'drop tables' } });
  session.signal({ type: 'answer' });
  const trail = session.view().approvals;
  const run: RecordedRun = structuredClone(rb.recordRun());
  await rb.stop();
  return { run, trail };
}

/** The journal index of the entry that delivered the signal of `type` naming `requestId`. */
function entryNaming(run: RecordedRun, requestId: string): number {
  return run.journal.findIndex((entry) =>
    JSON.stringify(entry.event).includes(`"requestId":"${requestId}"`),
  );
}

/** Every approval request object in a recorded snapshot whose id is `id`. */
function requestsIn(snapshot: unknown, id: string): Record<string, unknown>[] {
  if (typeof snapshot !== 'object' || snapshot === null) return [];
  if ((snapshot as { id?: unknown }).id === id && 'openedAt' in snapshot)
    return [snapshot as Record<string, unknown>];
  return Object.values(snapshot).flatMap((child) => requestsIn(child, id));
}

describe('replay checks the approval trail', () => {
  it('a recorded run with approvals replays clean', async () => {
    const { run, trail } = await recordedApprovals();
    expect(trail.map((request) => `${request.id} ${request.status}`)).toEqual([
      'deploy:r1 answered',
      'review:r1 rejected',
      'deploy:r2 answered',
      'review:r2 answered',
    ]);
    // The recorded final snapshot holds the trail the view showed.
    const last = run.journal.at(-1)?.after;
    for (const request of trail) expect(requestsIn(last, request.id)).toEqual([request]);
    const report = replay(run);
    expect(formatReplayReport(report)).toBe(
      `replay ok: ${run.journal.length} event(s), every snapshot matched`,
    );
  });

  it('a recorded trail the code does not reproduce diverges, naming the request', async () => {
    const { run } = await recordedApprovals();
    const approved = entryNaming(run, 'deploy:r1');
    expect(approved).toBeGreaterThan(0);
    // Forge the approver in the recording, from that entry on.
    for (const entry of run.journal.slice(approved))
      for (const request of requestsIn(entry.after, 'deploy:r1')) request.answeredBy = 'mallory';
    const report = replay(run);
    expect(report.ok).toBe(false);
    expect(report.divergence?.index).toBe(approved);
    expect(report.divergence?.diff).toEqual([
      expect.stringMatching(
        /kv\.__approval_requests\.0\.answeredBy: expected "mallory", got "ana" \(approval request deploy:r1\)$/,
      ),
    ]);
  });

  it('a rejection recorded as an answer diverges too', async () => {
    const { run } = await recordedApprovals();
    const rejected = entryNaming(run, 'review:r1');
    for (const entry of run.journal.slice(rejected))
      for (const request of requestsIn(entry.after, 'review:r1')) request.status = 'answered';
    const report = replay(run);
    expect(report.divergence?.index).toBe(rejected);
    expect(report.divergence?.diff.join('\n')).toContain(
      'status: expected "answered", got "rejected" (approval request review:r1)',
    );
  });
});
