import { describeValue, RoleboxError } from '../errors.js';

/** An agent tool call written as text: `|name| args` or `|name:params| args`. */
export interface ToolCallText {
  /** The tool name, lower-case (`signal`, `loop`, `write_file`, …). */
  readonly name: string;
  /** What stood after a colon inside the bars (`3,fresh` in `|loop:3,fresh|`), if anything. */
  readonly params?: string;
  /** Everything after the closing bar, trimmed. */
  readonly args: string;
}

const TOOL_CALL = /^\s*\|\s*([A-Za-z_][A-Za-z0-9_-]*)\s*(?::([^|]*))?\|([\s\S]*)$/;

/**
 * Splits agent tool-call text into name, params and args.
 *
 * Expects: text such as `|signal| type=answer` or `|loop:3| analyse`.
 * Throws: `malformed_tool_text` naming the text when it does not start with `|name|`.
 */
export function parseToolCallText(text: unknown): ToolCallText {
  if (typeof text !== 'string') {
    throw new RoleboxError(
      'malformed_tool_text',
      `tool-call text must be a string, got ${describeValue(text)}`,
      { text },
    );
  }
  const match = TOOL_CALL.exec(text);
  if (!match) {
    throw new RoleboxError(
      'malformed_tool_text',
      `tool-call text must look like "|name| args", got ${describeValue(text)}`,
      { text },
    );
  }
  const [, name, params, args] = match;
  const call: ToolCallText = {
    name: (name as string).toLowerCase(),
    args: (args as string).trim(),
  };
  return params === undefined ? call : { ...call, params: params.trim() };
}
