import { parseToolCallText } from '../base/tool-call.js';
import { describeValue, RoleboxError } from '../errors.js';
import { parseSignalArgs, type SignalArgs } from './schema.js';

/**
 * Parses the agent's `|signal|` tool-call text into validated arguments.
 *
 * Expects: `|signal| type=answer`, `|signal| type=need_approval, payload={"reason": "…"}`
 * (payload is JSON; `type` may be quoted), or `|signal| {"type": "answer", "payload": {…}}`.
 * Returns: {@link SignalArgs}.
 * Throws: `malformed_tool_text`, `malformed_signal_text`, `unknown_signal_type` or
 * `invalid_signal_payload`, each naming the offending text.
 */
export function parseSignalText(text: string): SignalArgs {
  const call = parseToolCallText(text);
  if (call.name !== 'signal' || call.params !== undefined) {
    throw new RoleboxError(
      'malformed_signal_text',
      `expected a "|signal|" call, got ${describeValue(text)}`,
      { text },
    );
  }
  return parseSignalArgs(parseSignalArguments(call.args, text));
}

/** Parses the text after `|signal|` into a plain object (not yet validated). */
export function parseSignalArguments(args: string, text: string = args): Record<string, unknown> {
  const fail = (why: string): never => {
    throw new RoleboxError(
      'malformed_signal_text',
      `cannot parse signal text ${describeValue(text)}: ${why}`,
      { text },
    );
  };
  if (args.startsWith('{')) {
    const end = scanJsonValue(args, 0);
    if (end === -1 || args.slice(end).trim() !== '')
      fail('the JSON object is not closed or has trailing text');
    const value = parseJson(args, fail);
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      fail('expected a JSON object');
    return value as Record<string, unknown>;
  }

  const result: Record<string, unknown> = {};
  let index = 0;
  while (index < args.length) {
    const keyMatch = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*/.exec(args.slice(index));
    if (!keyMatch) fail(`expected key=value at ${describeValue(args.slice(index))}`);
    const key = (keyMatch as RegExpExecArray)[1] as string;
    if (key !== 'type' && key !== 'payload')
      fail(`unknown argument ${describeValue(key)} (only type and payload)`);
    if (Object.hasOwn(result, key)) fail(`argument ${key} given twice`);
    index += (keyMatch as RegExpExecArray)[0].length;

    const first = args[index];
    if (first === '{' || first === '[' || first === '"') {
      const end = scanJsonValue(args, index);
      if (end === -1) fail(`the value of ${key} is not closed`);
      result[key] = parseJson(args.slice(index, end), fail);
      index = end;
    } else {
      // A bare value is one token: `type=answer payload={}` is a missing comma, not a type.
      const raw = /^[^,\s]*/.exec(args.slice(index))?.[0] ?? '';
      if (raw === '') fail(`argument ${key} has no value`);
      result[key] = raw;
      index += raw.length;
    }
    const rest = /^\s*(,)?\s*/.exec(args.slice(index)) as RegExpExecArray;
    index += rest[0].length;
    if (!rest[1] && index < args.length)
      fail(`expected "," before ${describeValue(args.slice(index))}`);
  }
  if (!Object.hasOwn(result, 'type')) fail('missing type=…');
  return result;
}

function parseJson(source: string, fail: (why: string) => never): unknown {
  try {
    return JSON.parse(source);
  } catch (error) {
    return fail(`invalid JSON (${(error as Error).message})`);
  }
}

/**
 * Finds where the JSON value starting at `start` ends (exclusive), respecting strings and
 * escapes; -1 when it is never closed. Only objects, arrays and strings are scanned.
 */
function scanJsonValue(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      depth--;
      if (depth === 0) return i + 1;
      if (depth < 0) return -1;
    }
  }
  return -1;
}
