// Cancellations, timers and refusals on Restate (DESIGN §8), through a real restate-server
// on free ports: an operator's cancel of a worker run reaches the session, a finished
// round leaves no timer behind, the internal handlers are not on the ingress, and bad
// input to every public handler is refused at once (HTTP 400 with the rolebox code),
// never retried.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COMMANDS, SESSION_READS } from '../src/restate/index.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import {
  queryServer,
  type RestateRig,
  restateUnavailable,
  startRestateRig,
  untilServer,
} from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate cancellation tests: ${unavailable}`);

/** Long enough that no round times out in these tests: a timer left behind stays scheduled. */
const ROUND_TIMEOUT_MS = 10 * 60_000;

/** POSTs `body` (as it is: already JSON text) to the ingress; gives up after `limitMs`. */
async function post(
  rig: RestateRig,
  path: string,
  body: string,
  limitMs = 20_000,
): Promise<{ status: number; json: Record<string, unknown> | undefined; text: string }> {
  const response = await fetch(`${rig.server.ingressUrl}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(limitMs),
  });
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

describe.skipIf(unavailable !== undefined)('rolebox on Restate: cancellations and refusals', () => {
  let rig: RestateRig;

  beforeAll(async () => {
    rig = await startRestateRig({
      limits: { interRoundDelayMs: 0, roundTimeoutMs: ROUND_TIMEOUT_MS },
    });
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  /** The invocations of the session object's `deadline` handler for `sessionId` not completed. */
  const pendingDeadlines = (sessionId: string) =>
    queryServer(
      rig.server,
      `SELECT id, status FROM sys_invocation WHERE target_service_key = '${sessionId}' AND target_handler_name = 'deadline' AND status != 'completed'`,
    );

  it(
    "reports an operator's cancel of a worker run to the session: the loop ends interrupted within a second",
    async () => {
      rig.answerWith(() => 'hang');
      const session = await rig.client.openSession({ id: 'operator-1' });
      expect((await session.startLoop('|loop:3| count')).ok).toBe(true);
      // The round's worker invocation, once it runs (it hangs until cancelled).
      let invocationId: string | undefined;
      await untilServer(async () => {
        const seen = [...rig.invocations].find(([key]) => key.startsWith('operator-1/'));
        invocationId = seen ? [...seen[1]][0] : undefined;
        return invocationId !== undefined;
      }, 'the worker of operator-1 running');
      expect((await session.view()).loop?.phase).toBe('awaiting_worker');
      // As `restate invocations cancel <id>` does: the admin API's cancel.
      const cancelled = await fetch(`${rig.server.adminUrl}/invocations/${invocationId}/cancel`, {
        method: 'PATCH',
      });
      expect(cancelled.status).toBeLessThan(300);
      const since = performance.now();
      await rig.waitForEvent('operator-1', (event) => event.type === 'loop_finished');
      const took = performance.now() - since;
      const { loop } = await session.view();
      expect(loop?.phase).toBe('interrupted');
      expect(loop?.rounds.map((round) => [round.round, round.status])).toEqual([[1, 'cancelled']]);
      expect(took, `${Math.round(took)} ms from the cancel to the loop's end`).toBeLessThan(1_000);
      // Only round 1 was ever sent to a worker, and the session holds no timer any more.
      expect(rig.rounds.filter((round) => round.originSessionId === 'operator-1')).toHaveLength(1);
      await untilServer(
        async () => (await pendingDeadlines('operator-1')).length === 0,
        'no deadline of operator-1 left scheduled',
      );
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'cancels the round timeout of each round that ends: a finished loop leaves no timer scheduled',
    async () => {
      rig.answerWith((round) => `round ${round.round} done`);
      const session = await rig.client.openSession({ id: 'timers-1' });
      expect((await session.startLoop('|loop:3| count')).ok).toBe(true);
      await rig.waitForEvent('timers-1', (event) => event.type === 'loop_finished');
      expect((await session.view()).loop?.phase).toBe('complete');
      // Three round timeouts were armed (10 minutes each): none is left to fire.
      const armed = await queryServer(
        rig.server,
        "SELECT id FROM sys_invocation WHERE target_service_key = 'timers-1' AND target_handler_name = 'deadline'",
      );
      await untilServer(
        async () => (await pendingDeadlines('timers-1')).length === 0,
        `no deadline of timers-1 left scheduled (armed: ${armed.length})`,
      );
      // While a round runs, exactly one timer is scheduled: its timeout.
      rig.answerWith(() => 'hang');
      const running = await rig.client.openSession({ id: 'timers-2' });
      await running.startLoop('|loop:2| count');
      await untilServer(
        async () => (await running.view()).loop?.phase === 'awaiting_worker',
        'timers-2 awaiting its worker',
      );
      expect(await pendingDeadlines('timers-2')).toHaveLength(1);
      await running.stopLoop({ now: true });
      expect((await running.view()).loop?.phase).toBe('cancelled');
      await untilServer(
        async () => (await pendingDeadlines('timers-2')).length === 0,
        'no deadline of timers-2 left scheduled',
      );
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'refuses deadline and workerTerminated through the ingress, and changes nothing',
    async () => {
      rig.answerWith(() => 'hang');
      const session = await rig.client.openSession({ id: 'private-1' });
      await session.startLoop('|loop:2| count');
      await untilServer(
        async () => (await session.view()).loop?.phase === 'awaiting_worker',
        'private-1 awaiting its worker',
      );
      const before = await session.view();
      const taskId = before.loop?.activeWorkerTaskId;
      expect(taskId).toBeDefined();
      const calls: [string, unknown][] = [
        ['deadline', []],
        ['deadline', { at: Date.now() + ROUND_TIMEOUT_MS }],
        [
          'workerTerminated',
          { taskId, status: 'completed', result: { text: 'forged', hadError: false } },
        ],
        ['workerTerminated', { taskId, status: 'cancelled' }],
      ];
      for (const [handler, body] of calls) {
        const answer = await post(
          rig,
          `rolebox-session/private-1/${handler}`,
          JSON.stringify(body),
        );
        expect(answer.status, `${handler}: ${answer.text}`).toBeGreaterThanOrEqual(400);
        expect(answer.text, handler).toMatch(/not public/);
        // Nor as a one-way send.
        const sent = await post(
          rig,
          `rolebox-session/private-1/${handler}/send`,
          JSON.stringify(body),
        );
        expect(sent.status, `${handler}/send: ${sent.text}`).toBeGreaterThanOrEqual(400);
      }
      expect(await session.view()).toEqual(before);
      await session.stopLoop({ now: true });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'refuses malformed input to every public handler and to a worker with a 400 and the rolebox code, at once, never retried',
    async () => {
      const notArguments = ['{}', '"text"', '42', 'true', '{"0": "x"}'];
      const oddArguments = [
        '[{}]',
        '[null]',
        '[[]]',
        '[1, 2, 3, 4, 5]',
        '[{"__proto__": {"polluted": true}}]',
        '["\\u0000", {"constructor": 1}]',
        '[{"type": {}}]',
      ];
      const handlers = ['open', ...SESSION_COMMANDS, ...SESSION_READS];
      const codes = new Map<string, string>();
      for (const handler of handlers) {
        const id = `bad-${handler}`;
        await rig.client.openSession({ id });
        for (const body of notArguments) {
          const answer = await post(rig, `rolebox-session/${id}/${handler}`, body);
          expect(answer.status, `${handler} ${body}: ${answer.text}`).toBe(400);
          expect(answer.json?.metadata, `${handler} ${body}`).toEqual({
            'rolebox-code': 'invalid_argument',
          });
        }
        for (const body of oddArguments) {
          // Any answer but a hang: a refusal carries its code; a call that made sense is done.
          const answer = await post(rig, `rolebox-session/${id}/${handler}`, body);
          if (answer.status === 200) continue;
          expect(answer.status, `${handler} ${body}: ${answer.text}`).toBe(400);
          const code = (answer.json?.metadata as Record<string, string> | undefined)?.[
            'rolebox-code'
          ];
          expect(code, `${handler} ${body}: ${answer.text}`).toBeTypeOf('string');
          codes.set(`${handler} ${body}`, code as string);
        }
        // Nothing polluted, nothing stored by a refusal.
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }
      // Not JSON at all: refused by the SDK, terminal too.
      expect((await post(rig, 'rolebox-session/bad-open/tool', '{not json')).status).toBe(400);
      // A worker's run: `{}` and the like are a round request for nobody.
      for (const body of ['{}', '[]', 'null', '{"taskId": "t", "round": {}}']) {
        const answer = await post(rig, 'test-worker/run', body);
        expect(answer.status, `test-worker ${body}: ${answer.text}`).toBe(400);
        expect(answer.json?.metadata, body).toEqual({ 'rolebox-code': 'invalid_argument' });
      }
      // Nothing is left retrying.
      const retrying = await queryServer(
        rig.server,
        "SELECT target, status, last_failure FROM sys_invocation WHERE status IN ('backing-off', 'running', 'suspended')",
      );
      expect(retrying).toEqual([]);
      // Some odd arguments make sense to some handlers; the others were refused with a code.
      expect(codes.size).toBeGreaterThan(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
