// agentEffects: the agents of rolebox/ai as effect handlers, called directly with a fake
// effect context on the AI SDK's mock model. Each handler's events are then sent to the
// session, so a test fails when a handler answers an event the session would not take.
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AgentEffectHandlers, agentEffects } from '../src/ai/index.js';
import {
  createRolebox,
  type EffectHandlerContext,
  type EffectHandlers,
  type Rolebox,
  type RuntimeEvent,
  type SessionHandle,
} from '../src/index.js';
import { SimulatedClock } from '../src/testing/index.js';
import { plainEffectIds } from './support/effect-ids.js';
import { errorOf, rejectionOf } from './support/errors.js';
import { startWith } from './support/rolebox.js';
import { mockUsage, type ScriptedReply as Reply, scripted } from './support/scripted-model.js';

// Loading `ai` through Vite the first time takes a few seconds on a busy machine.
vi.setConfig({ testTimeout: 60_000 });

let rb: Rolebox | undefined;
afterEach(async () => {
  await rb?.stop();
  rb = undefined;
});

/** A session in `running`, the main agent called for the user's input. */
async function runningSession(): Promise<SessionHandle> {
  const started = await startWith([]);
  rb = started.rb;
  const { session } = started;
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
  });
  session.send({ type: 'user_submitted_input', text: 'A haiku about autumn' });
  return session;
}

/** A session whose approved decision d1 runs the worker `poet`. */
async function workerSession(): Promise<SessionHandle> {
  const session = await runningSession();
  session.send({
    type: 'main_agent_decision_created',
    decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
  });
  session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
  return session;
}

function context(
  session: SessionHandle,
  signal = new AbortController().signal,
): EffectHandlerContext {
  return { session, signal, attempt: 1, idempotencyKey: `${session.id}:e1` };
}

function sendAll(session: SessionHandle, events: readonly RuntimeEvent[]) {
  return events.map((event) => session.send(event)).at(-1);
}

/** What the mock model was called with. */
type LanguageModelV3CallOptions = MockLanguageModelV3['doGenerateCalls'][number];

const invoke = { type: 'invoke_main_agent', reason: 'user_submitted_input' } as const;
const runPoet = { type: 'run_worker', workerId: 'poet', decisionId: 'd1' } as const;

function promptText(options: LanguageModelV3CallOptions): string {
  return JSON.stringify(options.prompt);
}

describe('invoke_main_agent: the main agent decides through its decide tool', () => {
  it.each([
    [
      { kind: 'ask_user', message: 'Which season?', questions: ['Autumn or spring?'] },
      { kind: 'ask_user', message: 'Which season?', questions: ['Autumn or spring?'] },
      'waiting_user',
    ],
    [
      { kind: 'run_worker', workerId: 'poet', requiresApproval: true, instruction: 'five lines' },
      { kind: 'run_worker', workerId: 'poet', requiresApproval: true, instruction: 'five lines' },
      'waiting_user',
    ],
    [
      { kind: 'create_temp_worker', workerId: 'critic', instruction: 'critique it' },
      { kind: 'create_temp_worker', workerId: 'critic', instruction: 'critique it' },
      'running',
    ],
    [
      { kind: 'review_blackboard', message: 'Here is what we have.' },
      { kind: 'review_blackboard', message: 'Here is what we have.' },
      'waiting_user',
    ],
    // Fields that do not belong to the kind are left out of the decision.
    [
      { kind: 'finish', summary: 'done', workerId: 'poet' },
      { kind: 'finish', summary: 'done' },
      'done',
    ],
  ])('%o → main_agent_decision_created the session takes', async (input, expected, phase) => {
    const session = await runningSession();
    const model = scripted({ toolName: 'decide', input });
    const handlers = agentEffects({
      mainAgent: { model },
      workers: { poet: { model: scripted({ text: 'unused' }), description: 'writes haiku' } },
      temporaryWorker: { model: scripted({ text: 'unused' }) },
    });
    const events = await handlers.invoke_main_agent(invoke, context(session));
    expect(events).toEqual([
      { type: 'main_agent_decision_created', decision: { id: 'S1:e1', ...expected } },
    ]);
    expect(sendAll(session, events)?.phase).toBe(phase);
    // One model call: the decision ends the agent's run.
    expect(model.doGenerateCalls).toHaveLength(1);
  });

  it("tells the model why it is called, the workers, and the host's context", async () => {
    const session = await runningSession();
    const model = scripted({ toolName: 'decide', input: { kind: 'finish' } });
    const handlers = agentEffects({
      mainAgent: { model, context: () => 'The user said: A haiku about autumn' },
      workers: { poet: { model, description: 'writes haiku' } },
    });
    await handlers.invoke_main_agent(
      { type: 'invoke_main_agent', reason: 'user_requested_revision', instruction: 'shorter' },
      context(session),
    );
    const call = model.doGenerateCalls[0] as LanguageModelV3CallOptions;
    const text = promptText(call);
    for (const expected of [
      'user_requested_revision',
      'shorter',
      'poet: writes haiku',
      'The user said: A haiku about autumn',
    ])
      expect(text).toContain(expected);
    expect(call.tools?.map((tool) => tool.name).sort()).toEqual(['decide', 'signal']);
    expect(call.headers).toMatchObject({ 'idempotency-key': 'S1:e1' });
  });

  it('the signal tool reaches the session, and the decision follows', async () => {
    const session = await runningSession();
    const model = scripted(
      { toolName: 'signal', input: { type: 'progress', payload: { note: 'thinking' } } },
      { toolName: 'decide', input: { kind: 'finish' } },
    );
    const handlers = agentEffects({ mainAgent: { model }, workers: {} });
    const events = await handlers.invoke_main_agent(invoke, context(session));
    expect(events[0]).toMatchObject({ decision: { kind: 'finish' } });
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(promptText(model.doGenerateCalls[1] as LanguageModelV3CallOptions)).toContain(
      'progress acknowledged',
    );
  });

  it('a malformed decide call the model corrects on its next step is taken', async () => {
    const session = await runningSession();
    const model = scripted(
      { toolName: 'decide', input: { kind: 'dance' } },
      { toolName: 'decide', input: { kind: 'finish' } },
    );
    const handlers = agentEffects({ mainAgent: { model }, workers: {} });
    const events = await handlers.invoke_main_agent(invoke, context(session));
    expect(events[0]).toMatchObject({ decision: { kind: 'finish' } });
    expect(model.doGenerateCalls).toHaveLength(2);
  });
});

