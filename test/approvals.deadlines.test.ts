// Deadlines on function approval requests (issue 25 item 4, the function half): a function's
// `approval_timeout` (or a pausing signal's `payload.timeoutMs`) gives each request it opens
// an `expiresAt`; when it comes and the request is still open, the request ends `expired`
// and becomes an `escalate` signal (default) or a rejection (`on_timeout: reject`). Never an
// approval. On the simulated clock, across a restart on SQLite, on a passivated session, and
// on the real clock with timers that fire a millisecond early.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Clock,
  createRolebox,
  defineFunction,
  type FunctionSpec,
  type HostEvent,
  MemorySnapshotStore,
  parseFunctionMarkdown,
  type SnapshotStore,
} from '../src/index.js';
import { MACHINE_MIGRATIONS } from '../src/persistence/machine-migrations.js';
import {
  EMPTY_SESSION_STATE,
  type SessionState,
  SessionStepEngine,
} from '../src/restate/session-step.js';
import type { SessionHandle } from '../src/rolebox/session-handle.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { replay, SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { earlyClock } from './support/early-clock.js';
import { errorOf, refusedOnActivation } from './support/errors.js';
import { bootRecording, phaseOf, requestsOf } from './support/rolebox.js';

const T = 15 * 60_000;
const DEPLOY: FunctionSpec = {
  name: 'deploy',
  gate: 'signal_observed(answer)',
  approval_timeout: '15m',
};
const REJECTING: FunctionSpec = { ...DEPLOY, name: 'guarded', on_timeout: 'reject' };
const NO_TIMEOUT: FunctionSpec = { name: 'review', gate: 'signal_observed(answer)' };
const NO_TIMEOUT_DEPLOY: FunctionSpec = { name: 'deploy', gate: 'signal_observed(answer)' };

/** A rolebox on `store` (none: in memory only) and `clock`, recording host events. */
const boot = (options: { store?: SnapshotStore; clock?: Clock; specs?: FunctionSpec[] } = {}) =>
  bootRecording({ ...options, specs: options.specs ?? [DEPLOY, REJECTING, NO_TIMEOUT] });

/** The `signal` host events a request's expiry sent. */
const expiries = (events: readonly HostEvent[]) =>
  events.flatMap((event) => (event.type === 'signal' && event.receipt.expired ? [event] : []));

describe('approval_timeout in a definition', () => {
  it('takes ms or a written duration; on_timeout defaults to escalate', () => {
    for (const [written, ms] of [
      [900_000, 900_000],
      ['15m', T],
      ['15 min', T],
      ['30s', 30_000],
      ['2h', 7_200_000],
      ['1d', 86_400_000],
      ['500ms', 500],
    ] as const) {
      const definition = defineFunction({ name: 'x', approval_timeout: written });
      expect(definition.approvalTimeoutMs, String(written)).toBe(ms);
      expect(definition.onTimeout).toBeUndefined();
    }
    expect(defineFunction({ name: 'x', on_timeout: 'reject' }).onTimeout).toBe('reject');
    expect(defineFunction({ name: 'x' }).approvalTimeoutMs).toBeUndefined();
  });

  it('refuses a bad approval_timeout or on_timeout with invalid_function_definition naming the value', () => {
    for (const bad of [0, -5, 1.5, '15 minutes', 'soon', '', true, [], '2y', 400 * 86_400_000]) {
      const error = errorOf(() => defineFunction({ name: 'x', approval_timeout: bad as never }));
      expect(error.code, String(bad)).toBe('invalid_function_definition');
      expect(error.message, String(bad)).toContain('approval_timeout: must be a positive whole');
      expect(error.details.issues).toEqual([
        expect.objectContaining({ field: 'approval_timeout', value: bad }),
      ]);
    }
    const error = errorOf(() => defineFunction({ name: 'x', on_timeout: 'ignore' as never }));
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toContain('on_timeout: must be escalate or reject (got "ignore")');
  });

  it('reads from the markdown format, and refuses a bad one there too', () => {
    const text = (timeout: string) =>
      `---\nname: deploy\ngate: signal_observed(answer)\napproval_timeout: ${timeout}\non_timeout: reject\n---\nDeploy.\n`;
    const definition = parseFunctionMarkdown(text('15 min'), { source: 'deploy.md' });
    expect(definition).toMatchObject({ approvalTimeoutMs: T, onTimeout: 'reject' });
    expect(parseFunctionMarkdown(text('60000')).approvalTimeoutMs).toBe(60_000);
    const error = errorOf(() => parseFunctionMarkdown(text('whenever'), { source: 'deploy.md' }));
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toContain('deploy.md');
    expect(error.message).toContain('approval_timeout');
    expect(error.message).toContain('"whenever"');
  });
});

