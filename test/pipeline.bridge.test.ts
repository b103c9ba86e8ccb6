import { describe, expect, it } from 'vitest';
import { createAutoApprovalPolicy } from '../examples/auto-approval.js';
import { createRolebox, defineFunction, MemorySnapshotStore } from '../src/index.js';
import {
  definePolicy,
  defineSourceHandler,
  PIPELINE_SOURCE_TYPES,
  type PipelineSource,
  projectRun,
  telemetryRecordOf,
} from '../src/pipeline/index.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { testPipeline } from './support/pipeline.js';

const answered = 'signal_observed(answer)';
const approval = defineFunction({ name: 'approval', gate: answered, continue_until: answered });

/** A rolebox wired to a pipeline with the auto-approval policy (eligible: amounts up to 100). */
async function approvalSystem() {
  const { pipeline } = testPipeline([
    createAutoApprovalPolicy({
      isEligible: ({ payload }) => typeof payload.amount === 'number' && payload.amount <= 100,
    }),
  ]);
  const rb = createRolebox({
    functions: [approval],
    pipeline,
    clock: new SimulatedClock(0),
    ids: seededIdSource(5),
  });
  const errors: string[] = [];
  rb.on('error', (event) => errors.push(event.error.message));
  await rb.start();
  return { rb, pipeline, errors };
}