describe('invoke_main_agent: no valid decision is a RoleboxError, not a bad event', () => {
  it.each([
    [{ toolName: 'decide', input: { kind: 'dance' } }, /decide.*failed.*kind/s],
    [{ toolName: 'decide', input: '{not json' }, /decide.*failed/s],
    [
      { toolName: 'decide', input: { kind: 'run_worker', workerId: 'painter' } },
      /unknown worker "painter"/,
    ],
    [{ toolName: 'decide', input: { kind: 'run_worker' } }, /run_worker needs a workerId/],
    [
      { toolName: 'decide', input: { kind: 'run_worker', workerId: 'constructor' } },
      /unknown worker "constructor"/,
    ],
    [
      { toolName: 'decide', input: { kind: 'create_temp_worker', workerId: 'critic' } },
      /unknown worker "critic"/,
    ],
    [{ toolName: 'decide', input: { kind: 'ask_user', questions: [''] } }, /decide.*failed/s],
    [{ text: 'I think we should write a poem.' }, /answered "I think we should write a poem\."/],
  ])('%o → invalid_agent_output after maxSteps, the session unchanged', async (reply, message) => {
    const session = await runningSession();
    const before = session.view();
    const model = scripted(reply as Reply);
    const handlers = agentEffects({
      mainAgent: { model, maxSteps: 3 },
      workers: { poet: { model } },
    });
    const error = await rejectionOf(handlers.invoke_main_agent(invoke, context(session)));
    expect(error.code).toBe('invalid_agent_output');
    expect(error.message).toMatch(/^the main agent ended without a decision/);
    expect(error.message).toMatch(message);
    // A text answer ends the run at once; a failing tool call is retried up to maxSteps.
    expect(model.doGenerateCalls).toHaveLength('text' in reply ? 1 : 3);
    expect(session.view()).toEqual(before);
  });
});