describe('a request with a deadline, on the simulated clock', () => {
  it('carries its deadline in the receipt and the view, and expires at it, not a millisecond before (escalate)', async () => {
    const { rb, clock, events } = await boot();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    const opened = clock.now();
    const receipt = session.signal({ type: 'need_approval', payload: { reason: 'migrate db' } });
    const deadline = opened + T;
    expect(receipt.deadlines).toEqual({ 'deploy:r1': deadline });
    expect(receipt.text).toBe(
      `signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request deploy:r1 (expires ${new Date(deadline).toISOString()})`,
    );
    expect(requestsOf(session, 'deploy')).toEqual([
      expect.objectContaining({
        id: 'deploy:r1',
        status: 'open',
        expiresAt: deadline,
        onTimeout: 'escalate',
      }),
    ]);
    clock.advance(T - 1);
    expect(requestsOf(session, 'deploy')[0]?.status).toBe('open');
    expect(expiries(events)).toEqual([]);
    clock.advance(1);
    const [request] = requestsOf(session, 'deploy');
    expect(request).toMatchObject({ status: 'expired', answeredAt: deadline, note: 'expired' });
    expect(request?.answeredBy).toBeUndefined();
    // Never an approval: the gate stays closed, through idle too.
    expect(phaseOf(session, 'deploy')).toBe('gated');
    expect(session.idle().gated).toEqual(['deploy']);
    const [escalation] = expiries(events);
    expect(escalation).toMatchObject({
      sessionId: 'S',
      recordedOn: ['deploy'],
      receipt: {
        type: 'escalate',
        requests: ['deploy:r1'],
        text: 'signal: escalate acknowledged | recorded on 1 function(s) | → satisfies continue_until condition, expired deploy:r1',
      },
      payload: {
        requestId: 'deploy:r1',
        reason: 'expired',
        request: { id: 'deploy:r1', status: 'open', payload: { reason: 'migrate db' } },
      },
    });
    expect(expiries(events)).toHaveLength(1);
    // The function's ledger holds the escalation, as conditions see it.
    const fn = session.view().functions.find((entry) => entry.name === 'deploy');
    expect(Object.keys(fn?.signals ?? {})).toContain('escalate');
    await rb.stop();
  });

  it('an expired request can no longer be approved: a named answer is stale, an unnamed one opens nothing', async () => {
    const { rb, clock } = await boot();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    clock.advance(T);
    const late = errorOf(() => session.approve('deploy:r1', { by: 'ops' }));
    expect(late.code).toBe('stale_answer');
    expect(late.message).toContain('"deploy:r1" is unknown or already resolved');
    session.signal({ type: 'answer' });
    expect(phaseOf(session, 'deploy')).toBe('gated');
    // A new request, answered in time, opens the gate.
    session.signal({ type: 'need_approval' });
    session.approve('deploy:r2');
    expect(phaseOf(session, 'deploy')).toBe('active');
    await rb.stop();
  });

  it('answered before its deadline: no expiry, ever', async () => {
    const { rb, clock, events } = await boot();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    clock.advance(T - 1);
    session.approve('deploy:r1', { by: 'ops' });
    clock.advance(10 * T);
    expect(expiries(events)).toEqual([]);
    expect(requestsOf(session, 'deploy')[0]?.status).toBe('answered');
    expect(requestsOf(session, 'deploy')[0]?.answeredBy).toBe('ops');
    expect(phaseOf(session, 'deploy')).toBe('active');
    await rb.stop();
  });

  it('on_timeout: reject ends the request as a rejection with reason expired', async () => {
    const { rb, clock, events } = await boot();
    const session = await rb.openSession({ id: 'S' });
    session.activate('guarded');
    session.signal({ type: 'blocked' });
    clock.advance(T);
    expect(requestsOf(session, 'guarded')[0]).toMatchObject({
      status: 'expired',
      onTimeout: 'reject',
      note: 'expired',
    });
    expect(expiries(events)).toEqual([
      expect.objectContaining({
        payload: { requestId: 'guarded:r1', reason: 'expired' },
        receipt: expect.objectContaining({
          type: 'revise_needed',
          text: expect.stringMatching(/, expired guarded:r1$/),
        }),
      }),
    ]);
    expect(phaseOf(session, 'guarded')).toBe('gated');
    await rb.stop();
  });

  it('payload.timeoutMs overrides the definition per request, and gives one to a function without approval_timeout', async () => {
    const { rb, clock, events } = await boot();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.activate('review');
    const receipt = session.signal({ type: 'need_approval', payload: { timeoutMs: 5_000 } });
    const opened = clock.now();
    expect(receipt.deadlines).toEqual({
      'deploy:r1': opened + 5_000,
      'review:r1': opened + 5_000,
    });
    clock.advance(5_000);
    expect(expiries(events).map((event) => event.recordedOn)).toEqual([['deploy'], ['review']]);
    // Without the override, review's requests have no deadline; deploy's have its 15 min.
    session.signal({ type: 'need_approval' });
    expect(requestsOf(session, 'review')[1]?.expiresAt).toBeUndefined();
    expect(requestsOf(session, 'deploy')[1]?.expiresAt).toBe(clock.now() + T);
    clock.advance(365 * 86_400_000);
    expect(requestsOf(session, 'review')[1]?.status).toBe('open');
    expect(requestsOf(session, 'deploy')[1]?.status).toBe('expired');
    await rb.stop();
  });

  it('refuses a bad payload.timeoutMs with invalid_signal_payload naming it, and changes nothing', async () => {
    const { rb } = await boot();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    const before = JSON.stringify(rb.system.getPersistedSnapshot());
    for (const bad of [0, -1, 1.5, '15m', null, 400 * 86_400_000]) {
      const error = errorOf(() =>
        session.signal({ type: 'need_approval', payload: { timeoutMs: bad } }),
      );
      expect(error.code, String(bad)).toBe('invalid_signal_payload');
      expect(error.message).toContain(`payload.timeoutMs must be a positive whole number`);
      expect(error.message).toContain(JSON.stringify(bad));
    }
    expect(JSON.stringify(rb.system.getPersistedSnapshot())).toBe(before);
    await rb.stop();
  });
});

