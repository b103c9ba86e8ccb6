import { describeValue, RoleboxError } from '../errors.js';
import {
  type DefinitionIssue,
  type FunctionDefinition,
  formatDefinitionIssues,
} from './definition.js';

/**
 * Finds the problems that only show across a set of definitions: two with the same name,
 * and transitions that name a function nobody defined.
 */
export function checkCatalog(definitions: readonly FunctionDefinition[]): DefinitionIssue[] {
  const issues: DefinitionIssue[] = [];
  const byName = new Map<string, FunctionDefinition>();
  for (const definition of definitions) {
    const earlier = byName.get(definition.name);
    if (earlier) {
      issues.push({
        ...(definition.source ? { file: definition.source } : {}),
        field: 'name',
        message: `duplicate function name${earlier.source ? ` (also defined in ${earlier.source})` : ''}`,
        value: definition.name,
      });
    } else byName.set(definition.name, definition);
  }
  for (const definition of definitions) {
    definition.transitions.forEach((transition, index) => {
      for (const [verb, names] of [
        ['activate', transition.activate],
        ['deactivate', transition.deactivate],
      ] as const) {
        names.forEach((name, position) => {
          if (!byName.has(name)) {
            issues.push({
              ...(definition.source ? { file: definition.source } : {}),
              field: `transitions.${index}.${verb}.${position}`,
              message: `function ${definition.name}: transition to undefined function ${describeValue(name)}`,
              value: name,
            });
          }
        });
      }
    });
  }
  return issues;
}

/**
 * The functions a rolebox can activate, by name. Built once from validated definitions;
 * refuses duplicates and dangling transition targets.
 */
export class FunctionCatalog {
  readonly #byName: ReadonlyMap<string, FunctionDefinition>;

  /** Throws: `invalid_function_definition` listing every cross-definition problem. */
  constructor(definitions: readonly FunctionDefinition[]) {
    const issues = checkCatalog(definitions);
    if (issues.length > 0) {
      throw new RoleboxError(
        'invalid_function_definition',
        `invalid function definitions:\n${formatDefinitionIssues(issues)}`,
        {
          issues,
        },
      );
    }
    this.#byName = new Map(definitions.map((definition) => [definition.name, definition]));
  }

  /** The definition named `name`, if any. */
  get(name: string): FunctionDefinition | undefined {
    return this.#byName.get(name);
  }

  /** The definition named `name`. Throws: `unknown_function` naming it and the known names. */
  require(name: string): FunctionDefinition {
    const definition = typeof name === 'string' ? this.#byName.get(name) : undefined;
    if (!definition) {
      throw new RoleboxError(
        'unknown_function',
        `unknown function ${describeValue(name)}; defined: ${this.names().join(', ') || '(none)'}`,
        { name },
      );
    }
    return definition;
  }

  /** Every definition, in definition order. */
  definitions(): FunctionDefinition[] {
    return [...this.#byName.values()];
  }

  /** Every defined name, in definition order. */
  names(): string[] {
    return [...this.#byName.keys()];
  }
}
