// Approvals on Restate (issue 25): approve, reject and their refusals through the ingress,
// and a session's wait deadline (`limits.waitUserTimeoutMs`) fired by Restate's timer, a
// delayed `deadline` call to the session's own object. A real restate-server from npm; the
// waits are for the server, on its own clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineFunction, RoleboxError, type RuntimeEvent } from '../src/index.js';
import { rejectionOf } from './support/errors.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import {
  queryServer,
  type RestateRig,
  restateUnavailable,
  startRestateRig,
  untilServer,
} from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate approval tests: ${unavailable}`);
/** Long enough for the calls before it on a loaded machine, short enough to wait out. */
const WAIT_LIMIT_MS = 3_000;
const START: RuntimeEvent = {
  type: 'session_started',
  availableSkills: [{ name: 'write' }],
  initialSkill: 'write',
};
const DEPLOY = defineFunction({
  name: 'deploy',
  gate: 'signal_observed(answer)',
  continue_until: 'state_eq(step=done)',
});

/** A function whose requests expire on their own (`approval_timeout`), escalating. */
const TIMED = defineFunction({
  name: 'timed',
  gate: 'signal_observed(answer)',
  approval_timeout: WAIT_LIMIT_MS,
});

describe.skipIf(unavailable !== undefined)('rolebox on Restate: approvals', () => {
  let rig: RestateRig;

  beforeAll(async () => {
    rig = await startRestateRig({
      functions: [DEPLOY, TIMED],
      limits: { waitUserTimeoutMs: WAIT_LIMIT_MS },
    });
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  /** A session with deploy gated on its first request, `deploy:r1`. */
  async function gatedOnRequest(id: string) {
    const session = await rig.client.openSession({ id });
    await session.activate('deploy');
    const opened = await session.signal({
      type: 'need_approval',
      payload: { reason: 'step 1: migrate db' },
    });
    expect(opened.requests).toEqual(['deploy:r1']);
    const deploy = async () => (await session.view()).functions.find((fn) => fn.name === 'deploy');
    expect(await deploy()).toMatchObject({ phase: 'gated', version: 1 });
    return { session, deploy };
  }

  it(
    'approves through the ingress: the receipt names the request, the view shows it answered and the gate open',
    async () => {
      const { session, deploy } = await gatedOnRequest('approve-1');
      const receipt = await session.approve('deploy:r1', {
        by: 'ana',
        note: 'backed up',
        seenVersion: 1,
      });
      expect(receipt.requests).toEqual(['deploy:r1']);
      const after = await deploy();
      expect(after?.phase).toBe('active');
      expect(after?.requests).toEqual([
        expect.objectContaining({
          id: 'deploy:r1',
          status: 'answered',
          answeredBy: 'ana',
          note: 'backed up',
          seenVersion: 1,
          // approve over the ingress is still the host's: recorded as such.
          answeredByHost: true,
        }),
      ]);
      // Answered once: the same answer again is stale, and so is an id never opened.
      for (const id of ['deploy:r1', 'deploy:r9']) {
        const stale = await rejectionOf(session.approve(id, { by: 'ana' }));
        expect(stale).toBeInstanceOf(RoleboxError);
        expect(stale.code, stale.message).toBe('stale_answer');
        expect(stale.message).toContain(id);
      }
      expect(await deploy()).toEqual(after);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'refuses an approval that saw an older version with stale_approval over the ingress, then a rejection keeps the gate closed',
    async () => {
      const { session, deploy } = await gatedOnRequest('reject-1');
      // The agent says more after the request: the function changed since the reviewer looked.
      await session.signal({ type: 'progress', payload: { note: 'also dropping tables' } });
      const before = await deploy();
      expect(before?.version).toBe(2);
      const stale = await rejectionOf(session.approve('deploy:r1', { seenVersion: 1 }));
      expect(stale.code, stale.message).toBe('stale_approval');
      expect(stale.message).toContain('deploy:r1');
      // Refused: nothing changed, the request is still open.
      expect(await deploy()).toEqual(before);

      const receipt = await session.reject('deploy:r1', { by: 'ops', reason: 'not today' });
      expect(receipt.requests).toEqual(['deploy:r1']);
      const after = await deploy();
      expect(after?.phase).toBe('gated');
      expect(after?.requests).toEqual([
        expect.objectContaining({
          id: 'deploy:r1',
          status: 'rejected',
          answeredBy: 'ops',
          note: 'not today',
          answeredByHost: true,
        }),
      ]);
      const again = await rejectionOf(session.reject('deploy:r1', { reason: 'twice' }));
      expect(again.code).toBe('stale_answer');
      // A rejection needs a reason: refused before anything is sent on.
      const noReason = await rejectionOf(session.reject('deploy:r1', { reason: '' }));
      expect(noReason.code).toBe('invalid_argument');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "fires a session's wait deadline with Restate's timer: wait_expired, the session in error; an answer in time disarms it",
    async () => {
      const expiring = await rig.client.openSession({ id: 'wait-1' });
      const answered = await rig.client.openSession({ id: 'wait-2' });
      await expiring.send(START);
      await answered.send(START);
      const waiting = await expiring.view();
      expect(waiting.phase).toBe('waiting_user');
      expect(typeof waiting.waitExpiresAt).toBe('number');
      await answered.send({ type: 'user_submitted_input', text: 'here you are' });
      expect((await answered.view()).waitExpiresAt).toBeNull();

      // Nobody calls wait-1 again: only Restate's delayed call can end its wait.
      await rig.waitForEvent('wait-1', (event) => event.type === 'wait_expired');
      const expired = await expiring.view();
      expect(expired.phase).toBe('error');
      expect(expired.waitExpiresAt).toBeNull();
      expect(expired.errorReason).toContain('wait_expired');
      expect(expired.errorReason).toContain(
        new Date(waiting.waitExpiresAt as number).toISOString(),
      );
      // Once, for the deadline the session set (the sink's batches are one per step).
      expect(rig.eventsOf('wait-1').filter((event) => event.type === 'wait_expired')).toEqual([
        {
          type: 'wait_expired',
          sessionId: 'wait-1',
          waitingReason: waiting.waitingReason?.kind,
          expiresAt: waiting.waitExpiresAt,
        },
      ]);

      // wait-2 answered in time: well past its would-be deadline, nothing expired.
      await new Promise((resolve) => setTimeout(resolve, WAIT_LIMIT_MS + 1_000));
      expect(rig.eventsOf('wait-2').some((event) => event.type === 'wait_expired')).toBe(false);
      expect((await answered.view()).phase).not.toBe('error');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'fires a wait deadline that fell due while the endpoint was down, once it is back',
    async () => {
      const session = await rig.client.openSession({ id: 'wait-down' });
      await session.send(START);
      const { waitExpiresAt } = await session.view();
      await rig.stopEndpoint();
      // The deadline's call came due and could not be delivered: Restate keeps retrying it.
      await untilServer(async () => {
        const rows = await queryServer(
          rig.server,
          "SELECT status FROM sys_invocation WHERE target_service_key = 'wait-down' AND target_handler_name = 'deadline'",
        );
        return rows.some((row) => row.status === 'backing-off' || row.status === 'running');
      }, 'a deadline call for wait-down that is being retried');
      await rig.startEndpoint();
      await rig.waitForEvent('wait-down', (event) => event.type === 'wait_expired');
      const expired = await session.view();
      expect(expired.phase).toBe('error');
      expect(expired.errorReason).toContain(new Date(waitExpiresAt as number).toISOString());
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  /** A session with `timed` gated on request timed:r1 (deadline: WAIT_LIMIT_MS after it opened). */
  async function timedRequest(id: string) {
    const session = await rig.client.openSession({ id });
    await session.activate('timed');
    const opened = await session.signal({ type: 'need_approval', payload: { reason: 'deploy' } });
    expect(opened.requests).toEqual(['timed:r1']);
    const timed = async () => (await session.view()).functions.find((fn) => fn.name === 'timed');
    const deadline = (await timed())?.requests[0]?.expiresAt;
    expect(typeof deadline).toBe('number');
    return { session, timed, deadline: deadline as number };
  }

  /** Whether a host event is the expiry of a request (its `signal` receipt says so). */
  const isExpiry = (event: Record<string, unknown>) =>
    event.type === 'signal' &&
    (event.receipt as { expired?: boolean } | undefined)?.expired === true;

  it(
    "expires a function's request at its approval_timeout with Restate's timer: escalate, the gate closed",
    async () => {
      const { timed, deadline } = await timedRequest('req-expire');
      // Nobody calls req-expire again: only Restate's delayed call can expire the request.
      await rig.waitForEvent('req-expire', isExpiry);
      const after = await timed();
      expect(after?.phase).toBe('gated');
      expect(after?.requests[0]).toMatchObject({
        id: 'timed:r1',
        status: 'expired',
        note: 'expired',
      });
      // Expired by the step Restate's delayed call ran: at its own clock, not before the deadline.
      expect(after?.requests[0]?.answeredAt).toBeGreaterThanOrEqual(deadline);
      expect(Object.keys(after?.signals ?? {})).toContain('escalate');
      expect(rig.eventsOf('req-expire').filter(isExpiry)).toHaveLength(1);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'moves a deadline through the ingress (extendRequest): not expired at the old time, expired at the new one; refusals change nothing',
    async () => {
      const { session, timed, deadline } = await timedRequest('req-extend');
      const receipt = await session.extendRequest('timed:r1', { timeoutMs: 60_000, by: 'ana' });
      expect(receipt.requestId).toBe('timed:r1');
      expect(receipt.expiresAt).toBeGreaterThan(deadline);
      expect((await timed())?.requests[0]).toMatchObject({
        status: 'open',
        expiresAt: receipt.expiresAt,
        extendedBy: 'ana',
      });
      const before = await timed();
      for (const [id, options, code] of [
        ['timed:r9', { timeoutMs: 1_000 }, 'stale_answer'],
        ['timed:r1', { timeoutMs: 0 }, 'invalid_argument'],
      ] as const) {
        const refused = await rejectionOf(session.extendRequest(id, options));
        expect(refused).toBeInstanceOf(RoleboxError);
        expect(refused.code, refused.message).toBe(code);
      }
      expect(await timed()).toEqual(before);
      // Past the old deadline (the old timer may still call the object): nothing expired.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, deadline - Date.now()) + 1_000),
      );
      expect(rig.eventsOf('req-extend').some(isExpiry)).toBe(false);
      expect((await timed())?.requests[0]?.status).toBe('open');
      // Brought forward: it expires at the new time.
      const soon = await session.extendRequest('timed:r1', { timeoutMs: 500 });
      await rig.waitForEvent('req-extend', isExpiry);
      const expired = (await timed())?.requests[0];
      expect(expired?.status).toBe('expired');
      expect(expired?.answeredAt).toBeGreaterThanOrEqual(soon.expiresAt);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
