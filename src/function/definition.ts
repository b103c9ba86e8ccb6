import { z } from 'zod';
import { warnHost } from '../base/host-process.js';
import { ARTIFACT_NAME_PATTERN, ARTIFACT_NAME_RULE } from '../base/input-limits.js';
import { setOwn } from '../base/own-keys.js';
import { parseCondition } from '../condition/parse.js';
import { type ConditionRegistry, defaultConditionRegistry } from '../condition/registry.js';
import type { Condition, ConditionAst } from '../condition/types.js';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';

/** Function names are kebab-case: `awaiting-approval`. */
export const FUNCTION_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** The default `continue_max` of SPEC §2.3. */
export const DEFAULT_CONTINUE_MAX = 5;

const functionName = z
  .string()
  .regex(FUNCTION_NAME_PATTERN, 'must be kebab-case like awaiting-approval');
const nameList = z.union([functionName.transform((name) => [name]), z.array(functionName)]);
// Typed here, checked by parseCondition: it names what is wrong better than zod would.
const condition = z.custom<Condition>();

/** The zod schema of a function's frontmatter (SPEC §2.1). Unknown top-level keys pass through. */
export const functionSpecSchema = z.looseObject({
  name: functionName,
  description: z.string().optional(),
  gate: condition.optional(),
  continue_until: condition.optional(),
  continue_max: z.number().int().min(0).optional(),
  transitions: z
    .array(
      z.strictObject({
        when: condition,
        activate: nameList.optional(),
        deactivate: nameList.optional(),
      }),
    )
    .optional(),
  observe: z
    .array(
      z.strictObject({
        tool: z.string().min(1),
        capture_payload_as: z
          .string()
          .regex(ARTIFACT_NAME_PATTERN, `an artifact name must be ${ARTIFACT_NAME_RULE}`)
          .optional(),
        set_evidence: z.string().min(1).optional(),
      }),
    )
    .optional(),
  requires_evidence: z.array(z.string().min(1)).optional(),
});

/** A function definition as written: the frontmatter of SPEC §2.1 (snake_case keys). */
export interface FunctionSpec {
  /** Required, kebab-case. */
  readonly name: string;
  readonly description?: string;
  /** While it does not hold, the function is gated. */
  readonly gate?: Condition;
  /** When it holds at an idle cycle, the function completes. */
  readonly continue_until?: Condition;
  /** Most continuations this function may ask for (default 5). */
  readonly continue_max?: number;
  /** Edge-triggered activations/deactivations; `when` may be the word `gate`. */
  readonly transitions?: readonly {
    readonly when: Condition;
    readonly activate?: string | readonly string[];
    readonly deactivate?: string | readonly string[];
  }[];
  /** Reactions to tool calls the host reports. */
  readonly observe?: readonly {
    readonly tool: string;
    readonly capture_payload_as?: string;
    readonly set_evidence?: string;
  }[];
  /** Tags that `evidence_met()` waits for. */
  readonly requires_evidence?: readonly string[];
  /** Anything else is kept (and warned about). */
  readonly [key: string]: unknown;
}

/** One edge-triggered transition of a definition. */
export interface FunctionTransition {
  /** The condition, or `'gate'` for "when the gate opens". */
  readonly when: ConditionAst | 'gate';
  /** Functions to activate in the same session when it fires. */
  readonly activate: readonly string[];
  /** Functions to deactivate in the same session when it fires. */
  readonly deactivate: readonly string[];
}

/** One observe entry: what to do when the host reports `tool`. */
export interface FunctionObserve {
  readonly tool: string;
  /** With `tool: signal`: write the payload as JSON to this session artifact. */
  readonly capturePayloadAs?: string;
  /** Mark this evidence tag as observed. */
  readonly setEvidence?: string;
}

/** A validated function definition with its conditions parsed. Plain data: safe to share. */
export interface FunctionDefinition {
  readonly name: string;
  readonly description?: string;
  readonly gate?: ConditionAst;
  readonly continueUntil?: ConditionAst;
  readonly continueMax: number;
  readonly transitions: readonly FunctionTransition[];
  readonly observe: readonly FunctionObserve[];
  readonly requiresEvidence: readonly string[];
  /** The markdown body after the frontmatter (the function's instructions), if loaded from a file. */
  readonly body: string;
  /** The file it came from, if any. */
  readonly source?: string;
  /** Unknown frontmatter keys, kept as written. */
  readonly extra: Readonly<Record<string, unknown>>;
}

/** One problem found while validating a definition. */
export interface DefinitionIssue {
  /** The file, when loaded from one. */
  readonly file?: string;
  /** The field path, e.g. `transitions.0.when`. */
  readonly field: string;
  /** What is wrong. */
  readonly message: string;
  /** The offending value, when there is one. */
  readonly value?: unknown;
}

/** Options of {@link defineFunction}. */
export interface DefineFunctionOptions {
  /** Registry the conditions are checked against (default: the process-wide one). */
  readonly conditions?: ConditionRegistry;
  /** The file the definition came from, for messages. */
  readonly source?: string;
  /** The markdown body. */
  readonly body?: string;
  /** Receives warnings (unknown keys). Default: `process.emitWarning` (`console.warn` in a page). */
  readonly onWarning?: (message: string) => void;
}

const KNOWN_KEYS = new Set(Object.keys(functionSpecSchema.shape));