describe('run_worker and resume_worker: the worker writes its artifact or asks', () => {
  it('write_artifact → worker_started + worker_completed; the session reviews the draft', async () => {
    const session = await workerSession();
    const model = scripted({
      toolName: 'write_artifact',
      input: { content: 'Leaves let go, unasked', summary: 'a first draft' },
    });
    const handlers = agentEffects({
      mainAgent: { model: scripted({ text: 'unused' }) },
      workers: { poet: { model, artifactName: 'haiku' } },
    });
    const events = await handlers.run_worker(
      { ...runPoet, instruction: 'about autumn' },
      context(session),
    );
    expect(events).toEqual([
      { type: 'worker_started', workerId: 'poet', acceptanceMode: 'user_confirmed' },
      { type: 'worker_completed', artifactId: 'art-1', assessment: 'a first draft' },
    ]);
    expect(session.artifacts.require('art-1')).toMatchObject({
      name: 'haiku',
      workerId: 'poet',
      content: 'Leaves let go, unasked',
      status: 'drafted',
    });
    expect(sendAll(session, events)?.waitingReason).toEqual({
      kind: 'review_artifact',
      artifactId: 'art-1',
      assessment: 'a first draft',
    });
    const call = model.doGenerateCalls[0] as LanguageModelV3CallOptions;
    expect(promptText(call)).toContain('about autumn');
    expect(call.tools?.map((tool) => tool.name).sort()).toEqual([
      'ask_user',
      'signal',
      'write_artifact',
    ]);
  });

  it("a worker's acceptance mode goes with worker_started", async () => {
    const session = await workerSession();
    const handlers = agentEffects({
      mainAgent: { model: scripted({ text: 'unused' }) },
      workers: {
        poet: {
          model: scripted({ toolName: 'write_artifact', input: { content: 'x' } }),
          acceptanceMode: 'no_confirmation',
        },
      },
    });
    const events = await handlers.run_worker(runPoet, context(session));
    expect(events[0]).toEqual({
      type: 'worker_started',
      workerId: 'poet',
      acceptanceMode: 'no_confirmation',
    });
    const result = sendAll(session, events);
    expect(plainEffectIds(result?.effects)).toEqual([
      { id: 'S1:e3', type: 'invoke_main_agent', reason: 'worker_completed' },
    ]);
    expect(session.facts().map((artifact) => artifact.content)).toEqual(['x']);
  });

  it('a revision rewrites the draft: the worker sees its draft, and the new version supersedes it', async () => {
    const session = await workerSession();
    const handlers = (model: MockLanguageModelV3) =>
      agentEffects({ mainAgent: { model }, workers: { poet: { model } } });
    const write = (content: string) => scripted({ toolName: 'write_artifact', input: { content } });
    sendAll(session, await handlers(write('first')).run_worker(runPoet, context(session)));
    session.send({ type: 'user_requested_revision', instruction: 'shorter' });
    session.send({ type: 'user_submitted_input', text: 'shorter please' });
    session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd2', kind: 'run_worker', workerId: 'poet', instruction: 'shorter' },
    });
    const model = write('second');
    const events = await handlers(model).run_worker(
      { type: 'run_worker', workerId: 'poet', decisionId: 'd2', instruction: 'shorter' },
      context(session),
    );
    expect(events[1]).toEqual({ type: 'worker_completed', artifactId: 'art-2' });
    const prompt = promptText(model.doGenerateCalls[0] as LanguageModelV3CallOptions);
    expect(prompt).toContain('Your current draft (art-1, revision_requested)');
    expect(prompt).toContain('first');
    sendAll(session, events);
    session.send({ type: 'user_accepted_artifact', artifactId: 'art-2' });
    expect(session.artifacts.list().map((artifact) => [artifact.id, artifact.status])).toEqual([
      ['art-1', 'superseded'],
      ['art-2', 'accepted'],
    ]);
  });

  it('ask_user → worker_needs_input; resume_worker with the answer → worker_completed', async () => {
    const session = await workerSession();
    const model = scripted(
      { toolName: 'ask_user', input: { questions: ['Which tree?'] } },
      { toolName: 'write_artifact', input: { content: 'Maple leaves let go' } },
    );
    const handlers = agentEffects({ mainAgent: { model }, workers: { poet: { model } } });
    const asked = await handlers.run_worker(runPoet, context(session));
    expect(asked).toEqual([
      { type: 'worker_started', workerId: 'poet', acceptanceMode: 'user_confirmed' },
      { type: 'worker_needs_input', workerId: 'poet', questions: ['Which tree?'] },
    ]);
    expect(sendAll(session, asked)?.waitingReason).toEqual({
      kind: 'worker_questions',
      workerId: 'poet',
      questions: ['Which tree?'],
    });
    const answered = session.send({ type: 'user_submitted_input', text: 'a maple' });
    expect(plainEffectIds(answered.effects)).toEqual([
      { id: 'S1:e3', type: 'resume_worker', workerId: 'poet', answer: 'a maple' },
    ]);
    const resume = answered.effects[0] as Parameters<AgentEffectHandlers['resume_worker']>[0];
    const events = await handlers.resume_worker(resume, context(session));
    expect(events).toEqual([{ type: 'worker_completed', artifactId: 'art-1' }]);
    expect(sendAll(session, events)?.waitingReason).toMatchObject({ kind: 'review_artifact' });
    expect(promptText(model.doGenerateCalls[1] as LanguageModelV3CallOptions)).toContain('a maple');
  });

  it('a worker that neither writes nor asks → invalid_agent_output naming the worker', async () => {
    const session = await workerSession();
    const model = scripted({ toolName: 'write_artifact', input: { content: '' } });
    const handlers = agentEffects({
      mainAgent: { model },
      workers: { poet: { model, maxSteps: 2 } },
    });
    const error = await rejectionOf(handlers.run_worker(runPoet, context(session)));
    expect(error.code).toBe('invalid_agent_output');
    expect(error.message).toMatch(
      /^worker poet ended without an artifact .* after 2 step\(s\): its last tool call \(write_artifact\) failed/,
    );
    expect(session.artifacts.list()).toEqual([]);
  });

  it('a worker agentEffects does not know (a prototype key included) → invalid_argument, no model call', async () => {
    const session = await workerSession();
    const model = scripted({ text: 'unused' });
    const handlers = agentEffects({ mainAgent: { model }, workers: { poet: { model } } });
    for (const workerId of ['painter', 'constructor', '__proto__']) {
      const error = await rejectionOf(
        handlers.run_worker({ type: 'run_worker', workerId, decisionId: 'd1' }, context(session)),
      );
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toContain(`no worker ${JSON.stringify(workerId)}`);
    }
    expect(model.doGenerateCalls).toHaveLength(0);
  });

  it('a temporary worker runs on the temporaryWorker agent', async () => {
    const session = await runningSession();
    session.send({
      type: 'main_agent_decision_created',
      decision: { id: 'd1', kind: 'create_temp_worker', workerId: 'critic' },
    });
    const temp = scripted({ toolName: 'write_artifact', input: { content: 'A fair critique' } });
    const handlers = agentEffects({
      mainAgent: { model: scripted({ text: 'unused' }) },
      workers: {},
      temporaryWorker: { model: temp },
    });
    const events = await handlers.run_worker(
      { type: 'run_worker', workerId: 'critic', decisionId: 'd1' },
      context(session),
    );
    expect(sendAll(session, events)?.waitingReason).toMatchObject({ kind: 'review_artifact' });
    expect(session.artifacts.require('art-1')).toMatchObject({
      name: 'critic',
      workerId: 'critic',
    });
    expect(temp.doGenerateCalls).toHaveLength(1);
  });
});

