// Deadlines on Restate (DESIGN §8): a session's inter-round delay and round timeout are
// delayed calls to its own object, fired by Restate's timer, so they fire whatever became
// of the process that armed them. The waits here are for a real server on its own clock.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import {
  queryServer,
  type RestateRig,
  restateUnavailable,
  startRestateRig,
  untilServer,
} from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate deadline tests: ${unavailable}`);
const DELAY_MS = 600;
const TIMEOUT_MS = 800;
/** How far the endpoint's clock is set back while a deadline is on its way. */
const CLOCK_STEP_BACK_MS = 5_000;

describe.skipIf(unavailable !== undefined)('rolebox on Restate: deadlines', () => {
  let rig: RestateRig;

  beforeAll(async () => {
    rig = await startRestateRig({
      limits: { interRoundDelayMs: DELAY_MS, roundTimeoutMs: TIMEOUT_MS },
    });
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  /** Until the server holds a `deadline` call for the session that came due and is being retried. */
  const untilDeadlineRetried = (sessionId: string) =>
    untilServer(async () => {
      const rows = await queryServer(
        rig.server,
        `SELECT status FROM sys_invocation WHERE target_service_key = '${sessionId}' AND target_handler_name = 'deadline'`,
      );
      return rows.some((row) => row.status === 'backing-off' || row.status === 'running');
    }, `a deadline call for ${sessionId} that is being retried`);

  it(
    'fires the inter-round delay through Restate, also when it fell due while the endpoint was down',
    async () => {
      rig.answerWith((round) => `round ${round.round} done`);
      const session = await rig.client.openSession({ id: 'delay-1' });
      expect((await session.startLoop('|loop:2| count')).ok).toBe(true);
      await rig.waitForEvent(
        'delay-1',
        (event) => event.type === 'note' && event.text.includes('round 1/2 completed'),
      );
      // Round 2 waits for the delay: nothing was sent to the worker for it yet.
      expect(rig.rounds.filter((round) => round.originSessionId === 'delay-1')).toHaveLength(1);
      await rig.stopEndpoint();
      // The delay's call came due and could not be delivered: Restate keeps retrying it.
      await untilDeadlineRetried('delay-1');
      await rig.startEndpoint();
      await rig.waitForEvent('delay-1', (event) => event.type === 'loop_finished');
      const rounds = rig.rounds.filter((round) => round.originSessionId === 'delay-1');
      expect(rounds.map((round) => round.round)).toEqual([1, 2]);
      const { loop } = await session.view();
      expect(loop?.phase).toBe('complete');
      // Round 2 started no sooner than the delay after round 1 ended.
      const [first, second] = loop?.rounds ?? [];
      expect((second?.startedAt ?? 0) - (first?.completedAt ?? 0)).toBeGreaterThanOrEqual(DELAY_MS);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'fires the round timeout through Restate after the endpoint was down, and cancels the worker invocation',
    async () => {
      rig.answerWith((round) => (round.round === 1 ? 'hang' : `round ${round.round} done`));
      const session = await rig.client.openSession({ id: 'timeout-1' });
      expect((await session.startLoop('|loop:2| count')).ok).toBe(true);
      // The endpoint goes down while round 1 hangs; the timeout falls due meanwhile.
      await rig.stopEndpoint();
      await untilDeadlineRetried('timeout-1');
      await rig.startEndpoint();
      await rig.waitForEvent('timeout-1', (event) => event.type === 'loop_finished');
      // As embedded: the timed-out round is cancelled and the loop ends with the reason.
      const { loop } = await session.view();
      expect(loop?.rounds.map((round) => [round.round, round.status])).toEqual([[1, 'cancelled']]);
      expect(
        rig
          .eventsOf('timeout-1')
          .filter((event) => event.type === 'note')
          .map((event) => event.text),
      ).toContain('[loop-progress error: round timeout]');
      // The hung worker's invocation was cancelled, not left running.
      await untilServer(async () => {
        const rows = await queryServer(
          rig.server,
          "SELECT status FROM sys_invocation WHERE target_service_name = 'test-worker' AND status != 'completed'",
        );
        return rows.length === 0;
      }, 'no worker invocation left running');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
  it(
    "a deadline that fires early by the endpoint's clock is reached at its own time, not refused and armed again",
    async () => {
      // Round 2 hangs: it is stopped once it has started, the clock set right again.
      rig.answerWith((round) => (round.round === 2 ? 'hang' : `round ${round.round} done`));
      const session = await rig.client.openSession({ id: 'early-1' });
      expect((await session.startLoop('|loop:2| count')).ok).toBe(true);
      await rig.waitForEvent(
        'early-1',
        (event) => event.type === 'note' && event.text.includes('round 1/2 completed'),
      );
      // The inter-round delay is armed. The endpoint's clock now steps back (NTP, a VM
      // resumed): when Restate's timer fires, this process reads a time before the deadline.
      const since = performance.now();
      const realNow = Date.now.bind(Date);
      const stepBack = vi
        .spyOn(Date, 'now')
        .mockImplementation(() => realNow() - CLOCK_STEP_BACK_MS);
      let took: number;
      try {
        await untilServer(
          async () =>
            rig.rounds.some((round) => round.originSessionId === 'early-1' && round.round === 2),
          'round 2 of early-1 sent to the worker',
        );
        took = performance.now() - since;
      } finally {
        stepBack.mockRestore();
      }
      // Round 2 ran when the delay was over: not a step back's length later (re-armed).
      expect(took, `${Math.round(took)} ms from round 1's end to round 2`).toBeLessThan(
        DELAY_MS + CLOCK_STEP_BACK_MS / 2,
      );
      const { loop } = await session.view();
      const [first, second] = loop?.rounds ?? [];
      expect(second?.round).toBe(2);
      // On the session's clock too: round 2 started once the delay was over, not before.
      expect((second?.startedAt ?? 0) - (first?.completedAt ?? 0)).toBeGreaterThanOrEqual(DELAY_MS);
      // Round 2 hangs until its timeout ends the loop.
      await rig.waitForEvent('early-1', (event) => event.type === 'loop_finished');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
