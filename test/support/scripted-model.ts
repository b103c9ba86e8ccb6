import { MockLanguageModelV3 } from 'ai/test';

/** What a scripted model answers one call with: a tool call, or plain text. */
export type ScriptedReply = { toolName: string; input: unknown } | { text: string };

/** The token usage every scripted answer reports (one in, one out), for hand-made mock answers too. */
export const mockUsage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/**
 * A mock model (AI SDK 6) that answers each call with the next of `replies`, and the last one
 * again when they run out: a tool call (`call-<n>` ids, finish reason `tool-calls`) or text.
 */
export function scripted(...replies: ScriptedReply[]): MockLanguageModelV3 {
  let index = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const reply = replies[Math.min(index, replies.length - 1)] as ScriptedReply;
      index += 1;
      if ('text' in reply)
        return {
          content: [{ type: 'text', text: reply.text }],
          finishReason: { unified: 'stop', raw: undefined },
          usage: mockUsage,
          warnings: [],
        };
      return {
        content: [
          {
            type: 'tool-call',
            toolCallId: `call-${index}`,
            toolName: reply.toolName,
            input: JSON.stringify(reply.input),
          },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: mockUsage,
        warnings: [],
      };
    },
  });
}