describe('a recorded run with an expiry', () => {
  it('replays to the same snapshots; a machine that never expires is told apart', async () => {
    const clock = new SimulatedClock(1_000);
    const rb = createRolebox({ clock, journal: true, functions: [defineFunction(DEPLOY)] });
    await rb.start();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    clock.advance(T);
    session.signal({ type: 'need_approval' });
    session.approve('deploy:r2');
    const run = rb.recordRun();
    await rb.stop();
    expect(replay(run).ok).toBe(true);
    // Replayed on a definition without the timeout, the request opens with no deadline and
    // the recorded expiry finds nothing due: the replay tells the difference.
    expect(replay(run, { functions: [defineFunction(NO_TIMEOUT_DEPLOY)] }).ok).toBe(false);
  });
});

describe('deadlines across restarts and passivation', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('fire after a restart on SQLite at the deadline, once; a third process does not expire it again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rolebox-approval-deadlines-'));
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const clock = new SimulatedClock(1_000);
    const first = await boot({ store: new SqliteSnapshotStore(path), clock });
    const session = await first.rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    const deadline = clock.now() + T;
    await first.rb.flush();
    await first.rb.stop();

    clock.advance(T / 2);
    const second = await boot({ store: new SqliteSnapshotStore(path), clock });
    expect(second.report.wakeUps).toBe(1);
    clock.advance(T / 2 - 1);
    await settle(10);
    expect(second.events).toEqual([]);
    clock.advance(1);
    await settle(10);
    expect(second.events[0]).toMatchObject({ type: 'session_activated', trigger: 'wake_up' });
    expect(expiries(second.events)).toHaveLength(1);
    expect(requestsOf(second.rb.session('S'), 'deploy')[0]).toMatchObject({
      status: 'expired',
      answeredAt: deadline,
    });
    await second.rb.flush();
    await second.rb.stop();

    const third = await boot({ store: new SqliteSnapshotStore(path), clock });
    expect(third.report.wakeUps).toBe(0);
    clock.advance(T);
    await settle(10);
    const again = third.rb.session('S');
    expect(requestsOf(again, 'deploy')[0]?.status).toBe('expired');
    expect(phaseOf(again, 'deploy')).toBe('gated');
    expect(expiries(third.events)).toEqual([]);
    await third.rb.stop();
  });

  it('a deadline that passed while no process ran expires the request before a late answer', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    const first = await boot({ store, clock });
    const session = await first.rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    await first.rb.flush();
    await first.rb.stop();
    clock.advance(2 * T);
    const second = await boot({ store, clock });
    // The late answer activates the session, which expires the request first.
    const late = errorOf(() => second.rb.session('S').approve('deploy:r1'));
    expect(late.code).toBe('stale_answer');
    expect(expiries(second.events)).toHaveLength(1);
    expect(phaseOf(second.rb.session('S'), 'deploy')).toBe('gated');
    await second.rb.stop();
  });

  it('wake a passivated session at the deadline (passivateWhenWaiting, the default)', async () => {
    const store = new MemorySnapshotStore();
    const { rb, clock, events } = await boot({ store });
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    const deadline = clock.now() + T;
    clock.advance(1_000);
    await settle(10);
    const lifecycle = () =>
      events.flatMap((event) =>
        event.type === 'session_activated' || event.type === 'session_passivated'
          ? [`${event.type} ${'trigger' in event ? event.trigger : event.reason}`]
          : [],
      );
    expect(lifecycle()).toEqual(['session_passivated waiting']);
    expect(rb.sessions()).toEqual([]);
    clock.advance(deadline - clock.now() - 1);
    await settle(10);
    expect(lifecycle()).toEqual(['session_passivated waiting']);
    clock.advance(1);
    await settle(10);
    expect(lifecycle().slice(0, 2)).toEqual([
      'session_passivated waiting',
      'session_activated wake_up',
    ]);
    expect(expiries(events)).toHaveLength(1);
    expect(requestsOf(rb.session('S'), 'deploy')[0]).toMatchObject({
      status: 'expired',
      answeredAt: deadline,
    });
    await rb.stop();
  });

  it('an answer to a passivated session in time leaves no deadline behind', async () => {
    const store = new MemorySnapshotStore();
    const { rb, clock, events } = await boot({ store });
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    clock.advance(1_000);
    await settle(10);
    rb.session('S').approve('deploy:r1');
    clock.advance(5 * T);
    await settle(10);
    expect(expiries(events)).toEqual([]);
    expect(requestsOf(rb.session('S'), 'deploy')[0]?.status).toBe('answered');
    await rb.stop();
  });
});

