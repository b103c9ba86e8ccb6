// The host's per-request deadline (issue 25 item 4, "approve's per-request override"):
// `session.extendRequest(requestId, { timeoutMs, by? })` moves an open request's deadline to
// now + timeoutMs, recorded on the request; the timers and the wake-up index follow it.
// Refused, changing nothing, for a request that is not open (`stale_answer`) and a bad
// timeoutMs (`invalid_argument`). On the simulated clock, across a restart on SQLite, on a
// passivated session and in a Restate session step.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRolebox,
  defineFunction,
  type FunctionSpec,
  type HostEvent,
  MemorySnapshotStore,
  type SnapshotStore,
} from '../src/index.js';
import { EMPTY_SESSION_STATE, SessionStepEngine } from '../src/restate/session-step.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { replay, SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { errorOf, refusedOnActivation } from './support/errors.js';
import { bootRecording, phaseOf, requestsOf } from './support/rolebox.js';

const MIN = 60_000;
const T = 15 * MIN;
const DEPLOY: FunctionSpec = {
  name: 'deploy',
  gate: 'signal_observed(answer)',
  approval_timeout: '15m',
};
const REVIEW: FunctionSpec = {
  name: 'review',
  gate: 'signal_observed(answer)',
  on_timeout: 'reject',
};

const boot = (options: { store?: SnapshotStore; clock?: SimulatedClock } = {}) =>
  bootRecording({ specs: [DEPLOY, REVIEW], ...options });

/** The ids of the requests whose expiry sent a signal. */
const expired = (events: readonly HostEvent[]) =>
  events.flatMap((event) =>
    event.type === 'signal' && event.receipt.expired ? [...(event.receipt.requests ?? [])] : [],
  );

/** A session with `deploy` active and request deploy:r1 open (deadline now + 15 min). */
async function openDeploy(rb: Awaited<ReturnType<typeof boot>>['rb']) {
  const session = await rb.openSession({ id: 'S' });
  session.activate('deploy');
  session.signal({ type: 'need_approval', payload: { reason: 'migrate db' } });
  return session;
}

