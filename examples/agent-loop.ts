// `npm run example:agent-loop` runs this: an agent loop on the Vercel AI SDK with rolebox's
// tools. The model asks for approval (need_approval), the host approves (a user message),
// the model answers (answer) and the function completes. The model is the AI SDK's mock,
// scripted to behave like an agent, so this runs offline; put a real model in its place
// (`model: openai('gpt-4.1')`, …) and nothing else changes.
import { generateText, type ModelMessage, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { createRolebox, defineFunction } from 'rolebox';
import { sessionTools } from 'rolebox/ai';

// `deploy` is gated until the user approves, and done once the agent has answered.
const deploy = defineFunction({
  name: 'deploy',
  gate: 'user_approval()',
  continue_until: 'signal_observed(answer)',
});
const rb = createRolebox({ functions: [deploy] });
await rb.start();
const session = await rb.openSession({ id: 'deploy-v2' });
session.activate('deploy');
const phase = () => session.view().functions.find((fn) => fn.name === 'deploy')?.phase;
console.log(`deploy is ${phase()}`);

const tools = sessionTools(session);
const model = scriptedAgent();
const history: ModelMessage[] = [{ role: 'user', content: 'Deploy v2 to production.' }];

/** One turn of the agent: generateText runs the model and its tool calls until it replies. */
async function turn(): Promise<void> {
  const result = await generateText({ model, tools, messages: history, stopWhen: stepCountIs(4) });
  for (const step of result.steps) {
    for (const part of step.content) {
      if (part.type === 'tool-call')
        console.log(`model → ${part.toolName} ${JSON.stringify(part.input)}`);
      if (part.type === 'tool-result') console.log(`tool  ← ${part.output}`);
      if (part.type === 'tool-error') console.log(`tool  ← refused: ${String(part.error)}`);
    }
  }
  console.log(`model: ${result.text}`);
  history.push(...result.response.messages);
  // The agent's turn ended: an idle cycle decides which functions are done.
  console.log(`idle → completed ${JSON.stringify(session.idle().completed)}, deploy is ${phase()}`);
}

await turn();
// The host shows the request to a human, who approves: a user message opens the gate.
const approval = 'Approved, go ahead.';
session.message(approval);
history.push({ role: 'user', content: approval });
console.log(`user: ${approval} (deploy is ${phase()})`);
await turn();
await rb.stop();

/**
 * A stand-in for an LLM: asks for approval first, answers once the user approved, and
 * replies in words after each tool result.
 */
function scriptedAgent(): MockLanguageModelV3 {
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 10, text: 10, reasoning: 0 },
  };
  let calls = 0;
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last?.role === 'tool') {
        const approved = prompt.some(
          (message) =>
            message.role === 'user' &&
            message.content.some((part) => part.type === 'text' && part.text.includes('Approved')),
        );
        const text = approved
          ? 'v2 is deployed to production.'
          : 'I have asked for approval to deploy v2 to production.';
        return {
          content: [{ type: 'text', text }],
          finishReason: stop('stop'),
          usage,
          warnings: [],
        };
      }
      const approved = last?.role === 'user' && JSON.stringify(last.content).includes('Approved');
      const input = approved
        ? { type: 'answer', payload: { deployed: 'v2' } }
        : { type: 'need_approval', payload: { reason: 'deploy v2 to production' } };
      const call = {
        type: 'tool-call' as const,
        toolCallId: `call-${++calls}`,
        toolName: 'signal',
        input: JSON.stringify(input),
      };
      return { content: [call], finishReason: stop('tool-calls'), usage, warnings: [] };
    },
  });
}

function stop(unified: 'stop' | 'tool-calls') {
  return { unified, raw: undefined };
}
