// rb.fork(sessionId, { atEvent, as }): a new live session from a journaled session's past.
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRolebox,
  defineFunction,
  MemorySnapshotStore,
  type Rolebox,
  type RoleboxOptions,
  type SessionView,
} from '../src/index.js';
import { sessionJournal } from '../src/persistence/journal.js';
import {
  formatReplayReport,
  replay,
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { rejectionOf } from './support/errors.js';

const functions = [
  defineFunction({
    name: 'awaiting-approval',
    gate: 'signal_observed(answer)',
    continue_until: 'signal_observed(answer)',
    observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
  }),
];

const started: Rolebox[] = [];
afterEach(async () => {
  for (const rb of started.splice(0)) await rb.stop();
});

async function rolebox(options: RoleboxOptions = {}): Promise<Rolebox> {
  const rb = createRolebox({
    functions,
    clock: new SimulatedClock(1_000),
    ids: seededIdSource(7),
    journal: true,
    ...options,
  });
  started.push(rb);
  await rb.start();
  return rb;
}

/** The approval workflow; returns the source's view after each of its events (0-based). */
async function approvalWorkflow(rb: Rolebox): Promise<SessionView[]> {
  const session = await rb.openSession({ id: 'approval' });
  const views = [session.view()];
  session.activate('awaiting-approval');
  views.push(session.view());
  session.tool('|signal| type=need_approval, payload={"reason": "touches production"}');
  views.push(session.view());
  session.tool('|signal| type=answer, payload={"approved": true}');
  views.push(session.view());
  session.idle();
  views.push(session.view());
  return views;
}

/** A view as another session's: the same except for the id. */
const as = (view: SessionView, id: string): SessionView => ({ ...view, id });

describe('rb.fork', () => {
  it('forks after need_approval: the same view, gated, and it is driven on its own', async () => {
    const rb = await rolebox();
    const views = await approvalWorkflow(rb);
    const source = rb.session('approval').view();
    const fork = await rb.fork('approval', { atEvent: 2, as: 'retry' });
    expect(fork.id).toBe('retry');
    expect(fork.view()).toEqual(as(views[2] as SessionView, 'retry'));
    expect(fork.view().functions.map((fn) => [fn.name, fn.phase])).toEqual([
      ['awaiting-approval', 'gated'],
    ]);
    expect(fork.facts()).toEqual([]);
    expect(rb.sessions()).toEqual(['approval', 'retry']);

    fork.tool('|signal| type=answer, payload={"approved": false}');
    expect(fork.idle().completed).toEqual(['awaiting-approval']);
    expect(fork.view().functions[0]?.phase).not.toBe('gated');
    // The source keeps its own state.
    expect(rb.session('approval').view()).toEqual(source);
    // The fork is journaled like any session: it can itself be forked.
    const again = await rb.fork('retry', { atEvent: 0, as: 'retry-2' });
    expect(again.view()).toEqual(as(views[2] as SessionView, 'retry-2'));
    // And a run with forks in it replays clean.
    expect(formatReplayReport(replay(rb.recordRun()))).toMatch(
      /^replay ok: \d+ event\(s\), every snapshot matched$/,
    );
  });

  it('forks at the last event: the source as it is now, with a generated id by default', async () => {
    const rb = await rolebox();
    const views = await approvalWorkflow(rb);
    const fork = await rb.fork('approval', { atEvent: views.length - 1 });
    expect(fork.id).not.toBe('approval');
    expect(fork.view()).toEqual(as(rb.session('approval').view(), fork.id));
  });

  it('event 0 is the open: a fresh session', async () => {
    const rb = await rolebox();
    const views = await approvalWorkflow(rb);
    const fork = await rb.fork('approval', { atEvent: 0, as: 'fresh' });
    expect(fork.view()).toEqual(as(views[0] as SessionView, 'fresh'));
    fork.activate('awaiting-approval');
    expect(fork.view().functions.map((fn) => fn.name)).toEqual(['awaiting-approval']);
  });

  it('a fork survives a restart on a store', async () => {
    const store = new MemorySnapshotStore();
    const first = await rolebox({ store });
    const views = await approvalWorkflow(first);
    await first.fork('approval', { atEvent: 2, as: 'retry' });
    await first.flush();
    await first.stop();
    const second = await rolebox({ store });
    const restored = await second.openSession({ id: 'retry' });
    expect(restored.view()).toEqual(as(views[2] as SessionView, 'retry'));
    restored.tool('|signal| type=answer, payload={"approved": true}');
    expect(restored.idle().completed).toEqual(['awaiting-approval']);
    // A stored id (here the source, not live in this rolebox) is not overwritten by a fork.
    const before = store.records.get('approval');
    expect(second.sessions()).toEqual(['retry']);
    const error = await rejectionOf(second.fork('retry', { atEvent: 0, as: 'approval' }));
    expect([error.code, error.message]).toEqual([
      'duplicate_session',
      'session "approval" is already stored',
    ]);
    await second.flush();
    expect(store.records.get('approval')).toBe(before);
    expect(second.sessions()).toEqual(['retry']);
  });

  it('refuses a snapshot with a loop in flight, and forks after the loop ended', async () => {
    const dispatcher = new ScriptedDispatcher();
    const clock = new SimulatedClock(1_000);
    const rb = await rolebox({ dispatcher, clock });
    const session = await rb.openSession({ id: 'looping' });
    session.startLoop('|loop:1| check the links');
    await settle();
    clock.advance(1_000);
    dispatcher.complete(undefined, 'all links work');
    await settle();
    clock.advance(5_000);
    await settle();
    expect(session.view().loop?.phase).toBe('complete');
    const error = await rejectionOf(rb.fork('looping', { atEvent: 1, as: 'twin' }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('in flight after its event 1');
    expect(rb.sessions()).toEqual(['looping']);
    expect(dispatcher.dispatchCalls).toBe(1);
    const last = sessionJournal(rb.recordRun(), 'looping').length - 1;
    const fork = await rb.fork('looping', { atEvent: last, as: 'twin' });
    // The finished loop is the fork's own record now (its origin renamed).
    const { loop, ...rest } = session.view();
    expect(fork.view()).toEqual({
      ...as(rest as SessionView, 'twin'),
      loop: { ...JSON.parse(JSON.stringify(loop)), originSessionId: 'twin' },
    });
    await settle();
    expect(dispatcher.dispatchCalls).toBe(1);
  });
});

describe('rb.fork refuses bad input and changes nothing', () => {
  it('without a journal', async () => {
    const rb = await rolebox({ journal: false });
    await rb.openSession({ id: 'approval' });
    const error = await rejectionOf(rb.fork('approval', { atEvent: 0 }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('fork("approval") needs createRolebox({ journal: true })');
    expect(rb.sessions()).toEqual(['approval']);
  });

  it('each bad value, named', async () => {
    const rb = await rolebox();
    await approvalWorkflow(rb);
    const cases: [() => Promise<unknown>, string, string][] = [
      [() => rb.fork('ghost', { atEvent: 0 }), 'unknown_session', '"ghost"'],
      [() => rb.fork('approval', { atEvent: 5 }), 'invalid_argument', 'from 0 to 4'],
      [() => rb.fork('approval', { atEvent: -1 }), 'invalid_argument', 'got -1'],
      [() => rb.fork('approval', { atEvent: 1.5 }), 'invalid_argument', 'got 1.5'],
      [
        () => rb.fork('approval', { atEvent: '1' as unknown as number }),
        'invalid_argument',
        'got "1"',
      ],
      [() => rb.fork('approval', {} as never), 'invalid_argument', 'got undefined'],
      [
        () => rb.fork('approval', { atEvent: 1, as: 'approval' }),
        'duplicate_session',
        '"approval" is already open',
      ],
      [() => rb.fork('approval', { atEvent: 1, as: 'a:b' }), 'invalid_argument', '"a:b"'],
      [() => rb.fork('approval', { atEvent: 1, at: 2 } as never), 'invalid_argument', '"at"'],
      [
        () => rb.fork('approval', null as never),
        'invalid_argument',
        'fork options must be an object',
      ],
    ];
    for (const [call, code, named] of cases) {
      const error = await rejectionOf(call);
      expect([error.code, error.message]).toEqual([code, expect.stringContaining(named)]);
    }
    expect(rb.sessions()).toEqual(['approval']);
  });

  it('a session closed at that event', async () => {
    const rb = await rolebox();
    const session = await rb.openSession({ id: 'short' });
    session.close();
    const error = await rejectionOf(rb.fork('short', { atEvent: 1 }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('"short" is closed after its event 1');
    expect(rb.sessions()).toEqual([]);
  });
});

describe('a fork numbers the effects it copies as its own', () => {
  it('a pending effect of the source gets the fork id and a new nonce; the source keeps its own', async () => {
    const rb = await rolebox();
    const source = await rb.openSession({ id: 'src' });
    source.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
    });
    const [effect] = source.send({ type: 'user_submitted_input', text: 'a poem' }).effects;
    const atEvent = sessionJournal(rb.recordRun(), 'src').length - 1;
    const fork = await rb.fork('src', { atEvent, as: 'copy' });
    const [copied] = fork.view().pendingEffects;
    const [, nonce] = /^src:([0-9a-z]{12}):e1$/.exec(effect?.id ?? '') ?? [];
    const [, forkNonce] = /^copy:([0-9a-z]{12}):e1$/.exec(copied?.id ?? '') ?? [];
    expect(nonce, effect?.id).toBeDefined();
    expect(forkNonce, copied?.id).toBeDefined();
    expect(forkNonce, 'a new incarnation: its handlers never share a key with the source').not.toBe(
      nonce,
    );
    expect(copied).toMatchObject({
      effect: { id: copied?.id, type: 'invoke_main_agent' },
      status: 'pending',
    });
    expect(source.view().pendingEffects.map((entry) => entry.id)).toEqual([effect?.id]);
    // Answered in the fork under its own id; the next one goes on from the copied number.
    const next = fork.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'poet' },
    }).effects;
    expect(next.map((entry) => entry.id)).toEqual([`copy:${forkNonce}:e2`]);
    expect(fork.view().pendingEffects.map((entry) => entry.id)).toEqual([`copy:${forkNonce}:e2`]);
    const report = replay(rb.recordRun());
    expect(report.ok, formatReplayReport(report)).toBe(true);
  });
});