describe('cancellation: ctx.signal stops the model call', () => {
  it('an abort while the model runs rejects the handler with the reason, and the model saw the signal', async () => {
    const session = await workerSession();
    let seen: AbortSignal | undefined;
    const model = new MockLanguageModelV3({
      doGenerate: ({ abortSignal }) => {
        seen = abortSignal;
        return new Promise((_, reject) => {
          abortSignal?.addEventListener('abort', () => reject(abortSignal.reason), { once: true });
        });
      },
    });
    const handlers = agentEffects({ mainAgent: { model }, workers: { poet: { model } } });
    const controller = new AbortController();
    const running = handlers.run_worker(runPoet, context(session, controller.signal));
    await vi.waitFor(() => expect(seen).toBeDefined());
    const reason = new Error('the user rejected the step');
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
    expect(seen?.aborted).toBe(true);
    expect(session.artifacts.list()).toEqual([]);
  });

  it('an effect cancelled before its handler ran makes no model call', async () => {
    const session = await runningSession();
    const model = scripted({ toolName: 'decide', input: { kind: 'finish' } });
    const handlers = agentEffects({ mainAgent: { model }, workers: {} });
    const controller = new AbortController();
    controller.abort(new Error('closed'));
    await expect(
      handlers.invoke_main_agent(invoke, context(session, controller.signal)),
    ).rejects.toThrow('closed');
    expect(model.doGenerateCalls).toHaveLength(0);
  });

  it('an abort that comes after the model answered still rejects: no events for a cancelled effect', async () => {
    const session = await runningSession();
    const controller = new AbortController();
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        controller.abort(new Error('stopped'));
        return {
          content: [
            { type: 'tool-call', toolCallId: 'c1', toolName: 'decide', input: '{"kind":"finish"}' },
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage: mockUsage,
          warnings: [],
        };
      },
    });
    const handlers = agentEffects({ mainAgent: { model }, workers: {} });
    await expect(
      handlers.invoke_main_agent(invoke, context(session, controller.signal)),
    ).rejects.toThrow('stopped');
  });
});

