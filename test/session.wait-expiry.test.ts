// Waits for the user that expire (issue 25 item 4, sessions): with `limits.waitUserTimeoutMs`
// a session in `waiting_user` unanswered for that long gets `wait_expired` and ends in
// `error`; an answer in time cancels it. On the simulated clock, across a restart on SQLite
// and across passivation; on the real clock, with timers that fire a millisecond early.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Clock,
  createRolebox,
  type HostEvent,
  MemorySnapshotStore,
  type RuntimeEvent,
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
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { earlyClock } from './support/early-clock.js';
import { errorOf, refusedOnActivation } from './support/errors.js';
import { follow, ROUTES, sessionHarness } from './support/sessions.js';

const LIMIT = 60_000;
const START: RuntimeEvent = {
  type: 'session_started',
  availableSkills: [{ name: 'write' }],
  initialSkill: 'write',
};

/** The `wait_expired` host events among `events`. */
const expiries = (events: readonly HostEvent[]) =>
  events.filter((event) => event.type === 'wait_expired');

describe('limits.waitUserTimeoutMs', () => {
  it('is off by default: a wait has no deadline and never expires', async () => {
    const h = await sessionHarness();
    h.session.send(START);
    expect(h.session.view()).toMatchObject({ phase: 'waiting_user', waitExpiresAt: null });
    h.clock.advance(365 * 24 * 3_600_000);
    expect(h.where()).toBe('waiting_user.input');
    expect(expiries(h.events)).toEqual([]);
    await h.rb.stop();
  });

  it('refuses a value that is not a positive whole number of ms, naming it; null is off', async () => {
    for (const bad of [0, -5, 1.5, '60s', Number.POSITIVE_INFINITY]) {
      const error = errorOf(() => createRolebox({ limits: { waitUserTimeoutMs: bad as number } }));
      expect(error.code, String(bad)).toBe('invalid_argument');
      expect(error.message).toContain('limits.waitUserTimeoutMs');
    }
    expect(() => createRolebox({ limits: { waitUserTimeoutMs: null } })).not.toThrow();
  });

  for (const [where, route] of Object.entries(ROUTES).filter(([name]) =>
    name.startsWith('waiting_user.'),
  )) {
    it(`${where}: expires at its deadline, not a millisecond before, and the session fails`, async () => {
      const h = await sessionHarness({ limits: { waitUserTimeoutMs: LIMIT } });
      follow(h, route);
      const began = h.clock.now();
      const view = h.session.view();
      expect(view.waitExpiresAt).toBe(began + LIMIT);
      h.clock.advance(LIMIT - 1);
      expect(h.where()).toBe(where);
      h.clock.advance(1);
      expect(h.where()).toBe('error');
      const after = h.session.view();
      expect(after.waitExpiresAt).toBeNull();
      expect(after.waitingReason).toBeNull();
      expect(after.errorReason).toContain(
        `wait_expired: nobody answered the wait for ${where.slice(13)}`,
      );
      expect(after.errorReason).toContain(new Date(began + LIMIT).toISOString());
      expect(expiries(h.events)).toEqual([
        {
          type: 'wait_expired',
          sessionId: 'S',
          waitingReason: where.slice(13),
          expiresAt: began + LIMIT,
        },
      ]);
      const history = h.rb.system.system.get('session:S')?.getSnapshot().context.history;
      expect(history.at(-1)).toEqual({ at: began + LIMIT, event: { type: 'wait_expired' } });
      await h.rb.stop();
    });
  }

  it('fails closed: a step awaiting approval never runs once its wait expired', async () => {
    const h = await sessionHarness({ limits: { waitUserTimeoutMs: LIMIT } });
    follow(h, ROUTES['waiting_user.approve_step'] as RuntimeEvent[]);
    h.clock.advance(LIMIT);
    const late = errorOf(() =>
      h.session.send({ type: 'user_approved_next_step', decisionId: 'd1' }),
    );
    expect(late.code).toBe('event_not_allowed');
    expect(late.message).toContain('phase error');
    expect(h.effects().some((effect) => effect.type === 'run_worker')).toBe(false);
    await h.rb.stop();
  });

  it('an answer in time cancels the deadline; the next wait gets its own, from its start', async () => {
    const h = await sessionHarness({ limits: { waitUserTimeoutMs: LIMIT } });
    h.session.send(START);
    h.clock.advance(LIMIT - 1);
    h.session.send({ type: 'user_submitted_input', text: 'a poem' });
    expect(h.session.view()).toMatchObject({ phase: 'running', waitExpiresAt: null });
    h.clock.advance(10 * LIMIT);
    expect(h.where()).toBe('running');
    const asked = h.clock.now();
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'ask_user', message: 'rhymed?' },
    });
    expect(h.session.view().waitExpiresAt).toBe(asked + LIMIT);
    // A new question while waiting is a new wait: its deadline starts again.
    h.clock.advance(LIMIT / 2);
    h.session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd2', kind: 'ask_user', message: 'how long?' },
    });
    expect(h.session.view().waitExpiresAt).toBe(asked + LIMIT / 2 + LIMIT);
    h.clock.advance(LIMIT - 1);
    expect(h.where()).toBe('waiting_user.input');
    h.clock.advance(1);
    expect(h.where()).toBe('error');
    expect(expiries(h.events)).toHaveLength(1);
    await h.rb.stop();
  });

  it('a host cannot expire a wait early: wait_expired is refused before the deadline, changing nothing', async () => {
    const h = await sessionHarness({ limits: { waitUserTimeoutMs: LIMIT } });
    h.session.send(START);
    const deadline = h.session.view().waitExpiresAt as number;
    const before = h.persisted();
    const early = errorOf(() => h.session.send({ type: 'wait_expired' }));
    expect(early.code).toBe('event_not_allowed');
    expect(early.message).toContain(`this wait expires at ${new Date(deadline).toISOString()}`);
    expect(h.persisted()).toBe(before);
    expect(errorOf(() => h.session.send({ type: 'wait_expired', at: 1 } as never)).code).toBe(
      'invalid_event',
    );
    const off = await sessionHarness();
    off.session.send(START);
    expect(errorOf(() => off.session.send({ type: 'wait_expired' })).message).toContain(
      'this wait has no deadline: limits.waitUserTimeoutMs is not set',
    );
    await h.rb.stop();
    await off.rb.stop();
  });

  it('with strictSessions, an early wait_expired fails the session as any refused event does', async () => {
    const h = await sessionHarness({ limits: { waitUserTimeoutMs: LIMIT }, strictSessions: true });
    h.session.send(START);
    h.session.send({ type: 'wait_expired' });
    expect(h.session.view().errorReason).toContain('this wait expires at');
    expect(expiries(h.events)).toEqual([]);
    await h.rb.stop();
  });
});

