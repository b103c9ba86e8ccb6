// requireApproval (issue 25 item 3): a tool the host marks as needing approval runs only after
// the host approves the request its call opened; any other end of the request gives the model
// a refusal and the tool never runs; an agent's own answer approves nothing. The agent runs
// as agentEffects' main agent on the AI SDK's mock model, its handler called directly with an
// effect context (the SIGKILL case, through real processes: ai.require-approval.crash.test.ts).
import { tool } from 'ai';
import type { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  agentEffects,
  bindApprovalTools,
  type RequireApprovalOptions,
  requireApproval,
} from '../src/ai/index.js';
import { refusalText } from '../src/ai/require-approval.js';
import {
  defineFunction,
  type EffectHandlerContext,
  type FunctionSpec,
  type Rolebox,
  type SessionHandle,
} from '../src/index.js';
import { errorOf } from './support/errors.js';
import { phaseOf, startWith } from './support/rolebox.js';
import { scripted } from './support/scripted-model.js';

// Loading `ai` through Vite the first time takes a few seconds on a busy machine.
vi.setConfig({ testTimeout: 60_000 });

let rb: Rolebox | undefined;
afterEach(async () => {
  await rb?.stop();
  rb = undefined;
});

const DEPLOY: FunctionSpec = {
  name: 'deploy',
  gate: 'signal_observed(answer)',
  requires_approval_for: ['deploy_tool'],
};

/** A running session with `deploy` live, the main agent about to be called. */
async function deploySession(specs: FunctionSpec[] = [DEPLOY]): Promise<SessionHandle> {
  const started = await startWith(specs);
  rb = started.rb;
  const { session } = started;
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'ship' }],
    initialSkill: 'ship',
  });
  session.send({ type: 'user_submitted_input', text: 'ship it' });
  for (const spec of specs) session.activate(spec.name);
  return session;
}

/** The deploy tool: it records every run (input and the key it was given) and answers a text. */
function deployTool(options: RequireApprovalOptions<{ env: string }> = {}) {
  const runs: { input: unknown; key: unknown }[] = [];
  const wrapped = requireApproval(
    tool({
      description: 'Deploys the app',
      inputSchema: z.object({ env: z.string() }),
      execute: async (input, { experimental_context }) => {
        runs.push({
          input,
          key: (experimental_context as { idempotencyKey?: unknown } | undefined)?.idempotencyKey,
        });
        return `deployed to ${input.env}`;
      },
    }),
    { pollMs: 2, ...options },
  );
  return { wrapped, runs };
}

const context = (session: SessionHandle, key = 'S1:e7'): EffectHandlerContext => ({
  session,
  signal: new AbortController().signal,
  attempt: 1,
  idempotencyKey: key,
});

const invoke = { type: 'invoke_main_agent', reason: 'user_submitted_input' } as const;

/** The main agent: it calls deploy_tool with `input`, then finishes. */
function agentCalling(wrapped: ReturnType<typeof deployTool>['wrapped'], input = { env: 'prod' }) {
  const model = scripted(
    { toolName: 'deploy_tool', input },
    { toolName: 'decide', input: { kind: 'finish' } },
  );
  const handlers = agentEffects({
    mainAgent: { model, tools: { deploy_tool: wrapped } },
    workers: {},
  });
  return { model, handlers };
}

/** What the model was told the tool answered, from its second call's prompt. */
function toolResultSeen(model: MockLanguageModelV3): string {
  const prompt = model.doGenerateCalls[1]?.prompt ?? [];
  const results = prompt.flatMap((message) =>
    message.role === 'tool' ? message.content.filter((part) => part.type === 'tool-result') : [],
  );
  return JSON.stringify(results.map((part) => part.output));
}

