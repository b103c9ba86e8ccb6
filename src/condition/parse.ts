import { MAX_CONDITION_DEPTH } from '../base/input-limits.js';
import { describeValue, RoleboxError } from '../errors.js';
import { type ConditionRegistry, defaultConditionRegistry } from './registry.js';
import type { Condition, ConditionAst } from './types.js';

const NAMED = /^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([\s\S]*)\))?$/;

/** The combinators, which may also be written as text: `all(a, b)`, `any(a, b)`, `not(a)`. */
const COMBINATORS = new Set(['all', 'any', 'not']);

/**
 * Parses and validates a condition (string or `all`/`any`/`not` object).
 *
 * Expects: a {@link Condition}; `where` names its place for messages (e.g. `gate`). A string
 * is `name`, `name(arg)` or a combinator written as text (`all(a, b)`, `any(a, b)`,
 * `not(a)`), so `formatCondition`'s output parses back to the same AST. At most
 * {@link MAX_CONDITION_DEPTH} levels deep.
 * Returns: the {@link ConditionAst}.
 * Throws: `condition_syntax` (malformed, or nested too deep), `unknown_condition` (name not
 * registered), `invalid_condition_argument`; each message is `<where>: <reason>`, naming the
 * text, and `details` carries `where` (the path of the offending part, e.g. `gate.all[1]`) and
 * `reason` (the message without that prefix, for callers that name the place themselves).
 */
export function parseCondition(
  condition: unknown,
  registry: ConditionRegistry = defaultConditionRegistry,
  where = 'condition',
): ConditionAst {
  return parseAt(condition, registry, where, 1);
}

function parseAt(
  condition: unknown,
  registry: ConditionRegistry,
  where: string,
  depth: number,
): ConditionAst {
  if (depth > MAX_CONDITION_DEPTH) {
    fail(
      'condition_syntax',
      where,
      `conditions may be nested at most ${MAX_CONDITION_DEPTH} levels deep`,
      { maxDepth: MAX_CONDITION_DEPTH },
    );
  }
  if (typeof condition === 'string') return parseText(condition, registry, where, depth);
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) {
    fail(
      'condition_syntax',
      where,
      `a condition is a string like signal_observed(answer) or an object with all/any/not, got ${describeValue(condition)}`,
      { text: condition },
    );
  }
  const keys = Object.keys(condition);
  const key = keys[0];
  if (keys.length !== 1 || (key !== 'all' && key !== 'any' && key !== 'not')) {
    fail(
      'condition_syntax',
      where,
      `a condition object has exactly one key, all, any or not; got ${describeValue(keys)}`,
      { text: condition },
    );
  }
  const value = (condition as Record<string, unknown>)[key];
  if (key === 'not')
    return { kind: 'not', of: parseAt(value, registry, `${where}.not`, depth + 1) };
  if (!Array.isArray(value)) {
    fail(
      'condition_syntax',
      `${where}.${key}`,
      `must be a list of conditions, got ${describeValue(value)}`,
      { text: condition },
    );
  }
  return {
    kind: key,
    of: value.map((item, index) => parseAt(item, registry, `${where}.${key}[${index}]`, depth + 1)),
  };
}

function parseText(
  text: string,
  registry: ConditionRegistry,
  where: string,
  depth: number,
): ConditionAst {
  const syntax = (why: string): never => fail('condition_syntax', where, why, { text });
  const match = NAMED.exec(text.trim());
  if (!match)
    return syntax(`cannot parse condition ${describeValue(text)}; expected name or name(arg)`);
  const name = match[1] as string;
  const rawArg = match[2]?.trim();
  const arg = rawArg === undefined || rawArg === '' ? undefined : rawArg;
  if (arg !== undefined && /[()]/.test(arg) && !balanced(arg))
    syntax(`unbalanced parentheses in ${describeValue(text)}`);
  if (COMBINATORS.has(name)) {
    if (match[2] === undefined)
      syntax(`${name} needs its conditions in parentheses: ${name}(…), got ${describeValue(text)}`);
    const parts = arg === undefined ? [] : splitTopLevel(arg);
    if (parts.some((part) => part.trim() === ''))
      syntax(`an empty condition in ${describeValue(text)}`);
    if (name === 'not') {
      if (parts.length !== 1)
        syntax(`not takes exactly one condition, got ${parts.length} in ${describeValue(text)}`);
      return {
        kind: 'not',
        of: parseAt(parts[0] as string, registry, `${where}.not`, depth + 1),
      };
    }
    return {
      kind: name as 'all' | 'any',
      of: parts.map((part, index) =>
        parseAt(part, registry, `${where}.${name}[${index}]`, depth + 1),
      ),
    };
  }
  const spec = registry.get(name);
  if (!spec) {
    fail(
      'unknown_condition',
      where,
      `unknown condition ${describeValue(name)} in ${describeValue(text)}; known: ${registry.names().join(', ')}`,
      { text, name },
    );
  }
  const rule = spec.argument ?? 'optional';
  const argumentProblem =
    rule === 'required' && arg === undefined
      ? 'it needs an argument'
      : rule === 'none' && arg !== undefined
        ? 'it takes no argument'
        : arg !== undefined
          ? spec.validateArg?.(arg)
          : undefined;
  if (argumentProblem) {
    fail(
      'invalid_condition_argument',
      where,
      `${describeValue(text)} is not a valid use of ${name}: ${argumentProblem}`,
      { text, name, arg },
    );
  }
  return arg === undefined
    ? { kind: 'named', name, text: text.trim() }
    : { kind: 'named', name, arg, text: text.trim() };
}

/** Throws the error of a condition: `<where>: <reason>`, with both in `details` as well. */
function fail(
  code: 'condition_syntax' | 'unknown_condition' | 'invalid_condition_argument',
  where: string,
  reason: string,
  details: Record<string, unknown>,
): never {
  throw new RoleboxError(code, `${where}: ${reason}`, { where, reason, ...details });
}

/** Splits `a, b(c, d), e` at the commas outside parentheses (the text is balanced). */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

function balanced(text: string): boolean {
  let depth = 0;
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

/** Renders a parsed condition back to text (for views and messages); `parseCondition` reads it back to the same AST. */
export function formatCondition(ast: ConditionAst): string {
  switch (ast.kind) {
    case 'named':
      return ast.text;
    case 'not':
      return `not(${formatCondition(ast.of)})`;
    default:
      return `${ast.kind}(${ast.of.map(formatCondition).join(', ')})`;
  }
}
