import { MAX_CONDITION_DEPTH } from '../base/input-limits.js';
import { closestName } from '../base/option-names.js';
import { type ConditionRegistry, defaultConditionRegistry } from '../condition/registry.js';
import type { ConditionAst } from '../condition/types.js';
import { describeValue, RoleboxError } from '../errors.js';
import {
  type DefinitionIssue,
  type DefinitionOutline,
  definitionError,
  FUNCTION_NAME_PATTERN,
  type FunctionDefinition,
} from './definition.js';

/** The outline of a validated definition: its name, file and transition targets. */
export function outlineOf(definition: FunctionDefinition): DefinitionOutline {
  const targets: { field: string; name: string }[] = [];
  definition.transitions.forEach((transition, index) => {
    for (const [verb, names] of [
      ['activate', transition.activate],
      ['deactivate', transition.deactivate],
    ] as const)
      names.forEach((name, position) => {
        targets.push({ field: `transitions.${index}.${verb}.${position}`, name });
      });
  });
  return {
    name: definition.name,
    ...(definition.source === undefined ? {} : { source: definition.source }),
    targets,
  };
}

/**
 * Finds the problems that only show across a set of definitions: two with the same name,
 * and transitions that name a function nobody defined. Takes outlines, so a definition with
 * problems of its own still counts (its name is defined, its targets are checked).
 */
export function checkCatalog(outlines: readonly DefinitionOutline[]): DefinitionIssue[] {
  const issues: DefinitionIssue[] = [];
  const byName = new Map<string, DefinitionOutline>();
  for (const outline of outlines) {
    const earlier = byName.get(outline.name);
    if (earlier) {
      issues.push({
        ...(outline.source === undefined ? {} : { file: outline.source }),
        function: outline.name,
        field: 'name',
        message: `duplicate function name${earlier.source === undefined ? '' : `, also defined in ${earlier.source}`}`,
        value: outline.name,
        code: 'duplicate_function',
      });
    } else byName.set(outline.name, outline);
  }
  const defined = [...byName.keys()];
  for (const outline of outlines) {
    for (const target of outline.targets) {
      if (byName.has(target.name)) continue;
      const meant = closestName(target.name, defined);
      issues.push({
        ...(outline.source === undefined ? {} : { file: outline.source }),
        function: outline.name,
        field: target.field,
        message: `transition to undefined function ${describeValue(target.name)}${meant === undefined ? '' : ` (did you mean ${describeValue(meant)}?)`}`,
        value: target.name,
        code: 'unknown_function',
      });
    }
  }
  return issues;
}

/**
 * What is wrong with `value` as a {@link FunctionDefinition} (one made by `defineFunction`,
 * `parseFunctionMarkdown` or `loadFunctions`, or a JSON copy of one), or undefined when
 * nothing is: a definition the machines could not run, such as a raw spec, is caught here
 * instead of failing later inside an actor.
 */
export function definitionShapeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return `not an object, got ${describeValue(value)}`;
  const definition = value as Record<string, unknown>;
  if (typeof definition.name !== 'string' || !FUNCTION_NAME_PATTERN.test(definition.name))
    return `name must be a kebab-case name, got ${describeValue(definition.name)}`;
  const problem = (field: string, what: string) =>
    `${field} must be ${what}, got ${describeValue(definition[field])}`;
  const isText = (item: unknown) => typeof item === 'string';
  if (definition.gate !== undefined && !isConditionAst(definition.gate, 1))
    return problem('gate', 'a parsed condition');
  if (definition.continueUntil !== undefined && !isConditionAst(definition.continueUntil, 1))
    return problem('continueUntil', 'a parsed condition');
  const continueMax = definition.continueMax;
  if (typeof continueMax !== 'number' || !Number.isInteger(continueMax) || continueMax < 0)
    return problem('continueMax', 'a whole number of at least 0');
  if (!isListOf(definition.transitions, isTransition))
    return problem('transitions', 'a list of { when, activate, deactivate }');
  if (!isListOf(definition.observe, isObserve))
    return problem('observe', 'a list of { tool, capturePayloadAs?, setEvidence? }');
  if (!isListOf(definition.requiresEvidence, isText))
    return problem('requiresEvidence', 'a list of evidence tags');
  if (typeof definition.body !== 'string') return problem('body', 'text');
  for (const field of ['description', 'source'])
    if (definition[field] !== undefined && typeof definition[field] !== 'string')
      return problem(field, 'text');
  const extra = definition.extra;
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra))
    return problem('extra', 'an object');
  return undefined;
}