describe('session.extendRequest on the simulated clock', () => {
  it('moves the deadline later: nothing at the old time, the expiry at the new one, not a millisecond before', async () => {
    const { rb, clock, events } = await boot();
    const session = await openDeploy(rb);
    const original = clock.now() + T;
    clock.advance(10 * MIN);
    const receipt = session.extendRequest('deploy:r1', { timeoutMs: 30 * MIN, by: 'ana' });
    const moved = clock.now() + 30 * MIN;
    expect(receipt).toEqual({
      requestId: 'deploy:r1',
      expiresAt: moved,
      text: `request deploy:r1 now expires ${new Date(moved).toISOString()}`,
    });
    expect(requestsOf(session, 'deploy')[0]).toMatchObject({
      status: 'open',
      expiresAt: moved,
      onTimeout: 'escalate',
      extendedAt: clock.now(),
      extendedBy: 'ana',
    });
    clock.advance(original - clock.now());
    expect(expired(events)).toEqual([]);
    clock.advance(moved - clock.now() - 1);
    expect(requestsOf(session, 'deploy')[0]?.status).toBe('open');
    expect(expired(events)).toEqual([]);
    clock.advance(1);
    expect(expired(events)).toEqual(['deploy:r1']);
    expect(requestsOf(session, 'deploy')[0]).toMatchObject({
      status: 'expired',
      answeredAt: moved,
    });
    expect(phaseOf(session, 'deploy')).toBe('gated');
    await rb.stop();
  });

  it('moves it earlier too, and is not a change: an approval with the version seen still holds', async () => {
    const { rb, clock, events } = await boot();
    const session = await openDeploy(rb);
    const version = session.view().functions.find((fn) => fn.name === 'deploy')?.version;
    session.extendRequest('deploy:r1', { timeoutMs: MIN });
    expect(requestsOf(session, 'deploy')[0]?.extendedBy).toBeUndefined();
    expect(session.view().functions.find((fn) => fn.name === 'deploy')?.version).toBe(version);
    clock.advance(MIN);
    expect(expired(events)).toEqual(['deploy:r1']);
    await rb.stop();

    const second = await boot();
    const again = await openDeploy(second.rb);
    again.extendRequest('deploy:r1', { timeoutMs: MIN });
    again.approve('deploy:r1', { seenVersion: version as number });
    expect(phaseOf(again, 'deploy')).toBe('active');
    second.clock.advance(T);
    expect(expired(second.events)).toEqual([]);
    await second.rb.stop();
  });

  it("gives a deadline to a request that had none, expiring as its function's on_timeout says", async () => {
    const { rb, clock, events } = await boot();
    const session = await rb.openSession({ id: 'S' });
    session.activate('review');
    session.signal({ type: 'need_approval' });
    expect(requestsOf(session, 'review')[0]?.expiresAt).toBeUndefined();
    session.extendRequest('review:r1', { timeoutMs: 5 * MIN });
    expect(requestsOf(session, 'review')[0]).toMatchObject({
      expiresAt: clock.now() + 5 * MIN,
      onTimeout: 'reject',
    });
    clock.advance(5 * MIN);
    expect(expired(events)).toEqual(['review:r1']);
    const rejection = events.find((event) => event.type === 'signal' && event.receipt.expired);
    expect(rejection).toMatchObject({ receipt: { type: 'revise_needed' } });
    await rb.stop();
  });

  it('replays to the same snapshots; without the recorded move the replay fails', async () => {
    const clock = new SimulatedClock(1_000);
    const rb = createRolebox({ clock, journal: true, functions: [defineFunction(DEPLOY)] });
    await rb.start();
    const session = await openDeploy(rb);
    session.extendRequest('deploy:r1', { timeoutMs: 2 * T, by: 'ana' });
    clock.advance(2 * T);
    const run = rb.recordRun();
    await rb.stop();
    expect(replay(run).ok).toBe(true);
    const isMove = (entry: (typeof run.journal)[number]) =>
      JSON.stringify(entry.event).includes('session.extend_request');
    expect(run.journal.filter(isMove)).toHaveLength(1);
    expect(replay({ ...run, journal: run.journal.filter((entry) => !isMove(entry)) }).ok).toBe(
      false,
    );
  });

  it('refuses a request that is not open with stale_answer, and changes nothing', async () => {
    const { rb, clock } = await boot();
    const session = await openDeploy(rb);
    session.signal({ type: 'need_approval', payload: { reason: 'drop old tables' } });
    session.approve('deploy:r1');
    clock.advance(T);
    // deploy:r1 answered, deploy:r2 expired; deploy:r9 never opened.
    const before = session.view();
    for (const id of ['deploy:r1', 'deploy:r2', 'deploy:r9', 'nope']) {
      const error = errorOf(() => session.extendRequest(id, { timeoutMs: MIN }));
      expect(error.code, id).toBe('stale_answer');
      expect(error.message, id).toContain(`request "${id}" is unknown or already resolved`);
      expect(error.details).toEqual({ requestId: id });
    }
    expect(session.view()).toEqual(before);
    await rb.stop();
  });

  it('refuses a bad timeoutMs or option with invalid_argument naming it, and changes nothing', async () => {
    const { rb, clock, events } = await boot();
    const session = await openDeploy(rb);
    const deadline = clock.now() + T;
    const before = session.view();
    const bad: [unknown, unknown, string][] = [
      ['deploy:r1', { timeoutMs: 0 }, 'timeoutMs must be a positive whole number'],
      ['deploy:r1', { timeoutMs: -5 }, 'got -5'],
      ['deploy:r1', { timeoutMs: 1.5 }, 'got 1.5'],
      ['deploy:r1', { timeoutMs: '15m' }, 'got "15m"'],
      ['deploy:r1', { timeoutMs: 400 * 86_400_000 }, 'at most a year'],
      ['deploy:r1', {}, 'got undefined'],
      ['deploy:r1', { timeoutMs: MIN, by: 7 }, 'by must be a string, got 7'],
      ['deploy:r1', { timeoutMs: MIN, note: 'x' }, 'note'],
      ['deploy:r1', undefined, 'options must be an object'],
      [42, { timeoutMs: MIN }, 'got 42'],
    ];
    for (const [id, options, says] of bad) {
      const error = errorOf(() => session.extendRequest(id as string, options as never));
      expect(error.code, says).toBe('invalid_argument');
      expect(error.message, says).toContain(says);
    }
    expect(session.view()).toEqual(before);
    clock.advance(deadline - clock.now());
    expect(expired(events)).toEqual(['deploy:r1']);
    await rb.stop();
  });
});