describe('function machine 2 → 3', () => {
  it('is the identity: a request stored before keeps no deadline', () => {
    const migrate = MACHINE_MIGRATIONS.function[2];
    const old = { children: { 'fn:deploy': { src: 'function', snapshot: { value: 'gated' } } } };
    expect(migrate?.(old)).toEqual(old);
  });

  it('a version-2 record with an open request restores; the request never expires, the next one does', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    const first = await boot({ store, clock, specs: [NO_TIMEOUT] });
    const session = await first.rb.openSession({ id: 'S' });
    session.activate('review');
    session.signal({ type: 'need_approval' });
    await first.rb.flush();
    await first.rb.stop();
    const record = JSON.parse(store.records.get('S') as string);
    delete record.checksum; // edited by hand below: checked in full, as a record with no checksum is
    record.machineVersions.function = 2;
    store.records.set('S', JSON.stringify(record));

    const second = await boot({ store, clock, specs: [{ ...NO_TIMEOUT, approval_timeout: T }] });
    const restored = second.rb.session('S');
    expect(requestsOf(restored, 'review')[0]).toMatchObject({ id: 'review:r1', status: 'open' });
    expect(requestsOf(restored, 'review')[0]?.expiresAt).toBeUndefined();
    restored.signal({ type: 'need_approval' });
    clock.advance(T);
    expect(requestsOf(restored, 'review').map((request) => request.status)).toEqual([
      'open',
      'expired',
    ]);
    await second.rb.stop();
  });

  it('a stored request with a malformed deadline is refused, naming it', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    const first = await boot({ store, clock });
    const session = await first.rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval' });
    await first.rb.flush();
    await first.rb.stop();
    const record = JSON.parse(store.records.get('S') as string);
    delete record.checksum; // edited by hand below
    const fn = record.snapshot.children['fn:deploy'].snapshot.context;
    fn.kv.__approval_requests[0].expiresAt = 'tomorrow';
    store.records.set('S', JSON.stringify(record));
    const second = await boot({ store, clock });
    refusedOnActivation(second.rb, '__approval_requests');
    await second.rb.stop();
  });
});