describe('the bridge end to end: the auto-approval policy', () => {
  it('opens the function of an eligible session and leaves an ineligible one gated', async () => {
    const { rb, pipeline, errors } = await approvalSystem();
    const small = await rb.openSession({ id: 'small-refund' });
    const big = await rb.openSession({ id: 'big-refund' });
    for (const [session, amount] of [
      [small, 40],
      [big, 900],
    ] as const) {
      session.activate('approval');
      session.signal({ type: 'need_approval', payload: { amount } });
    }
    expect(small.view().functions[0]?.phase).toBe('gated');
    await pipeline.drain();

    expect(small.view().functions[0]?.phase).toBe('active');
    expect(big.view().functions[0]?.phase).toBe('gated');
    // The answer is a real agent signal in the ledger, so the function completes at idle.
    expect(small.idle().completed).toEqual(['approval']);
    expect(big.idle().completed).toEqual([]);
    expect(errors).toEqual([]);
    await rb.stop();
  });

  it('the trace shows the whole chain', async () => {
    const { rb, pipeline } = await approvalSystem();
    const session = await rb.openSession({ id: 'small-refund' });
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { amount: 12, reason: 'refund' } });
    await pipeline.drain();
    const [approvalRun, answerRun] = pipeline.runs();
    expect(approvalRun?.scopeKey).toBe('session:small-refund');
    expect(approvalRun?.trace.source.payload).toEqual({
      sessionId: 'small-refund',
      signalType: 'need_approval',
      payload: { amount: 12, reason: 'refund' },
      recordedOn: ['approval'],
      requests: ['approval:r1'],
      versions: { 'approval:r1': 1 },
    });
    const record = telemetryRecordOf(approvalRun as never);
    expect(record.dominantPath).toEqual([
      'agent.signal.emitted',
      'signal.approval.auto-eligible',
      'action.rolebox.send',
    ]);
    const trace = projectRun(approvalRun as never);
    expect(trace.edges.map((edge) => edge.kind)).toEqual(['produced', 'resulted-in', 'triggered']);
    expect(trace.signals.map((signal) => signal.signalType)).toEqual([
      'signal.approval.auto-eligible',
      'signal.action.applied',
    ]);
    expect(trace.signals[0]?.payload).toMatchObject({
      requestId: 'approval:r1',
      seenVersion: 1,
      reason: 'refund',
    });
    expect(trace.signals[1]?.payload.output).toMatchObject({
      type: 'answer',
      recordedOn: 1,
      requests: ['approval:r1'],
    });
    expect(trace.handlerRuns).toEqual([
      expect.objectContaining({ handlerId: 'action.rolebox.send:deliver', status: 'ok' }),
    ]);
    // The answer the policy sent came back in as a source of its own, and went nowhere.
    expect(answerRun?.trace.source.payload).toMatchObject({
      signalType: 'answer',
      payload: { requestId: 'approval:r1', by: 'auto-approval', seenVersion: 1 },
      requests: ['approval:r1'],
      versions: { 'approval:r1': 1 },
    });
    expect(answerRun?.trace.signals).toEqual([]);
    await rb.stop();
  });

  it('approves the request it judged, by id, and never one the agent opened after it', async () => {
    const { rb, pipeline } = await approvalSystem();
    const session = await rb.openSession({ id: 'S' });
    session.activate('approval');
    // r1 is eligible; a human approves it before the pipeline gets to it, and the agent then
    // asks for something the policy would never approve (r2). An unnamed answer would
    // resolve the oldest open request: r2. The policy names r1, so it is refused instead.
    session.signal({ type: 'need_approval', payload: { amount: 40 } });
    session.approve('approval:r1', { by: 'ana' });
    session.signal({ type: 'need_approval', payload: { amount: 900 } });
    await pipeline.drain();

    const trail = session.view().approvals;
    expect(trail.map((request) => [request.id, request.status, request.answeredBy])).toEqual([
      ['approval:r2', 'open', undefined],
      ['approval:r1', 'answered', 'ana'],
    ]);
    expect(session.view().functions[0]?.phase).toBe('gated');
    const results = pipeline.runs().flatMap((run) => run.trace.results);
    expect(results).toEqual([
      expect.objectContaining({
        actionType: 'action.rolebox.send',
        result: expect.objectContaining({
          status: 'failed',
          error: expect.objectContaining({ code: 'stale_answer' }),
        }),
      }),
    ]);
    await rb.stop();
  });

  it('approves with the version the request opened on: a change after it makes it stale_approval', async () => {
    const { rb, pipeline } = await approvalSystem();
    const session = await rb.openSession({ id: 'S' });
    session.activate('approval');
    // r1 opens on version 1 and is eligible; before the policy answers, the function changes
    // (a slot the reviewer never saw). The policy approves what it judged: version 1.
    expect(session.signal({ type: 'need_approval', payload: { amount: 40 } }).requests).toEqual([
      'approval:r1',
    ]);
    session.setKv('approval', 'target', 'prod');
    expect(session.view().functions[0]?.version).toBe(2);
    await pipeline.drain();

    expect(session.view().approvals).toEqual([
      expect.objectContaining({ id: 'approval:r1', version: 1, status: 'open' }),
    ]);
    expect(session.view().functions[0]?.phase).toBe('gated');
    const results = pipeline.runs().flatMap((run) => run.trace.results);
    expect(results).toEqual([
      expect.objectContaining({
        actionType: 'action.rolebox.send',
        result: expect.objectContaining({
          status: 'failed',
          error: expect.objectContaining({ code: 'stale_approval' }),
        }),
      }),
    ]);
    await rb.stop();
  });

  it('approves each request a signal opened in several functions, each by its id', async () => {
    const { pipeline } = testPipeline([createAutoApprovalPolicy({ isEligible: () => true })]);
    const rb = createRolebox({
      functions: [approval, defineFunction({ name: 'second', gate: answered })],
      pipeline,
      clock: new SimulatedClock(0),
      ids: seededIdSource(5),
    });
    await rb.start();
    const session = await rb.openSession({ id: 'S' });
    session.activate('approval');
    session.activate('second');
    expect(session.signal({ type: 'need_approval' }).requests).toEqual([
      'approval:r1',
      'second:r1',
    ]);
    await pipeline.drain();
    expect(
      session
        .view()
        .approvals.map((request) => `${request.id} ${request.status} ${request.answeredBy}`),
    ).toEqual(['approval:r1 answered auto-approval', 'second:r1 answered auto-approval']);
    expect(session.view().functions.map((fn) => fn.phase)).toEqual(['active', 'active']);
    await rb.stop();
  });

  it('action.rolebox.send reports a refused command as failed, with the RoleboxError code', async () => {
    const { rb, pipeline } = await approvalSystem();
    const session = await rb.openSession({ id: 's' });
    session.activate('approval');
    // Closing the session before the run makes the delivery fail.
    session.signal({ type: 'need_approval', payload: { amount: 1 } });
    session.close();
    await pipeline.drain();
    const result = pipeline.runs()[0]?.trace.results[0]?.result;
    expect(result).toMatchObject({
      status: 'failed',
      error: { code: 'unknown_session', message: 'no open session "s"' },
    });
    await rb.stop();
  });
});