describe('createRolebox({ effects: agentEffects(…) })', () => {
  it('takes the handlers as they are (the types fit EffectHandlers, the check passes)', async () => {
    const handlers: EffectHandlers = agentEffects({
      mainAgent: { model: scripted({ text: 'unused' }) },
      workers: {},
    });
    expect(Object.keys(handlers).sort()).toEqual([
      'invoke_main_agent',
      'resume_worker',
      'run_worker',
    ]);
    const made = createRolebox({ effects: handlers });
    await made.start();
    await made.stop();
  });

  it('run by the runtime: a model without a decision fails its attempt, the retry decides, once', async () => {
    const clock = new SimulatedClock(1_000);
    const model = scripted(
      { text: 'Let me think.' },
      { toolName: 'decide', input: { kind: 'ask_user', message: 'Which season?' } },
    );
    rb = createRolebox({
      clock,
      effects: agentEffects({ mainAgent: { model, maxSteps: 1 }, workers: {} }),
      effectRetry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 100 },
    });
    await rb.start();
    const session = await rb.openSession({ id: 'S1' });
    session.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
    });
    session.send({ type: 'user_submitted_input', text: 'A haiku' });
    await vi.waitFor(() =>
      expect(plainEffectIds(session.view().pendingEffects[0])).toMatchObject({
        id: 'S1:e1',
        attempts: 1,
        lastError: expect.stringContaining('the main agent ended without a decision'),
      }),
    );
    expect(session.view().phase).toBe('running');
    clock.advance(100);
    await vi.waitFor(() =>
      expect(session.view().waitingReason).toEqual({ kind: 'input', message: 'Which season?' }),
    );
    expect(model.doGenerateCalls).toHaveLength(2);
    // Settled by its decision; the question's emit_message, with no handler, once delivered.
    expect(session.view().pendingEffects).toEqual([]);
  });
});

describe('run by the runtime: cancellation reaches the model call', () => {
  it('closing the session while the main agent runs aborts its model call', async () => {
    let seen: AbortSignal | undefined;
    const model = new MockLanguageModelV3({
      doGenerate: ({ abortSignal }) => {
        seen = abortSignal;
        return new Promise((_, reject) => {
          abortSignal?.addEventListener('abort', () => reject(abortSignal.reason), { once: true });
        });
      },
    });
    rb = createRolebox({
      clock: new SimulatedClock(1_000),
      effects: agentEffects({ mainAgent: { model }, workers: {} }),
    });
    await rb.start();
    const session = await rb.openSession({ id: 'S1' });
    session.send({
      type: 'session_started',
      availableSkills: [{ name: 'write' }],
      initialSkill: 'write',
    });
    session.send({ type: 'user_submitted_input', text: 'A haiku' });
    await vi.waitFor(() => expect(seen).toBeDefined());
    expect(seen?.aborted).toBe(false);
    session.close();
    await vi.waitFor(() => expect(seen?.aborted).toBe(true));
    expect(model.doGenerateCalls).toHaveLength(1);
  });
});

describe('bad options and contexts are invalid_argument', () => {
  const model = scripted({ text: 'unused' });
  it.each([
    ['not an object', null, /agentEffects needs \{ mainAgent, workers/],
    ['no mainAgent', { workers: {} }, /mainAgent must be \{ model/],
    ['a null model', { mainAgent: { model: null }, workers: {} }, /mainAgent must be/],
    ['workers an array', { mainAgent: { model }, workers: [] }, /workers must be an object/],
    [
      'a worker without a model',
      { mainAgent: { model }, workers: { poet: {} } },
      /workers\.poet must be/,
    ],
    [
      'maxSteps 0',
      { mainAgent: { model, maxSteps: 0 }, workers: {} },
      /mainAgent\.maxSteps must be an integer from 1 to 100, got 0/,
    ],
    [
      'a bad artifact name',
      { mainAgent: { model }, workers: { poet: { model, artifactName: ' bad' } } },
      /workers\.poet\.artifactName must be/,
    ],
    [
      'an unknown acceptance mode',
      { mainAgent: { model }, workers: { poet: { model, acceptanceMode: 'maybe' } } },
      /acceptanceMode must be one of .* got "maybe"/,
    ],
    [
      'a temporaryWorker that is a string',
      { mainAgent: { model }, workers: {}, temporaryWorker: 'x' },
      /temporaryWorker must be/,
    ],
  ])('%s', (_label, options, message) => {
    const error = errorOf(() => agentEffects(options as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toMatch(message);
  });

  it('a handler called without the effect context', async () => {
    const handlers = agentEffects({ mainAgent: { model }, workers: {} });
    for (const ctx of [
      undefined,
      {},
      { session: {}, signal: new AbortController().signal, idempotencyKey: 'k' },
    ]) {
      const error = await rejectionOf(handlers.invoke_main_agent(invoke, ctx as never));
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toContain('needs the effect context');
    }
    expect(model.doGenerateCalls).toHaveLength(0);
  });
});