/** A rolebox on `store` and `clock` with the wait limit, recording host events. */
async function bootOn(store: SnapshotStore, clock: Clock, options: { idleMs?: number } = {}) {
  const rb = createRolebox({
    clock,
    store,
    ids: seededIdSource(7),
    limits: { waitUserTimeoutMs: LIMIT },
    ...(options.idleMs ? { idleMs: options.idleMs } : {}),
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  const report = await rb.start();
  return { rb, events, report };
}

describe('wait deadlines across restarts and passivation', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('fire after a restart on SQLite: the stored wake-up wakes the session at its deadline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rolebox-waits-'));
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const clock = new SimulatedClock(1_000);
    const first = await bootOn(new SqliteSnapshotStore(path), clock);
    const session = await first.rb.openSession({ id: 'S' });
    session.send(START);
    const deadline = session.view().waitExpiresAt as number;
    expect(deadline).toBe(1_000 + LIMIT);
    await first.rb.stop();

    clock.advance(LIMIT / 2);
    const second = await bootOn(new SqliteSnapshotStore(path), clock);
    expect(second.report.wakeUps).toBe(1);
    clock.advance(LIMIT / 2 - 1);
    await settle(10);
    expect(second.events).toEqual([]);
    clock.advance(1);
    await settle(10);
    expect(second.events.map((event) => event.type)).toEqual(['session_activated', 'wait_expired']);
    expect(second.events[0]).toMatchObject({ trigger: 'wake_up' });
    await second.rb.flush();
    await second.rb.stop();

    // Saved: a third process finds it in error, and does not expire it again.
    const third = await bootOn(new SqliteSnapshotStore(path), clock);
    expect(third.report.wakeUps).toBe(0);
    const view = third.rb.session('S').view();
    expect(view).toMatchObject({ phase: 'error', waitExpiresAt: null });
    expect(expiries(third.events)).toEqual([]);
    await third.rb.stop();
  });

  it('a deadline that passed while no process ran fires when the session is next used, before the late answer', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    const first = await bootOn(store, clock);
    (await first.rb.openSession({ id: 'S' })).send(START);
    await first.rb.stop();
    clock.advance(2 * LIMIT);
    // Started with the timers of `start()` not yet run: the user's answer activates it first.
    const second = createRolebox({ clock, store, limits: { waitUserTimeoutMs: LIMIT } });
    const events: HostEvent[] = [];
    second.on('*', (event) => events.push(event));
    await second.start();
    const late = errorOf(() =>
      second.session('S').send({ type: 'user_submitted_input', text: 'sorry, here' }),
    );
    expect(late.code).toBe('event_not_allowed');
    expect(events.map((event) => event.type)).toEqual(['session_activated', 'wait_expired']);
    await second.stop();
  });

  it('wake a passivated session at its deadline, which then expires', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    const h = await bootOn(store, clock, { idleMs: 1_000 });
    const session = await h.rb.openSession({ id: 'S' });
    session.send(START);
    clock.advance(30_000);
    await settle(10);
    expect(h.events.filter((event) => event.type === 'session_passivated')).toHaveLength(1);
    clock.advance(LIMIT - 30_000 - 1);
    await settle(10);
    expect(h.events.some((event) => event.type === 'session_activated')).toBe(false);
    clock.advance(1);
    await settle(10);
    expect(
      h.events.filter(
        (event) => event.type === 'session_activated' || event.type === 'wait_expired',
      ),
    ).toEqual([
      { type: 'session_activated', sessionId: 'S', trigger: 'wake_up' },
      { type: 'wait_expired', sessionId: 'S', waitingReason: 'input', expiresAt: 1_000 + LIMIT },
    ]);
    expect(h.rb.session('S').view().phase).toBe('error');
    await h.rb.stop();
  });

  it('an answer to a passivated session in time leaves no deadline behind', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    const h = await bootOn(store, clock, { idleMs: 1_000 });
    (await h.rb.openSession({ id: 'S' })).send(START);
    clock.advance(30_000);
    await settle(10);
    h.rb.session('S').send({ type: 'user_submitted_input', text: 'go' });
    clock.advance(5 * LIMIT);
    await settle(10);
    expect(expiries(h.events)).toEqual([]);
    expect(h.rb.session('S').view().phase).toBe('running');
    await h.rb.stop();
  });
});

