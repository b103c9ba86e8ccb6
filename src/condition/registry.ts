import { describeValue, RoleboxError } from '../errors.js';
import { BUILTIN_CONDITIONS } from './builtins.js';
import type { ConditionImplementation, NamedCondition } from './types.js';

const CONDITION_NAME = /^[a-z_][a-z0-9_]*$/;
/** Written as text, `all(a, b)`, `any(a, b)` and `not(a)` are combinators, not named conditions. */
const RESERVED_NAMES = new Set(['all', 'any', 'not']);

/**
 * The named conditions a rolebox knows: the built-ins plus those a host registered.
 *
 * Definitions are checked against a registry when they are loaded, so register custom
 * conditions before loading the functions that use them.
 */
export class ConditionRegistry {
  readonly #conditions = new Map<string, NamedCondition>(Object.entries(BUILTIN_CONDITIONS));

  /**
   * Adds a named condition.
   * Throws: `invalid_argument` for a bad or reserved (`all`, `any`, `not`) name or
   * implementation, `duplicate_condition` when
   * the name is taken (built-ins cannot be replaced).
   */
  register(name: string, implementation: ConditionImplementation): void {
    if (typeof name !== 'string' || !CONDITION_NAME.test(name)) {
      throw new RoleboxError(
        'invalid_argument',
        `condition name must be snake_case like my_check, got ${describeValue(name)}`,
        {
          name,
        },
      );
    }
    if (RESERVED_NAMES.has(name)) {
      throw new RoleboxError(
        'invalid_argument',
        `condition name ${describeValue(name)} is reserved: all, any and not combine conditions`,
        { name },
      );
    }
    const spec: NamedCondition | undefined =
      typeof implementation === 'function'
        ? { evaluate: implementation }
        : typeof implementation === 'object' &&
            implementation !== null &&
            typeof implementation.evaluate === 'function'
          ? implementation
          : undefined;
    if (!spec) {
      throw new RoleboxError(
        'invalid_argument',
        `condition ${name} needs a function (arg, env) => boolean`,
        { name },
      );
    }
    if (this.#conditions.has(name)) {
      throw new RoleboxError(
        'duplicate_condition',
        `condition ${describeValue(name)} is already registered`,
        { name },
      );
    }
    this.#conditions.set(name, spec);
  }

  /** The condition registered under `name`, if any. */
  get(name: string): NamedCondition | undefined {
    return this.#conditions.get(name);
  }

  /** Every registered name, built-ins first. */
  names(): string[] {
    return [...this.#conditions.keys()];
  }
}

/** The process-wide registry used when `createRolebox` is not given one. */
export const defaultConditionRegistry = new ConditionRegistry();

/**
 * Registers a named condition in the default registry, usable as `name` or `name(arg)` in
 * every function definition loaded afterwards.
 */
export function registerCondition(name: string, implementation: ConditionImplementation): void {
  defaultConditionRegistry.register(name, implementation);
}