/** Waits (real clock) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(check()).toBe(true);
}

const requestsOf = (session: SessionHandle, name = 'deploy') =>
  session.view().functions.find((fn) => fn.name === name)?.requests ?? [];

describe('requireApproval: the tool runs only after the host approves its request', () => {
  it('a call opens a host-only request carrying the tool and its arguments; execute waits; approve runs it once with the request id as its key', async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool();
    const { model, handlers } = agentCalling(wrapped);
    const running = handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 1);
    const [request] = requestsOf(session);
    expect(request).toMatchObject({
      id: 'deploy:r1',
      type: 'need_approval',
      status: 'open',
      hostOnly: true,
      payload: { tool: 'deploy_tool', input: { env: 'prod' }, callKey: 'S1:e7/deploy_tool#1' },
    });
    expect(phaseOf(session, 'deploy')).toBe('gated');
    // Time passes, the model's step waits, the tool has not run.
    await new Promise((r) => setTimeout(r, 30));
    expect(runs).toEqual([]);
    expect(model.doGenerateCalls).toHaveLength(1);

    session.approve('deploy:r1', { by: 'alice' });
    const events = await running;
    expect(runs).toEqual([{ input: { env: 'prod' }, key: 'deploy:r1' }]);
    expect(toolResultSeen(model)).toContain('deployed to prod');
    expect(events).toEqual([{ type: 'main_agent_decision_created', decision: expect.anything() }]);
    const fn = session.view().functions.find((view) => view.name === 'deploy');
    expect(fn?.kv['tool_output:deploy:r1']).toEqual({ output: 'deployed to prod' });
    expect(fn?.requests[0]).toMatchObject({
      status: 'answered',
      answeredBy: 'alice',
      answeredByHost: true,
    });
    expect(phaseOf(session, 'deploy')).toBe('active');
  });

  it('rejected: the model reads a refusal naming the tool, the request and the reason; execute never runs', async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool();
    const { model, handlers } = agentCalling(wrapped);
    const running = handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 1);
    session.reject('deploy:r1', { by: 'bob', reason: 'not on a Friday' });
    await running;
    expect(runs).toEqual([]);
    expect(toolResultSeen(model)).toContain(
      'tool deploy_tool was not run: its approval request deploy:r1 was rejected by bob: not on a Friday',
    );
    expect(phaseOf(session, 'deploy')).toBe('gated');
  });

  it('any other end (its function ended with the request open): a refusal, execute never runs', async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool();
    const { model, handlers } = agentCalling(wrapped);
    const running = handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 1);
    session.deactivate('deploy');
    await running;
    expect(runs).toEqual([]);
    expect(toolResultSeen(model)).toContain(
      'its approval request deploy:r1 was never answered: function deploy ended first',
    );
  });

  it('a request whose deadline passes (approval_timeout on the injected clock): a refusal, execute never runs', async () => {
    const started = await startWith([{ ...DEPLOY, approval_timeout: '15m' }]);
    rb = started.rb;
    const { session, clock } = started;
    session.send({
      type: 'session_started',
      availableSkills: [{ name: 'ship' }],
      initialSkill: 'ship',
    });
    session.send({ type: 'user_submitted_input', text: 'ship it' });
    session.activate('deploy');
    const { wrapped, runs } = deployTool();
    const { model, handlers } = agentCalling(wrapped);
    const running = handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 1);
    clock.advance(15 * 60_000 - 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(requestsOf(session)[0]?.status, 'not a millisecond early').toBe('open');
    clock.advance(1);
    await running;
    expect(requestsOf(session)[0]?.status).toBe('expired');
    expect(runs).toEqual([]);
    expect(toolResultSeen(model)).toContain(
      'tool deploy_tool was not run: its approval request deploy:r1 expired',
    );
  });

  it('an expired request (a deadline) is refused like a rejection: the text says how it ended', () => {
    const request = {
      id: 'deploy:r2',
      function: 'deploy',
      type: 'need_approval',
      payload: null,
      openedAt: 1,
      version: 2,
      status: 'expired',
      answeredAt: 9,
    } as const;
    expect(refusalText('deploy_tool', { request, live: true })).toBe(
      'tool deploy_tool was not run: its approval request deploy:r2 expired. Do not call it again for the same action unless the user asks.',
    );
  });

  it("an agent's own answer does not approve: named, it is refused (approval_host_only); unnamed, it passes over the request", async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool();
    const { handlers } = agentCalling(wrapped);
    const running = handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 1);
    const before = JSON.stringify(session.view().functions);

    const named = errorOf(() =>
      session.signal({ type: 'answer', payload: { requestId: 'deploy:r1' } }),
    );
    expect(named.code).toBe('approval_host_only');
    expect(named.message).toContain('deploy:r1');
    expect(
      errorOf(() =>
        session.tool('|signal| type=revise_needed, payload={"requestId":"deploy:r1","reason":"x"}'),
      ).code,
    ).toBe('approval_host_only');
    expect(JSON.stringify(session.view().functions)).toBe(before);

    // Unnamed, through the agent's own signal tool text: recorded, but the request stays open.
    const receipt = session.tool('|signal| type=answer, payload={"note":"I approve myself"}');
    expect(receipt.text).not.toContain('deploy:r1');
    session.idle();
    await new Promise((r) => setTimeout(r, 30));
    expect(requestsOf(session)[0]?.status).toBe('open');
    expect(phaseOf(session, 'deploy')).toBe('gated');
    expect(runs).toEqual([]);

    session.approve('deploy:r1');
    await running;
    expect(runs).toHaveLength(1);
  });

  it('a run made again with the same key (a crash while the agent waited) finds its request; once approved and run, it is never run again', async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool();
    const first = agentCalling(wrapped).handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 1);
    // The same effect's handler again (as after a restart): no second request.
    const again = agentCalling(wrapped).handlers.invoke_main_agent(invoke, context(session));
    await new Promise((r) => setTimeout(r, 20));
    expect(requestsOf(session)).toHaveLength(1);
    session.approve('deploy:r1');
    await Promise.all([first, again]);
    const third = agentCalling(wrapped);
    await third.handlers.invoke_main_agent(invoke, context(session));
    expect(toolResultSeen(third.model)).toContain('deployed to prod');
    // Two runs raced on the one approval (the at-least-once window); the third read the record.
    expect(runs.length).toBeLessThanOrEqual(2);
    const fourth = agentCalling(wrapped);
    await fourth.handlers.invoke_main_agent(invoke, context(session));
    expect(runs.length).toBeLessThanOrEqual(2);
    expect(requestsOf(session)).toHaveLength(1);
  });

  it('a run with other arguments under the same key opens a request of its own: an approval covers the arguments it showed', async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool();
    const first = agentCalling(wrapped).handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 1);
    session.approve('deploy:r1');
    await first;
    const other = agentCalling(wrapped, { env: 'prod-eu' });
    const running = other.handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session).length === 2);
    expect(requestsOf(session)[1]).toMatchObject({
      id: 'deploy:r2',
      status: 'open',
      payload: { input: { env: 'prod-eu' } },
    });
    expect(runs).toHaveLength(1);
    session.approve('deploy:r2');
    await running;
    expect(runs.map((run) => run.key)).toEqual(['deploy:r1', 'deploy:r2']);
  });

  it('`when` decides which calls need approval: a call it lets pass runs at once, with no request', async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool({ when: (input) => input.env === 'prod' });
    const { model, handlers } = agentCalling(wrapped, { env: 'staging' });
    await handlers.invoke_main_agent(invoke, context(session));
    expect(runs).toEqual([{ input: { env: 'staging' }, key: undefined }]);
    expect(requestsOf(session)).toEqual([]);
    expect(toolResultSeen(model)).toContain('deployed to staging');
  });

  it('the `function` option opens the request there, whatever requires_approval_for says', async () => {
    const session = await deploySession([{ name: 'review', gate: 'signal_observed(answer)' }]);
    const { wrapped, runs } = deployTool({ function: 'review' });
    const { handlers } = agentCalling(wrapped);
    const running = handlers.invoke_main_agent(invoke, context(session));
    await until(() => requestsOf(session, 'review').length === 1);
    expect(requestsOf(session, 'review')[0]?.id).toBe('review:r1');
    session.approve('review:r1');
    await running;
    expect(runs).toHaveLength(1);
  });

  it('fails closed without a function to take the request: the model gets the error, the tool never runs', async () => {
    const session = await deploySession([
      { name: 'other' },
      { name: 'deploy', gate: 'signal_observed(answer)' },
    ]);
    session.deactivate('deploy');
    const { wrapped, runs } = deployTool();
    const { model, handlers } = agentCalling(wrapped);
    await handlers.invoke_main_agent(invoke, context(session));
    expect(runs).toEqual([]);
    expect(toolResultSeen(model)).toContain('no live function of session S1 takes its requests');

    const named = deployTool({ function: 'deploy' });
    const second = agentCalling(named.wrapped);
    await second.handlers.invoke_main_agent(invoke, context(session, 'S1:e8'));
    expect(named.runs).toEqual([]);
    expect(toolResultSeen(second.model)).toContain('is not active in session S1');
  });

  it('a cancelled effect stops the wait: the handler rejects with the abort reason, the tool never runs, the request stays open', async () => {
    const session = await deploySession();
    const { wrapped, runs } = deployTool();
    const { handlers } = agentCalling(wrapped);
    const controller = new AbortController();
    const running = handlers.invoke_main_agent(invoke, {
      ...context(session),
      signal: controller.signal,
    });
    await until(() => requestsOf(session).length === 1);
    controller.abort(new Error('effect cancelled'));
    await expect(running).rejects.toThrow('effect cancelled');
    session.approve('deploy:r1');
    await new Promise((r) => setTimeout(r, 20));
    expect(runs).toEqual([]);
  });

  it('unbound (no session), the tool refuses to run', async () => {
    const { wrapped, runs } = deployTool();
    expect(() =>
      (wrapped.execute as (input: unknown, o: unknown) => unknown)(
        { env: 'prod' },
        { toolCallId: 'c', messages: [] },
      ),
    ).toThrow(/needs the host’s approval and has no session/);
    expect(runs).toEqual([]);
  });
});

describe('requireApproval, bindApprovalTools and agent tools: bad input', () => {
  const plain = tool({ inputSchema: z.object({}), execute: async () => 'ok' });

  it.each([
    [null, {}, 'requireApproval needs an AI SDK tool with an execute function, got null'],
    [{ description: 'x' }, {}, 'an execute function'],
    [plain, { when: 'always' }, 'option when must be a function'],
    [plain, { function: 'Deploy' }, 'option function must be a function name'],
    [plain, { pollMs: 0 }, 'option pollMs must be a whole number'],
    [plain, { wen: () => true }, 'wen'],
    [plain, [], 'options must be an object'],
  ])('requireApproval(%j, %j): invalid_argument', (made, options, message) => {
    const error = errorOf(() => requireApproval(made as never, options as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(message);
  });

  it('bindApprovalTools needs a session and a key; it leaves other tools as they are', async () => {
    expect(
      errorOf(() => bindApprovalTools({}, { session: {} as never, idempotencyKey: 'k' })).code,
    ).toBe('invalid_argument');
    const session = await deploySession();
    expect(errorOf(() => bindApprovalTools({}, { session, idempotencyKey: '' })).message).toContain(
      'bindApprovalTools needs { session, idempotencyKey, signal? }',
    );
    const bound = bindApprovalTools({ plain }, { session, idempotencyKey: 'k' });
    expect(bound.plain).toBe(plain);
  });

  it.each([
    [{ decide: plain }, "tools.decide is one of rolebox's own tools"],
    [{ signal: plain }, "tools.signal is one of rolebox's own tools"],
    [{ x: 3 }, 'tools.x is not an AI SDK tool'],
    [[plain], 'tools must be an object of AI SDK tools by name'],
  ])('agentEffects refuses tools %j', (tools, message) => {
    const model = scripted({ toolName: 'decide', input: { kind: 'finish' } });
    const error = errorOf(() =>
      agentEffects({ mainAgent: { model, tools: tools as never }, workers: {} }),
    );
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(message);
  });
});

describe('defineFunction: requires_approval_for', () => {
  it('keeps the listed tools', () => {
    expect(defineFunction(DEPLOY).requiresApprovalFor).toEqual(['deploy_tool']);
    expect(defineFunction({ name: 'plain' })).not.toHaveProperty('requiresApprovalFor');
  });

  it.each([
    ['deploy_tool', 'a list of tool names'],
    [[''], 'a tool name must be'],
    [['deploy tool'], 'a tool name must be'],
    [[3], 'a tool name'],
    [['constructor'], 'must not be an Object.prototype key'],
    [['__proto__'], 'must not be an Object.prototype key'],
    [['toString'], 'must not be an Object.prototype key'],
    [['deploy_tool', 'deploy_tool'], 'a tool is listed twice'],
  ])('refuses %j: invalid_function_definition naming the field', (value, message) => {
    const error = errorOf(() =>
      defineFunction({ name: 'deploy', requires_approval_for: value as never }),
    );
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toContain('requires_approval_for');
    expect(error.message).toContain(message);
  });
});
