// rolebox/ai on the Vercel AI SDK: generateText calls the tools on a mock language model,
// the session sees the calls, the model reads the replies; a refusal reaches the model as
// a tool error and the host as the RoleboxError, without stopping the loop.
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loopTool, sessionTools, signalTool, stopLoopTool } from '../src/ai/index.js';
import { isRoleboxError, type Rolebox } from '../src/index.js';
import { errorOf } from './support/errors.js';
import { phaseOf, startWith } from './support/rolebox.js';

// Loading `ai` through Vite the first time takes a few seconds on a busy machine.
vi.setConfig({ testTimeout: 60_000 });

let rb: Rolebox | undefined;
afterEach(async () => {
  await rb?.stop();
  rb = undefined;
});

async function session() {
  const started = await startWith([
    {
      name: 'approval',
      gate: 'signal_observed(answer)',
      continue_until: 'signal_observed(answer)',
    },
  ]);
  rb = started.rb;
  started.session.activate('approval');
  return started.session;
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A model that makes the given tool calls, one step each, then says "done". */
function modelCalling(...calls: { toolName: string; input: unknown }[]) {
  return new MockLanguageModelV3({
    doGenerate: [
      ...calls.map((call, index) => ({
        content: [
          {
            type: 'tool-call' as const,
            toolCallId: `call-${index + 1}`,
            toolName: call.toolName,
            input: JSON.stringify(call.input),
          },
        ],
        finishReason: { unified: 'tool-calls' as const, raw: undefined },
        usage,
        warnings: [],
      })),
      {
        content: [{ type: 'text' as const, text: 'done' }],
        finishReason: { unified: 'stop' as const, raw: undefined },
        usage,
        warnings: [],
      },
    ],
  });
}

/** What the model was told a tool call gave, in the prompt of its last call. */
function toolOutputsSeen(model: MockLanguageModelV3): unknown[] {
  const prompt = model.doGenerateCalls.at(-1)?.prompt ?? [];
  return prompt.flatMap((message) =>
    message.role === 'tool'
      ? message.content.flatMap((part) => (part.type === 'tool-result' ? [part.output] : []))
      : [],
  );
}

describe('rolebox tools in generateText', () => {
  it('sessionTools are the agent tools by default; the model is told their schemas', async () => {
    const s = await session();
    expect(Object.keys(sessionTools(s))).toEqual(['signal', 'start_loop', 'stop_loop']);
    expect(Object.keys(sessionTools(s, { tools: ['signal', 'session_view'] }))).toEqual([
      'signal',
      'session_view',
    ]);
    const model = modelCalling();
    await generateText({ model, tools: sessionTools(s), prompt: 'hi' });
    const offered = model.doGenerateCalls[0]?.tools ?? [];
    expect(offered.map((tool) => tool.name)).toEqual(['signal', 'start_loop', 'stop_loop']);
    expect(offered[0]).toMatchObject({
      type: 'function',
      inputSchema: { properties: { type: { enum: expect.arrayContaining(['need_approval']) } } },
    });
  });

  it('runs the signals the model emits on the session and hands the receipts back', async () => {
    const s = await session();
    const model = modelCalling(
      { toolName: 'signal', input: { type: 'need_approval', payload: { reason: 'prod' } } },
      { toolName: 'signal', input: { type: 'answer', payload: { approved: true } } },
    );
    const result = await generateText({
      model,
      tools: { signal: signalTool(s) },
      prompt: 'deploy',
      stopWhen: stepCountIs(5),
    });
    expect(result.text).toBe('done');
    expect(toolOutputsSeen(model)).toEqual([
      {
        type: 'text',
        value:
          'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request approval:r1',
      },
      {
        type: 'text',
        value:
          'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition, answered approval:r1',
      },
    ]);
    expect(s.idle().completed).toEqual(['approval']);
  });

  it('a refused call is a tool error: the model reads why, the host gets the code, the loop goes on', async () => {
    const s = await session();
    const before = JSON.stringify(s.view());
    const model = modelCalling(
      { toolName: 'stop_loop', input: {} },
      // Valid for the schema, refused by the session: a payload deeper than allowed.
      {
        toolName: 'signal',
        input: { type: 'progress', payload: JSON.parse(`${'{"a":'.repeat(70)}1${'}'.repeat(70)}`) },
      },
    );
    const result = await generateText({
      model,
      tools: { signal: signalTool(s), stop_loop: stopLoopTool(s) },
      prompt: 'go',
      stopWhen: stepCountIs(5),
    });
    expect(result.text).toBe('done');
    const errors = result.steps.flatMap((step) =>
      step.content.flatMap((part) => (part.type === 'tool-error' ? [part.error] : [])),
    );
    expect(errors.map((error) => isRoleboxError(error) && error.code)).toEqual([
      'no_active_loop',
      'invalid_signal_payload',
    ]);
    expect(toolOutputsSeen(model)).toEqual([
      { type: 'error-text', value: 'session S1 has no running loop' },
      { type: 'error-text', value: expect.stringContaining('signal progress: payload') },
    ]);
    expect(JSON.stringify(s.view())).toBe(before);
  });

  it('an input outside the schema never reaches the session', async () => {
    const s = await session();
    const model = modelCalling({ toolName: 'signal', input: { type: 'approve' } });
    const result = await generateText({
      model,
      tools: sessionTools(s),
      prompt: 'go',
      stopWhen: stepCountIs(3),
    });
    const [error] = result.steps[0]?.content.filter((part) => part.type === 'tool-error') ?? [];
    expect(error).toMatchObject({ toolName: 'signal' });
    expect(isRoleboxError((error as { error: unknown }).error)).toBe(false);
    expect(s.view().functions[0]?.signals).toEqual({});
    expect(phaseOf(s, 'approval')).toBe('gated');
  });

  it('refuses to build tools for something that is not a session handle', () => {
    expect(errorOf(() => signalTool({} as never)).code).toBe('invalid_argument');
    expect(errorOf(() => loopTool(undefined as never)).code).toBe('invalid_argument');
    expect(errorOf(() => sessionTools('S1' as never)).code).toBe('invalid_argument');
  });
});
