import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { createAutoApprovalPolicy } from '../examples/auto-approval.js';
import {
  type InspectorServer,
  type InspectorServerOptions,
  MAX_TRACE_BYTES,
  startInspectorServer,
  TRACE_LIMIT,
} from '../inspector/server.js';
import { createRolebox, defineFunction } from '../src/index.js';
import { createPipeline, projectRun } from '../src/pipeline/index.js';
import { type Message, openSocket } from './support/inspector-clients.js';

/** A small, well-formed trace projection: source → signal → action → result. */
function traceOf(runId: string, extra: Record<string, unknown> = {}) {
  return {
    version: 1,
    chainId: `chain_${runId}`,
    rootSourceId: 'src_1',
    source: { sourceId: 'src_1', sourceType: 'loop.round.completed', payload: {} },
    signals: [{ signalId: 'sig_1', signalType: 'signal.demo.drafted', chain: {} }],
    actions: [{ actionId: 'act_1', actionType: 'action.demo.announce', signal: {} }],
    results: [],
    edges: [
      { from: 'src_1', to: 'sig_1', kind: 'produced' },
      { from: 'sig_1', to: 'act_1', kind: 'triggered' },
    ],
    handlerRuns: [],
    metadata: { runId, status: 'completed', durationMs: 3 },
    ...extra,
  };
}

const isTrace = (runId: string) => (message: Message) =>
  message.type === 'trace' && (message.entry as { runId: string }).runId === runId;
const isMarker = (message: Message) =>
  message.type === 'event' && (message.entry as { type: string }).type === 'marker';