describe('a stored record checked whole', () => {
  it('refuses a deadline on a session that does not wait, naming it, and restores nothing', async () => {
    const clock = new SimulatedClock(1_000);
    const store = new MemorySnapshotStore();
    const first = await bootOn(store, clock);
    const session = await first.rb.openSession({ id: 'S' });
    session.send(START);
    session.send({ type: 'user_submitted_input', text: 'go' });
    await first.rb.stop();
    const record = JSON.parse(store.records.get('S') as string);
    delete record.checksum; // edited by hand below: checked in full, as a record with no checksum is
    record.snapshot.context.waitExpiresAt = 5_000;
    store.records.set('S', JSON.stringify(record));
    const second = await bootOn(store, clock);
    refusedOnActivation(second.rb, 'waitExpiresAt 5000 is set while the session does not wait');
    expect(second.events.some((event) => event.type === 'session_activated')).toBe(false);
    await second.rb.stop();
  });
});

describe('session machine 4 → 5', () => {
  it('a stored wait from before keeps no deadline; the next wait gets one', () => {
    const migrate = MACHINE_MIGRATIONS.session[4];
    const old = {
      status: 'active',
      value: { waiting_user: 'input' },
      context: { sessionId: 'S', waitingReason: { kind: 'input' } },
    };
    expect(migrate?.(old)).toEqual({ ...old, context: { ...old.context, waitExpiresAt: null } });
    expect(migrate?.({ children: {} }), 'a record without a context').toEqual({ children: {} });
  });

  it('a version-4 record waiting for the user restores and works with the limit on', async () => {
    const clock = new SimulatedClock(1_000);
    const store = new MemorySnapshotStore();
    const first = await bootOn(store, clock);
    (await first.rb.openSession({ id: 'S' })).send(START);
    await first.rb.stop();
    // Written back as version 4 wrote it: no waitExpiresAt, session machine version 4.
    const record = JSON.parse(store.records.get('S') as string);
    delete record.checksum; // edited by hand below: checked in full, as a record with no checksum is
    record.machineVersions.session = 4;
    delete record.snapshot.context.waitExpiresAt;
    store.records.set('S', JSON.stringify(record));

    const second = await bootOn(store, clock);
    const session = second.rb.session('S');
    expect(session.view()).toMatchObject({ phase: 'waiting_user', waitExpiresAt: null });
    clock.advance(10 * LIMIT);
    expect(session.view().phase).toBe('waiting_user');
    session.send({ type: 'user_submitted_input', text: 'hello' });
    session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'ask_user', message: 'more?' },
    });
    expect(session.view().waitExpiresAt).toBe(clock.now() + LIMIT);
    await second.rb.stop();
  });
});

