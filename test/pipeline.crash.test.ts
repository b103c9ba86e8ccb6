import { describe, expect, it } from 'vitest';
import { createAutoApprovalPolicy } from '../examples/auto-approval.js';
import { createRolebox, defineFunction, MemorySnapshotStore } from '../src/index.js';
import { definePolicy, defineSourceHandler, PENDING_EVENT_PREFIX } from '../src/pipeline/index.js';
import { SimulatedClock } from '../src/testing/index.js';
import { testPipeline } from './support/pipeline.js';

/** A policy that records each `job` it runs; with `hang`, a job labelled "stuck" never finishes (the crash). */
function jobs(ran: string[], hang: boolean) {
  return definePolicy('jobs', [
    defineSourceHandler('job', 'job:run', async (source) => {
      ran.push(String(source.payload.label));
      if (hang && source.payload.label === 'stuck') await new Promise(() => {});
      return undefined;
    }),
  ]);
}

const pendingIds = (store: MemorySnapshotStore) =>
  [...store.records.keys()].filter((id) => id.startsWith(PENDING_EVENT_PREFIX));

/** Lets queued microtasks (persisting, running) happen. */
async function turns(n = 50) {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

describe('crash safety of enqueued events', () => {
  it('a restart reads only the pipeline records, not every stored session', async () => {
    /** A store holding many sessions: reading them all at start is what must not happen. */
    class SessionHeavyStore extends MemorySnapshotStore {
      override async loadAll(): Promise<never> {
        throw new Error('the pipeline read every record');
      }
    }
    const store = new SessionHeavyStore();
    for (let i = 0; i < 100; i++) store.records.set(`session-${i}`, '{}');
    const { pipeline: first } = testPipeline([jobs([], true)], { store });
    await first.enqueue({ sourceType: 'job', scope: { taskId: 'A' }, payload: { label: 'stuck' } });
    await turns();
    const ran: string[] = [];
    const { pipeline: second } = testPipeline([jobs(ran, false)], { store });
    expect(await second.start()).toEqual({ restored: 1, failed: [] });
    await second.drain();
    expect(ran).toEqual(['stuck']);
    expect(store.records.size).toBe(100);
  });

  it('events persisted before a crash run after the restart, exactly once, in order', async () => {
    const store = new MemorySnapshotStore();
    const ranBefore: string[] = [];
    const { pipeline: first } = testPipeline([jobs(ranBefore, true)], { store });
    await first.enqueue({
      sourceType: 'job',
      scope: { taskId: 'A' },
      payload: { label: 'done before' },
    });
    await first.drain();
    expect(pendingIds(store)).toEqual([]);
    for (const label of ['stuck', 'waiting 1', 'waiting 2']) {
      const receipt = await first.enqueue({
        sourceType: 'job',
        scope: { taskId: 'A' },
        payload: { label },
      });
      expect(receipt.accepted).toBe(true);
    }
    await turns();
    expect(ranBefore).toEqual(['done before', 'stuck']);
    // Each accepted event is in the store before enqueue answered.
    expect(pendingIds(store)).toHaveLength(3);

    // The process dies here: `first` is simply abandoned.
    const ranAfter: string[] = [];
    const { pipeline: second } = testPipeline([jobs(ranAfter, false)], { store });
    expect(await second.start()).toEqual({ restored: 3, failed: [] });
    await second.drain();
    // The run that was in progress at the crash runs again; the waiting ones run once.
    expect(ranAfter).toEqual(['stuck', 'waiting 1', 'waiting 2']);
    expect(pendingIds(store)).toEqual([]);

    const ranThird: string[] = [];
    const { pipeline: third } = testPipeline([jobs(ranThird, false)], { store });
    expect(await third.start()).toEqual({ restored: 0, failed: [] });
    expect(ranThird).toEqual([]);
  });

  it('a producer retrying an event that is still waiting gets a duplicate', async () => {
    const store = new MemorySnapshotStore();
    const ran: string[] = [];
    const { pipeline: first } = testPipeline([jobs(ran, true)], { store });
    await first.enqueue({
      sourceType: 'job',
      sourceId: 'blocker',
      scope: { taskId: 'A' },
      payload: { label: 'stuck' },
    });
    await first.enqueue({
      sourceType: 'job',
      sourceId: 'job-9',
      scope: { taskId: 'A' },
      payload: { label: 'job 9' },
    });
    await turns();
    const { pipeline: second } = testPipeline([jobs(ran, false)], { store });
    const retry = await second.enqueue({
      sourceType: 'job',
      sourceId: 'job-9',
      scope: { taskId: 'A' },
      payload: { label: 'job 9 again' },
    });
    expect(retry).toMatchObject({ accepted: false, reason: 'duplicate' });
    await second.drain();
    expect(ran.filter((label) => label.startsWith('job 9'))).toEqual(['job 9']);
  });

  it('a stored event that cannot be read is reported, left untouched, and the others run', async () => {
    const store = new MemorySnapshotStore();
    store.records.set(`${PENDING_EVENT_PREFIX}broken`, '{ not json');
    store.records.set(
      `${PENDING_EVENT_PREFIX}odd`,
      JSON.stringify({
        format: 'rolebox.pipeline.event',
        version: 1,
        runId: 'odd',
        seq: 0,
        enqueuedAt: 0,
        source: { sourceType: 'job' },
      }),
    );
    const ran: string[] = [];
    const { pipeline: first } = testPipeline([jobs(ran, true)], { store, onError: () => {} });
    await first.enqueue({ sourceType: 'job', scope: { taskId: 'A' }, payload: { label: 'stuck' } });
    await turns();
    const reported: string[] = [];
    const { pipeline: second } = testPipeline([jobs(ran, false)], {
      store,
      onError: (error) => reported.push(error.message),
    });
    const report = await second.start();
    expect(report.restored).toBe(1);
    expect(
      report.failed.map((failure) => [failure.id, failure.error.code, failure.error.message]),
    ).toEqual([
      [
        `${PENDING_EVENT_PREFIX}broken`,
        'invalid_pipeline_record',
        `stored pipeline event "${PENDING_EVENT_PREFIX}broken" is not JSON`,
      ],
      [
        `${PENDING_EVENT_PREFIX}odd`,
        'invalid_pipeline_record',
        `stored pipeline event "${PENDING_EVENT_PREFIX}odd" is malformed: source.sourceId: Invalid input: expected string, received undefined`,
      ],
    ]);
    expect(reported).toHaveLength(2);
    await second.drain();
    expect(ran).toEqual(['stuck', 'stuck']);
    expect(store.records.get(`${PENDING_EVENT_PREFIX}broken`)).toBe('{ not json');
    expect(pendingIds(store).sort()).toEqual([
      `${PENDING_EVENT_PREFIX}broken`,
      `${PENDING_EVENT_PREFIX}odd`,
    ]);
  });

  it('a stopped pipeline finishes the run in progress and leaves the queued ones for the next start', async () => {
    const store = new MemorySnapshotStore();
    const ran: string[] = [];
    let release: () => void = () => {};
    const slow = definePolicy('slow', [
      defineSourceHandler('job', 'job:slow', async (source) => {
        ran.push(String(source.payload.label));
        if (source.payload.label === 'slow')
          await new Promise<void>((resolve) => (release = resolve));
        return undefined;
      }),
    ]);
    const { pipeline: first } = testPipeline([slow], { store });
    await first.enqueue({ sourceType: 'job', payload: { label: 'slow' } });
    await first.enqueue({ sourceType: 'job', payload: { label: 'next' } });
    await turns();
    const stopped = first.stop();
    release();
    await stopped;
    expect(ran).toEqual(['slow']);
    expect(pendingIds(store)).toHaveLength(1);

    const { pipeline: second } = testPipeline([slow], { store });
    expect((await second.start()).restored).toBe(1);
    await second.drain();
    expect(ran).toEqual(['slow', 'next']);
  });
});

describe('crash safety through a rolebox sharing the store', () => {
  it('an approval enqueued before the crash is answered after the restart', async () => {
    const store = new MemorySnapshotStore();
    const approval = defineFunction({
      name: 'approval',
      gate: 'signal_observed(answer)',
      continue_until: 'signal_observed(answer)',
    });
    const policies = (hang: boolean) => [
      jobs([], hang),
      createAutoApprovalPolicy({ isEligible: () => true }),
    ];

    const { pipeline: firstPipeline } = testPipeline(policies(true), { store });
    const first = createRolebox({
      functions: [approval],
      store,
      pipeline: firstPipeline,
      clock: new SimulatedClock(0),
    });
    await first.start();
    const session = await first.openSession({ id: 'S' });
    // Something slow holds the session's scope, so the approval request waits behind it.
    await firstPipeline.enqueue({
      sourceType: 'job',
      scope: { sessionId: 'S' },
      payload: { label: 'stuck' },
    });
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { reason: 'deploy' } });
    await turns();
    await first.flush();
    expect(pendingIds(store)).toHaveLength(2);
    expect(session.view().functions[0]?.phase).toBe('gated');

    // Crash (the actor system stops dead, nothing is flushed or released); a new process
    // with the same store.
    first.system.stop();
    const { pipeline: secondPipeline } = testPipeline(policies(false), { store });
    const second = createRolebox({
      functions: [approval],
      store,
      pipeline: secondPipeline,
      clock: new SimulatedClock(0),
    });
    const report = await second.start();
    // Nothing is restored at start; the pending approval activates the session it is for.
    expect(report).toEqual({ restored: [], wakeUps: 0, failed: [] });
    expect(second.sessions()).toEqual([]);
    await secondPipeline.drain();
    expect(second.sessions()).toEqual(['S']);
    expect(second.session('S').view().functions[0]?.phase).toBe('active');
    expect(secondPipeline.runs().map((run) => run.trace.source.sourceType)).toEqual([
      'job',
      'agent.signal.emitted',
      'agent.signal.emitted',
    ]);
    expect(pendingIds(store)).toEqual([]);
    await second.stop();
  });
});
