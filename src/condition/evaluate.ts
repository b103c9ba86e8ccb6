import { RoleboxError } from '../errors.js';
import { type ConditionRegistry, defaultConditionRegistry } from './registry.js';
import type { ConditionAst, ConditionEnv } from './types.js';

/**
 * Decides a parsed condition. Empty `all` is true, empty `any` is false.
 *
 * Expects: an AST from `parseCondition` against the same registry.
 * Throws: `unknown_condition` only if a name was unregistered after parsing (a bug in the host).
 */
export function evaluateCondition(
  ast: ConditionAst,
  env: ConditionEnv,
  registry: ConditionRegistry = defaultConditionRegistry,
): boolean {
  switch (ast.kind) {
    case 'all':
      return ast.of.every((item) => evaluateCondition(item, env, registry));
    case 'any':
      return ast.of.some((item) => evaluateCondition(item, env, registry));
    case 'not':
      return !evaluateCondition(ast.of, env, registry);
    case 'named': {
      const spec = registry.get(ast.name);
      if (!spec)
        throw new RoleboxError(
          'unknown_condition',
          `unknown condition "${ast.name}" in "${ast.text}"`,
          { name: ast.name },
        );
      return spec.evaluate(ast.arg, env) === true;
    }
  }
}