describe('wait deadlines on the real clock', () => {
  it('timers that fire a millisecond early lose no expiry and send none early (30 sessions at once)', async () => {
    const SESSIONS = 30;
    const limitMs = 40;
    const { clock, fired } = earlyClock();
    const rb = createRolebox({ clock, limits: { waitUserTimeoutMs: limitMs } });
    /** By session: how late the expiry came after its deadline, and the deadline. */
    const expired = new Map<string, { lateBy: number; expiresAt: number }>();
    let allDone: () => void = () => {};
    const done = new Promise<void>((resolve) => (allDone = resolve));
    rb.on('wait_expired', (event) => {
      expired.set(event.sessionId, {
        lateBy: Date.now() - event.expiresAt,
        expiresAt: event.expiresAt,
      });
      if (expired.size === SESSIONS) allDone();
    });
    await rb.start();
    for (let i = 0; i < SESSIONS; i++) (await rb.openSession({ id: `S${i}` })).send(START);
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Each needs 40 ms; 10 s leaves room for a loaded machine.
    await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
    clearTimeout(timer);
    expect(expired.size).toBe(SESSIONS);
    expect(fired.early, 'the clock did fire timers early').toBeGreaterThan(0);
    for (const [sessionId, { lateBy, expiresAt }] of expired) {
      expect(lateBy, sessionId).toBeGreaterThanOrEqual(0);
      expect(rb.session(sessionId).view().phase).toBe('error');
      const history = rb.system.system.get(`session:${sessionId}`)?.getSnapshot().context.history;
      expect(history.at(-1)).toMatchObject({ event: { type: 'wait_expired' } });
      expect(history.at(-1).at, sessionId).toBeGreaterThanOrEqual(expiresAt);
    }
    await rb.stop();
  });
});

describe('wait deadlines in a Restate session step (the engine, without a server)', () => {
  it('a step answers the deadline as its wake-up; the step at that time expires the wait', async () => {
    const engine = new SessionStepEngine({ limits: { waitUserTimeoutMs: LIMIT } }, false);
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
      command: (session) => session.send(START),
    });
    expect(opened.wakeAt).toBe(1_000 + LIMIT);
    const due = await step(1_000 + LIMIT, opened.state);
    expect(due.events).toContainEqual({
      type: 'wait_expired',
      sessionId: 'S',
      waitingReason: 'input',
      expiresAt: 1_000 + LIMIT,
    });
    expect(due.wakeAt).toBeUndefined();
    const after = await step(1_000 + 2 * LIMIT, due.state, (session) => {
      expect(session.view()).toMatchObject({ phase: 'error', waitExpiresAt: null });
    });
    expect(after.events.filter((event) => event.type === 'wait_expired')).toEqual([]);
  });
});