/** Formats a list of issues as the lines of one error message. */
export function formatDefinitionIssues(issues: readonly DefinitionIssue[]): string {
  return issues
    .map(
      (issue) =>
        `  ${issue.file ? `${issue.file}: ` : ''}${issue.field}: ${issue.message}${issue.value === undefined ? '' : ` (got ${describeValue(issue.value)})`}`,
    )
    .join('\n');
}

/**
 * Validates a definition and returns its issues instead of throwing (used when loading
 * many files, so every problem is reported at once).
 */
export function checkFunctionSpec(
  spec: unknown,
  options: DefineFunctionOptions = {},
): { definition?: FunctionDefinition; issues: DefinitionIssue[]; warnings: string[] } {
  const file = options.source;
  const issues: DefinitionIssue[] = [];
  const parsed = functionSpecSchema.safeParse(spec);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const field = issue.path.map(String).join('.') || '(root)';
      issues.push({
        ...(file ? { file } : {}),
        field,
        message: issue.message,
        value: valueAt(spec, issue.path),
      });
    }
    return { issues, warnings: [] };
  }
  const data = parsed.data;
  const registry = options.conditions ?? defaultConditionRegistry;
  const condition = (value: unknown, field: string): ConditionAst | undefined => {
    try {
      return parseCondition(value, registry, field);
    } catch (error) {
      if (!isRoleboxError(error)) throw error;
      issues.push({ ...(file ? { file } : {}), field, message: error.message, value });
      return undefined;
    }
  };

  const gate = data.gate === undefined ? undefined : condition(data.gate, 'gate');
  const continueUntil =
    data.continue_until === undefined
      ? undefined
      : condition(data.continue_until, 'continue_until');
  const transitions: FunctionTransition[] = [];
  (data.transitions ?? []).forEach((transition, index) => {
    const field = `transitions.${index}`;
    const activate = transition.activate ?? [];
    const deactivate = transition.deactivate ?? [];
    if (activate.length === 0 && deactivate.length === 0) {
      issues.push({
        ...(file ? { file } : {}),
        field,
        message: 'a transition needs activate or deactivate',
      });
    }
    let when: ConditionAst | 'gate' | undefined;
    if (transition.when === 'gate') {
      if (data.gate === undefined) {
        issues.push({
          ...(file ? { file } : {}),
          field: `${field}.when`,
          message: '"gate" needs the function to define a gate',
          value: 'gate',
        });
      } else when = 'gate';
    } else if (transition.when === undefined) {
      issues.push({
        ...(file ? { file } : {}),
        field: `${field}.when`,
        message: 'a transition needs a when condition',
      });
    } else when = condition(transition.when, `${field}.when`);
    if (when) transitions.push({ when, activate, deactivate });
  });
  const observe: FunctionObserve[] = [];
  (data.observe ?? []).forEach((entry, index) => {
    const field = `observe.${index}`;
    if (entry.capture_payload_as === undefined && entry.set_evidence === undefined) {
      issues.push({
        ...(file ? { file } : {}),
        field,
        message: 'an observe entry needs capture_payload_as or set_evidence',
        value: entry,
      });
    }
    if (entry.capture_payload_as !== undefined && entry.tool !== 'signal') {
      issues.push({
        ...(file ? { file } : {}),
        field: `${field}.capture_payload_as`,
        message: 'capture_payload_as is only supported with tool: signal',
        value: entry.tool,
      });
    }
    observe.push({
      tool: entry.tool,
      ...(entry.capture_payload_as === undefined
        ? {}
        : { capturePayloadAs: entry.capture_payload_as }),
      ...(entry.set_evidence === undefined ? {} : { setEvidence: entry.set_evidence }),
    });
  });
  if (issues.length > 0) return { issues, warnings: [] };

  // From the input, not zod's output (which drops a `__proto__` key), and stored as own
  // keys: an unknown key is kept as written, whatever its name.
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(spec as object))
    if (!KNOWN_KEYS.has(key)) setOwn(extra, key, value);
  const warnings = Object.keys(extra).map(
    (key) =>
      `${file ? `${file}: ` : ''}function ${data.name}: unknown key ${describeValue(key)} is kept but ignored`,
  );
  const definition: FunctionDefinition = {
    name: data.name,
    ...(data.description === undefined ? {} : { description: data.description }),
    ...(gate ? { gate } : {}),
    ...(continueUntil ? { continueUntil } : {}),
    continueMax: data.continue_max ?? DEFAULT_CONTINUE_MAX,
    transitions,
    observe,
    requiresEvidence: data.requires_evidence ?? [],
    body: options.body ?? '',
    ...(file ? { source: file } : {}),
    extra,
  };
  return { definition, issues, warnings };
}

/**
 * Validates a function definition written in code (the same shape as the YAML frontmatter).
 *
 * Returns: the {@link FunctionDefinition}.
 * Throws: `invalid_function_definition` listing every offending field and value.
 */
export function defineFunction(
  spec: FunctionSpec,
  options: DefineFunctionOptions = {},
): FunctionDefinition {
  const { definition, issues, warnings } = checkFunctionSpec(spec, options);
  if (!definition) {
    const name =
      typeof (spec as { name?: unknown })?.name === 'string'
        ? ` ${(spec as { name: string }).name}`
        : '';
    throw new RoleboxError(
      'invalid_function_definition',
      `invalid function definition${name}:\n${formatDefinitionIssues(issues)}`,
      {
        issues,
      },
    );
  }
  const warn = options.onWarning ?? warnHost;
  for (const warning of warnings) warn(warning);
  return definition;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