describe('the bridge feeds the actor system’s facts', () => {
  it('agent signals, completed functions, phase and artifact changes, rounds and finished loops', async () => {
    const seen: PipelineSource[] = [];
    const { pipeline } = testPipeline([
      definePolicy('spy', [
        defineSourceHandler(
          Object.values(PIPELINE_SOURCE_TYPES),
          'rolebox:spy',
          (source) => void seen.push(source),
        ),
      ]),
    ]);
    const dispatcher = new ScriptedDispatcher((input) => `round ${input.round} done`);
    const rb = createRolebox({
      functions: [approval],
      pipeline,
      dispatcher,
      clock: new SimulatedClock(0),
      ids: seededIdSource(9),
      limits: { interRoundDelayMs: 0 },
    });
    await rb.start();
    const session = await rb.openSession({ id: 'S' });
    session.activate('approval');
    session.signal({ type: 'answer' });
    session.idle();
    session.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
    });
    session.send({ type: 'user_submitted_input', text: 'a haiku' });
    session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'run_worker', workerId: 'poet' },
    });
    session.send({ type: 'worker_started', workerId: 'poet', acceptanceMode: 'user_confirmed' });
    const draft = session.artifacts.write({
      name: 'haiku',
      workerId: 'poet',
      content: 'Leaves let go',
    });
    session.send({ type: 'worker_completed', artifactId: draft.id });
    session.send({ type: 'user_accepted_artifact', artifactId: draft.id });
    const loop = session.startLoop('|loop:2| count');
    expect(loop.ok).toBe(true);
    for (let i = 0; i < 10; i++) await settle();
    await pipeline.drain();

    const facts = seen.map((source) => source.sourceType);
    const payloadsOf = (type: string) =>
      seen.filter((source) => source.sourceType === type).map((source) => source.payload);
    expect(new Set(facts)).toEqual(new Set(Object.values(PIPELINE_SOURCE_TYPES)));
    expect(seen.every((source) => source.scopeKey === 'session:S')).toBe(true);
    expect(payloadsOf('agent.signal.emitted')).toEqual([
      {
        sessionId: 'S',
        signalType: 'answer',
        payload: {},
        recordedOn: ['approval'],
        requests: [],
        versions: {},
      },
    ]);
    expect(payloadsOf('function.completed')).toEqual([{ sessionId: 'S', function: 'approval' }]);
    expect(
      payloadsOf('session.phase.changed').map(
        (payload) =>
          `${payload.from}→${payload.to}${payload.waitingReason ? `(${payload.waitingReason})` : ''}`,
      ),
    ).toEqual([
      'idle→waiting_user(input)',
      'waiting_user→running',
      'running→waiting_user(review_artifact)',
      'waiting_user→running',
    ]);
    expect(
      payloadsOf('artifact.status.changed').map(
        (payload) => `${payload.name}: ${payload.from}→${payload.to}`,
      ),
    ).toEqual([
      'haiku: null→drafted',
      'haiku: drafted→under_review',
      'haiku: under_review→accepted',
    ]);
    expect(payloadsOf('loop.round.completed')).toEqual([
      expect.objectContaining({
        sessionId: 'S',
        loopId: loop.ok ? loop.loopId : '',
        round: 1,
        total: 2,
        status: 'completed',
      }),
      expect.objectContaining({ round: 2, status: 'completed' }),
    ]);
    expect(payloadsOf('loop.finished')).toEqual([
      { sessionId: 'S', loopId: loop.ok ? loop.loopId : '', phase: 'complete' },
    ]);
    await rb.stop();
  });

  it('a restored session keeps feeding the pipeline', async () => {
    const store = new MemorySnapshotStore();
    const first = createRolebox({ functions: [approval], store, clock: new SimulatedClock(0) });
    await first.start();
    (await first.openSession({ id: 'S' })).activate('approval');
    await first.stop();

    const seen: string[] = [];
    const { pipeline } = testPipeline([
      definePolicy('spy', [
        defineSourceHandler(
          Object.values(PIPELINE_SOURCE_TYPES),
          'rolebox:spy',
          (source) => void seen.push(source.sourceType),
        ),
      ]),
    ]);
    const second = createRolebox({
      functions: [approval],
      store,
      pipeline,
      clock: new SimulatedClock(0),
    });
    await second.start();
    second.session('S').signal({ type: 'answer' });
    second.session('S').idle();
    await pipeline.drain();
    expect(seen).toEqual(['agent.signal.emitted', 'function.completed']);
    await second.stop();
  });

  it('refuses a pipeline that is not one', () => {
    expect(() => createRolebox({ pipeline: {} as never })).toThrow(
      'pipeline must be created with createPipeline(), got {}',
    );
  });
});
