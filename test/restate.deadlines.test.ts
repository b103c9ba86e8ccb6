// Deadlines on Restate (DESIGN §8): a session's inter-round delay and round timeout are
// delayed calls to its own object, fired by Restate's timer, so they fire whatever became
// of the process that armed them. The waits here are for a real server on its own clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
