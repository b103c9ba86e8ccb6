import { describeValue, RoleboxError } from '../errors.js';
import { type ConditionRegistry, defaultConditionRegistry } from './registry.js';
import type { Condition, ConditionAst } from './types.js';

const NAMED = /^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([\s\S]*)\))?$/;

/**
 * Parses and validates a condition (string or `all`/`any`/`not` object).
 *
 * Expects: a {@link Condition}; `where` names its place for messages (e.g. `gate`).
 * Returns: the {@link ConditionAst}.
 * Throws: `condition_syntax` (malformed), `unknown_condition` (name not registered),
 * `invalid_condition_argument`; each message names the text and where it stood.
 */
export function parseCondition(
  condition: unknown,
  registry: ConditionRegistry = defaultConditionRegistry,
  where = 'condition',
): ConditionAst {
  if (typeof condition === 'string') return parseNamed(condition, registry, where);
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) {
    throw new RoleboxError(
      'condition_syntax',
      `${where}: a condition is a string like signal_observed(answer) or an object with all/any/not, got ${describeValue(condition)}`,
      { where, text: condition },
    );
  }
  const keys = Object.keys(condition);
  const key = keys[0];
  if (keys.length !== 1 || (key !== 'all' && key !== 'any' && key !== 'not')) {
    throw new RoleboxError(
      'condition_syntax',
      `${where}: a condition object has exactly one key, all, any or not; got ${describeValue(keys)}`,
      { where, text: condition },
    );
  }
  const value = (condition as Record<string, unknown>)[key];
  if (key === 'not') return { kind: 'not', of: parseCondition(value, registry, `${where}.not`) };
  if (!Array.isArray(value)) {
    throw new RoleboxError(
      'condition_syntax',
      `${where}.${key} must be a list of conditions, got ${describeValue(value)}`,
      {
        where,
        text: condition,
      },
    );
  }
  return {
    kind: key,
    of: value.map((item, index) => parseCondition(item, registry, `${where}.${key}[${index}]`)),
  };
}

function parseNamed(text: string, registry: ConditionRegistry, where: string): ConditionAst {
  const match = NAMED.exec(text.trim());
  if (!match) {
    throw new RoleboxError(
      'condition_syntax',
      `${where}: cannot parse condition ${describeValue(text)}; expected name or name(arg)`,
      {
        where,
        text,
      },
    );
  }
  const name = match[1] as string;
  const rawArg = match[2]?.trim();
  const arg = rawArg === undefined || rawArg === '' ? undefined : rawArg;
  if (arg !== undefined && /[()]/.test(arg) && !balanced(arg)) {
    throw new RoleboxError(
      'condition_syntax',
      `${where}: unbalanced parentheses in ${describeValue(text)}`,
      { where, text },
    );
  }
  const spec = registry.get(name);
  if (!spec) {
    throw new RoleboxError(
      'unknown_condition',
      `${where}: unknown condition ${describeValue(name)} in ${describeValue(text)}; known: ${registry.names().join(', ')}`,
      { where, text, name },
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
    throw new RoleboxError(
      'invalid_condition_argument',
      `${where}: ${describeValue(text)} is not a valid use of ${name}: ${argumentProblem}`,
      { where, text, name, arg },
    );
  }
  return arg === undefined
    ? { kind: 'named', name, text: text.trim() }
    : { kind: 'named', name, arg, text: text.trim() };
}

function balanced(text: string): boolean {
  let depth = 0;
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

/** Renders a parsed condition back to readable text (for views and messages). */
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