function isListOf(value: unknown, check: (item: unknown) => boolean): boolean {
  return Array.isArray(value) && value.every(check);
}

function isTransition(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { when, activate, deactivate } = value as Record<string, unknown>;
  const isName = (item: unknown) => typeof item === 'string';
  return (
    (when === 'gate' || isConditionAst(when, 1)) &&
    isListOf(activate, isName) &&
    isListOf(deactivate, isName)
  );
}

function isObserve(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { tool, capturePayloadAs, setEvidence } = value as Record<string, unknown>;
  return (
    typeof tool === 'string' &&
    (capturePayloadAs === undefined || typeof capturePayloadAs === 'string') &&
    (setEvidence === undefined || typeof setEvidence === 'string')
  );
}

/** A {@link ConditionAst} of at most {@link MAX_CONDITION_DEPTH} levels, as parseCondition makes. */
function isConditionAst(value: unknown, depth: number): boolean {
  if (depth > MAX_CONDITION_DEPTH || typeof value !== 'object' || value === null) return false;
  const ast = value as Record<string, unknown>;
  switch (ast.kind) {
    case 'named':
      return (
        typeof ast.name === 'string' &&
        typeof ast.text === 'string' &&
        (ast.arg === undefined || typeof ast.arg === 'string')
      );
    case 'not':
      return isConditionAst(ast.of, depth + 1);
    case 'all':
    case 'any':
      return Array.isArray(ast.of) && ast.of.every((item) => isConditionAst(item, depth + 1));
    default:
      return false;
  }
}

/**
 * The conditions of `definitions` that `registry` does not know: a definition checked
 * against another registry than the rolebox's would otherwise fail when first evaluated.
 */
export function checkConditionNames(
  definitions: readonly FunctionDefinition[],
  registry: ConditionRegistry,
): DefinitionIssue[] {
  const issues: DefinitionIssue[] = [];
  const visit = (definition: FunctionDefinition, ast: ConditionAst, where: string): void => {
    if (ast.kind === 'named') {
      if (registry.get(ast.name) === undefined) {
        issues.push({
          ...(definition.source === undefined ? {} : { file: definition.source }),
          function: definition.name,
          field: where,
          message: `unknown condition ${describeValue(ast.name)} in ${describeValue(ast.text)}: not in this rolebox's condition registry (pass the registry the definition was checked against as \`conditions\`); known: ${registry.names().join(', ')}`,
          value: ast.text,
          code: 'unknown_condition',
        });
      }
    } else if (ast.kind === 'not') visit(definition, ast.of, `${where}.not`);
    else
      ast.of.forEach((item, index) => {
        visit(definition, item, `${where}.${ast.kind}[${index}]`);
      });
  };
  for (const definition of definitions) {
    if (definition.gate) visit(definition, definition.gate, 'gate');
    if (definition.continueUntil) visit(definition, definition.continueUntil, 'continue_until');
    definition.transitions.forEach((transition, index) => {
      if (transition.when !== 'gate')
        visit(definition, transition.when, `transitions.${index}.when`);
    });
  }
  return issues;
}

/**
 * The functions a rolebox can activate, by name. Built once from validated definitions;
 * refuses values that are not definitions, duplicates, dangling transition targets and
 * conditions the registry does not know.
 */
export class FunctionCatalog {
  readonly #byName: ReadonlyMap<string, FunctionDefinition>;

  /**
   * Throws: `invalid_argument` naming every item of `definitions` that is not a
   * definition; `invalid_function_definition` listing every problem across them at once.
   */
  constructor(
    definitions: readonly FunctionDefinition[],
    conditions: ConditionRegistry = defaultConditionRegistry,
  ) {
    const misshapen: string[] = [];
    // By index, not flatMap: a hole in a sparse array is a missing definition too.
    for (let index = 0; index < definitions.length; index++) {
      const problem = definitionShapeProblem(definitions[index]);
      if (problem !== undefined) misshapen.push(`functions[${index}]: ${problem}`);
    }
    if (misshapen.length > 0) {
      throw new RoleboxError(
        'invalid_argument',
        `functions must be definitions made by defineFunction, parseFunctionMarkdown or loadFunctions (a spec goes through defineFunction first):\n  ${misshapen.join('\n  ')}`,
        { problems: misshapen },
      );
    }
    const issues = [
      ...checkCatalog(definitions.map(outlineOf)),
      ...checkConditionNames(definitions, conditions),
    ];
    if (issues.length > 0) throw definitionError('invalid function definitions', issues);
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