describe('session.extendRequest across a restart and passivation', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('after a restart on SQLite the request expires at the moved deadline, not the old one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rolebox-extend-'));
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const clock = new SimulatedClock(1_000);
    const first = await boot({ store: new SqliteSnapshotStore(path), clock });
    const session = await openDeploy(first.rb);
    const original = clock.now() + T;
    session.extendRequest('deploy:r1', { timeoutMs: 2 * T, by: 'ana' });
    const moved = clock.now() + 2 * T;
    await first.rb.flush();
    await first.rb.stop();

    const second = await boot({ store: new SqliteSnapshotStore(path), clock });
    expect(second.report.wakeUps).toBe(1);
    clock.advance(original - clock.now());
    await settle(10);
    expect(expired(second.events)).toEqual([]);
    clock.advance(moved - clock.now() - 1);
    await settle(10);
    expect(expired(second.events)).toEqual([]);
    clock.advance(1);
    await settle(10);
    expect(expired(second.events)).toEqual(['deploy:r1']);
    expect(requestsOf(second.rb.session('S'), 'deploy')[0]).toMatchObject({
      status: 'expired',
      answeredAt: moved,
      extendedBy: 'ana',
    });
    await second.rb.stop();
  });

  it('wakes a passivated session at the moved deadline', async () => {
    const { rb, clock, events } = await boot({ store: new MemorySnapshotStore() });
    const session = await openDeploy(rb);
    session.extendRequest('deploy:r1', { timeoutMs: 2 * T });
    const moved = clock.now() + 2 * T;
    clock.advance(1_000);
    await settle(10);
    expect(rb.sessions()).toEqual([]);
    clock.advance(T);
    await settle(10);
    expect(rb.sessions()).toEqual([]);
    expect(expired(events)).toEqual([]);
    clock.advance(moved - clock.now());
    await settle(10);
    expect(expired(events)).toEqual(['deploy:r1']);
    await rb.stop();
  });
});

describe('an extended request in the store', () => {
  /** A memory store whose session S has deploy:r1 extended by ana, its checksum dropped. */
  async function storedExtension() {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    const first = await boot({ store, clock });
    const session = await openDeploy(first.rb);
    session.extendRequest('deploy:r1', { timeoutMs: 2 * T, by: 'ana' });
    await first.rb.flush();
    await first.rb.stop();
    const record = JSON.parse(store.records.get('S') as string);
    delete record.checksum; // edited by hand below: the full structural check runs
    return { store, clock, record };
  }

  it('restores through the full check with when and by whom the deadline moved', async () => {
    const { store, clock, record } = await storedExtension();
    store.records.set('S', JSON.stringify(record));
    const second = await boot({ store, clock });
    const [request] = requestsOf(second.rb.session('S'), 'deploy');
    expect(request).toMatchObject({ extendedAt: 1_000, extendedBy: 'ana', status: 'open' });
    await second.rb.stop();
  });

  it.each([
    ['extendedAt', 'tomorrow'],
    ['extendedBy', 7],
  ])('is refused, naming the ledger, when its %s is malformed', async (field, value) => {
    const { store, clock, record } = await storedExtension();
    const fn = record.snapshot.children['fn:deploy'].snapshot.context;
    fn.kv.__approval_requests[0][field] = value;
    store.records.set('S', JSON.stringify(record));
    const second = await boot({ store, clock });
    refusedOnActivation(second.rb, '__approval_requests');
    await second.rb.stop();
  });
});

describe('session.extendRequest in a Restate session step (the engine, without a server)', () => {
  it("the step's wake-up follows the moved deadline", async () => {
    const engine = new SessionStepEngine({ functions: [defineFunction(DEPLOY)] }, false);
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
    const moved = await engine.run({
      sessionId: 'S',
      state: opened.state,
      now: 2_000,
      ids: seededIdSource(2),
      command: (session) => session.extendRequest('deploy:r1', { timeoutMs: 2 * T }),
    });
    expect(moved.wakeAt).toBe(2_000 + 2 * T);
  });
});
