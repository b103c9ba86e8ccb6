// The approval audit trail (issue 25 item 5): `view().approvals` lists every request of every
// function, open ones first, then the resolved ones in the order they were resolved, with
// who resolved it, when, the note or reason, the seenVersion and how it ended. It survives a
// restart and outlives a deactivated function.
import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  defineFunction,
  type FunctionSpec,
  MemorySnapshotStore,
} from '../src/index.js';
import { SimulatedClock, seededIdSource } from '../src/testing/index.js';

const DEPLOY: FunctionSpec = {
  name: 'deploy',
  gate: 'signal_observed(answer)',
  continue_until: 'state_eq(step=done)',
};
const REVIEW: FunctionSpec = { name: 'review', gate: 'signal_observed(answer)' };

async function open(store = new MemorySnapshotStore()) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    store,
    clock,
    ids: seededIdSource(3),
    functions: [DEPLOY, REVIEW].map((spec) => defineFunction(spec)),
  });
  await rb.start();
  return { rb, clock, store };
}

describe('view().approvals', () => {
  it('records approve, reject and a plain answer with who, when, note, seenVersion and the outcome', async () => {
    const { rb, clock, store } = await open();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.activate('review');
    expect(session.view().approvals).toEqual([]);

    // One need_approval reaches both functions: deploy:r1 and review:r1.
    session.signal({ type: 'need_approval', payload: { reason: 'migrate db' } });
    clock.advance(1_000);
    const deployVersion = session.view().functions[0]?.version as number;
    session.approve('deploy:r1', { by: 'ana', note: 'looks fine', seenVersion: deployVersion });
    clock.advance(1_000);
    session.reject('review:r1', { by: 'bo', reason: 'no rollback plan' });
    clock.advance(1_000);
    session.signal({ type: 'need_approval', payload: { reason: 'drop old tables' } });
    clock.advance(1_000);
    // A plain answer (an agent's or a user's signal): it resolves the oldest open request of
    // each function, and says nobody.
    session.deactivate('deploy');
    session.signal({ type: 'answer' });
    clock.advance(1_000);
    session.signal({ type: 'blocked', payload: { reason: 'waiting on ci' } });

    const approvals = session.view().approvals;
    expect(approvals).toEqual([
      {
        id: 'deploy:r2',
        function: 'deploy',
        type: 'need_approval',
        payload: { reason: 'drop old tables' },
        openedAt: 4_000,
        version: 2,
        status: 'open',
      },
      {
        id: 'review:r3',
        function: 'review',
        type: 'blocked',
        payload: { reason: 'waiting on ci' },
        openedAt: 6_000,
        version: 3,
        status: 'open',
      },
      {
        id: 'deploy:r1',
        function: 'deploy',
        type: 'need_approval',
        payload: { reason: 'migrate db' },
        openedAt: 1_000,
        version: 1,
        status: 'answered',
        answeredAt: 2_000,
        answeredBy: 'ana',
        note: 'looks fine',
        seenVersion: 1,
        answeredByHost: true,
      },
      {
        id: 'review:r1',
        function: 'review',
        type: 'need_approval',
        payload: { reason: 'migrate db' },
        openedAt: 1_000,
        version: 1,
        status: 'rejected',
        answeredAt: 3_000,
        answeredBy: 'bo',
        note: 'no rollback plan',
        answeredByHost: true,
      },
      {
        id: 'review:r2',
        function: 'review',
        type: 'need_approval',
        payload: { reason: 'drop old tables' },
        openedAt: 4_000,
        version: 2,
        status: 'answered',
        answeredAt: 5_000,
      },
    ]);
    // The trail is the functions' own requests, in another order: nothing made up.
    const fromFunctions = session.view().functions.flatMap((fn) => fn.requests);
    expect([...approvals].sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [...fromFunctions].sort((a, b) => a.id.localeCompare(b.id)),
    );
    // A copy: changing it changes nothing in the session.
    (approvals[0] as { status: string }).status = 'answered';
    expect(session.view().approvals[0]?.status).toBe('open');

    // After a restart, the same trail.
    await rb.flush();
    const copy = new MemorySnapshotStore();
    for (const [id, data] of store.records) copy.records.set(id, data);
    const next = await open(copy);
    expect(next.rb.session('S').view().approvals).toEqual(session.view().approvals);
    await next.rb.stop();
    await rb.stop();
  });

  it('tells the host’s approval from an agent’s own answer, named or not', async () => {
    const { rb } = await open();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval', payload: { reason: 'one' } });
    session.signal({ type: 'answer', payload: { requestId: 'deploy:r1', by: 'ana' } });
    session.signal({ type: 'need_approval', payload: { reason: 'two' } });
    session.approve('deploy:r2', { by: 'ana' });
    session.signal({ type: 'need_approval', payload: { reason: 'three' } });
    session.signal({ type: 'answer' });
    const byId = new Map(session.view().approvals.map((request) => [request.id, request]));
    // Same status and the same `by` for r1 and r2: only the origin tells them apart.
    expect(byId.get('deploy:r1')).toMatchObject({ status: 'answered', answeredBy: 'ana' });
    expect(byId.get('deploy:r1')).not.toHaveProperty('answeredByHost');
    expect(byId.get('deploy:r2')).toMatchObject({
      status: 'answered',
      answeredBy: 'ana',
      answeredByHost: true,
    });
    expect(byId.get('deploy:r3')?.status).toBe('answered');
    expect(byId.get('deploy:r3')).not.toHaveProperty('answeredByHost');
    await rb.stop();
  });

  it('a refused answer leaves the trail as it was', async () => {
    const { rb } = await open();
    const session = await rb.openSession({ id: 'S' });
    session.activate('deploy');
    session.signal({ type: 'need_approval', payload: { reason: 'ship' } });
    session.setKv('deploy', 'step', 'one');
    const before = session.view().approvals;
    expect(() => session.approve('deploy:r1', { by: 'ana', seenVersion: 1 })).toThrow(
      expect.objectContaining({ code: 'stale_approval' }),
    );
    expect(() => session.approve('deploy:r9', { by: 'ana' })).toThrow(
      expect.objectContaining({ code: 'stale_answer' }),
    );
    expect(session.view().approvals).toEqual(before);
    expect(before).toEqual([expect.objectContaining({ id: 'deploy:r1', status: 'open' })]);
    await rb.stop();
  });
});