describe('pipeline runs in the inspector server (rolebox.trace frames)', () => {
  let server: InspectorServer;
  let logged: string[] = [];
  const sockets: WebSocket[] = [];
  const start = async (options: InspectorServerOptions = {}) => {
    logged = [];
    server = await startInspectorServer({
      port: 0,
      log: (message) => logged.push(message),
      ...options,
    });
  };
  const openPage = async () => {
    const page = await openSocket(`${server.wsUrl}/ui?token=${server.token}`);
    sockets.push(page.socket);
    return page;
  };
  const openApp = async () => {
    const app = await openSocket(server.wsUrl);
    sockets.push(app.socket);
    app.send({ type: 'rolebox.app', name: 'test', pid: 1 });
    return app;
  };
  /** A frame that is sure to be processed after the ones sent before it. */
  const marker = (app: Awaited<ReturnType<typeof openApp>>) =>
    app.send({ type: '@xstate.event', sessionId: 'x:0', event: { type: 'marker' } });

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.terminate();
    await server?.stop();
  });

  it('keeps a run, broadcasts it to pages, and gives it to a page opened late in init', async () => {
    await start();
    const page = await openPage();
    const app = await openApp();
    app.send({ type: 'rolebox.trace', runId: 'run_1', trace: traceOf('run_1') });
    const message = await page.next(isTrace('run_1'));
    expect(message.entry).toMatchObject({ app: 1, runId: 'run_1', trace: traceOf('run_1') });
    expect(server.traces().map((trace) => trace.runId)).toEqual(['run_1']);
    const late = await openPage();
    const init = await late.next((m) => m.type === 'init');
    expect((init.traces as { runId: string }[]).map((trace) => trace.runId)).toEqual(['run_1']);
    expect(server.stats().dropped).toBe(0);
  });

  it(`keeps the newest ${TRACE_LIMIT} runs, and goes under maxKeptBytes by dropping the oldest`, async () => {
    const maxKeptBytes = 64 * 1024;
    await start({ maxKeptBytes });
    const page = await openPage();
    const app = await openApp();
    const total = TRACE_LIMIT + 50;
    for (let index = 0; index < total; index++)
      app.send({ type: 'rolebox.trace', runId: `run_${index}`, trace: traceOf(`run_${index}`) });
    await page.next(isTrace(`run_${total - 1}`));
    const kept = server.traces().map((trace) => trace.runId);
    expect(kept.length).toBeLessThanOrEqual(TRACE_LIMIT);
    expect(kept.at(-1)).toBe(`run_${total - 1}`);
    expect(kept).not.toContain('run_0');
    expect(server.stats().peakKeptBytes).toBeLessThanOrEqual(maxKeptBytes);

    // A big run makes room by letting the oldest runs go.
    const padding = 'p'.repeat(40_000);
    app.send({
      type: 'rolebox.trace',
      runId: 'big',
      trace: traceOf('big', { source: { sourceId: 'src_1', sourceType: 't', payload: padding } }),
    });
    await page.next(isTrace('big'));
    expect(server.traces().length).toBeLessThan(kept.length);
    expect(server.traces().at(-1)?.runId).toBe('big');
    expect(server.stats().peakKeptBytes).toBeLessThanOrEqual(maxKeptBytes);
    // What the server counts is what it keeps: the page's first message holds it all.
    const late = await openPage();
    await late.next((m) => m.type === 'init');
    expect(server.stats().keptBytes).toBeLessThanOrEqual(maxKeptBytes);
  });

  it('drops hostile or oversized traces with a logged reason, and keeps serving', async () => {
    await start();
    const page = await openPage();
    const app = await openApp();
    const tooMany = Array.from({ length: 1_001 }, (_, index) => ({ signalId: `s${index}` }));
    const frames: unknown[] = [
      { type: 'rolebox.trace', trace: traceOf('x') },
      { type: 'rolebox.trace', runId: 'r'.repeat(300), trace: traceOf('x') },
      { type: 'rolebox.trace', runId: 'not-object', trace: 'a string' },
      { type: 'rolebox.trace', runId: 'v2', trace: traceOf('v2', { version: 2 }) },
      { type: 'rolebox.trace', runId: 'no-source', trace: traceOf('x', { source: null }) },
      { type: 'rolebox.trace', runId: 'bad-edges', trace: traceOf('x', { edges: [1, 2] }) },
      { type: 'rolebox.trace', runId: 'no-meta', trace: traceOf('x', { metadata: {} }) },
      { type: 'rolebox.trace', runId: 'many', trace: traceOf('x', { signals: tooMany }) },
      {
        type: 'rolebox.trace',
        runId: 'huge',
        trace: traceOf('x', { results: [{ text: 'h'.repeat(MAX_TRACE_BYTES) }] }),
      },
      {
        type: 'rolebox.trace',
        runId: '__proto__',
        trace: JSON.parse('{"__proto__": {"polluted": true}}'),
      },
    ];
    for (const frame of frames) app.send(frame);
    marker(app);
    await page.next(isMarker);
    expect(server.traces()).toEqual([]);
    expect(page.messages.filter((m) => m.type === 'trace')).toEqual([]);
    expect(server.stats().dropped).toBe(frames.length);
    expect(logged).toEqual([
      'dropped a frame from app 1: rolebox.trace without a runId of 1 to 256 characters',
      'dropped a frame from app 1: rolebox.trace without a runId of 1 to 256 characters',
      'dropped a frame from app 1: rolebox.trace "not-object": the trace is "a string", not an object',
      'dropped a frame from app 1: rolebox.trace "v2": trace version 2, not 1',
      'dropped a frame from app 1: rolebox.trace "no-source": a trace without a source { sourceId, sourceType }',
      'dropped a frame from app 1: rolebox.trace "bad-edges": a trace whose edges is not a list of objects',
      'dropped a frame from app 1: rolebox.trace "no-meta": a trace without metadata { status }',
      'dropped a frame from app 1: rolebox.trace "many": 1003 nodes, more than 1000',
      expect.stringMatching(
        /^dropped a frame from app 1: rolebox\.trace "huge": \d+ bytes is more than 1048576$/,
      ),
      'dropped a frame from app 1: rolebox.trace "__proto__": trace version undefined, not 1',
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Still serving: a good run after the bad ones is taken.
    app.send({ type: 'rolebox.trace', runId: 'good', trace: traceOf('good') });
    await page.next(isTrace('good'));
  });

  it('an inspected rolebox with a pipeline sends each finished run as its trace', async () => {
    await start();
    const page = await openPage();
    const pipeline = createPipeline({
      policies: [createAutoApprovalPolicy({ isEligible: () => true })],
    });
    const answered = 'signal_observed(answer)';
    const rb = createRolebox({
      inspect: { url: server.wsUrl },
      pipeline,
      functions: [defineFunction({ name: 'approval', gate: answered, continue_until: answered })],
    });
    await rb.start();
    const session = await rb.openSession({ id: 'refund' });
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { amount: 5 } });
    await pipeline.drain();
    const run = pipeline
      .runs()
      .find((candidate) => candidate.trace.source.sourceType === 'agent.signal.emitted');
    expect(run).toBeDefined();
    const message = await page.next(isTrace(run?.runId as string));
    const sent = (message.entry as { trace: Record<string, unknown> }).trace;
    const projected = JSON.parse(JSON.stringify(projectRun(run as never)));
    expect(sent).toMatchObject(projected);
    expect(sent.handlerCalls).toEqual(JSON.parse(JSON.stringify(run?.trace.handlerCalls)));
    // source → auto-eligible → rolebox.send → applied
    expect((sent.actions as { actionType: string }[]).map((a) => a.actionType)).toEqual([
      'action.rolebox.send',
    ]);
    await rb.stop();
    // Every finished run reached the server before stop() returned.
    expect(server.traces().map((trace) => trace.runId)).toEqual(
      expect.arrayContaining(pipeline.runs().map((candidate) => candidate.runId)),
    );
  });
});