describe('request deadlines on the real clock', () => {
  it('timers that fire a millisecond early lose no expiry and send none early (20 sessions)', async () => {
    const SESSIONS = 20;
    const { clock, fired } = earlyClock();
    const { rb } = await boot({ clock });
    const expiredAt = new Map<string, number>();
    let allDone: () => void = () => {};
    const done = new Promise<void>((resolve) => (allDone = resolve));
    rb.on('signal', (event) => {
      if (!event.receipt.expired) return;
      expiredAt.set(event.sessionId, Date.now());
      if (expiredAt.size === SESSIONS) allDone();
    });
    for (let i = 0; i < SESSIONS; i++) {
      const session = await rb.openSession({ id: `S${i}` });
      session.activate('deploy');
      session.signal({ type: 'need_approval', payload: { timeoutMs: 40 } });
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Each needs 40 ms; 10 s leaves room for a loaded machine.
    await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
    clearTimeout(timer);
    expect(expiredAt.size).toBe(SESSIONS);
    expect(fired.early, 'the clock did fire timers early').toBeGreaterThan(0);
    for (const [sessionId, at] of expiredAt) {
      const [request] = requestsOf(rb.session(sessionId), 'deploy');
      expect(request?.status, sessionId).toBe('expired');
      expect(request?.answeredAt, sessionId).toBeGreaterThanOrEqual(request?.expiresAt as number);
      expect(at, sessionId).toBeGreaterThanOrEqual(request?.expiresAt as number);
    }
    await rb.stop();
  });
});

describe('request deadlines in a Restate session step (the engine, without a server)', () => {
  it('a step answers the deadline as its wake-up; the step at that time expires the request', async () => {
    const engine = new SessionStepEngine({ functions: [defineFunction(DEPLOY)] }, false);
    const step = (now: number, state: SessionState, command?: (session: SessionHandle) => void) =>
      engine.run({
        sessionId: 'S',
        state,
        now,
        ids: seededIdSource(now),
        ...(command ? { command } : {}),
      });
    const opened = await engine.run({
      sessionId: 'S',
      state: EMPTY_SESSION_STATE,
      now: 1_000,
      ids: seededIdSource(1),
      open: {},
      command: (session) => {
        session.activate('deploy');
        session.signal({ type: 'need_approval' });
      },
    });
    expect(opened.wakeAt).toBe(1_000 + T);
    const early = await step(1_000 + T - 1, opened.state);
    expect(expiries(early.events)).toEqual([]);
    const due = await step(1_000 + T, opened.state);
    expect(expiries(due.events)).toHaveLength(1);
    expect(due.wakeAt).toBeUndefined();
    await step(1_000 + 2 * T, due.state, (session) => {
      expect(requestsOf(session, 'deploy')[0]?.status).toBe('expired');
    });
  });
});
