import { z } from 'zod';
import { warnHost } from '../base/host-process.js';
import { ARTIFACT_NAME_PATTERN, ARTIFACT_NAME_RULE } from '../base/input-limits.js';
import { checkOptionNames, closestName } from '../base/option-names.js';
import { setOwn } from '../base/own-keys.js';
import { parseCondition } from '../condition/parse.js';
import { type ConditionRegistry, defaultConditionRegistry } from '../condition/registry.js';
import type { Condition, ConditionAst } from '../condition/types.js';
import { describeValue, type ErrorCode, isRoleboxError, RoleboxError } from '../errors.js';
import {
  APPROVAL_TIMEOUT_RULE,
  durationMs,
  ON_TIMEOUT_ACTIONS,
  type OnTimeout,
} from '../signal/approval-timeout.js';

/** Function names are kebab-case: `awaiting-approval`. */
export const FUNCTION_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** The default `continue_max` of SPEC §2.3. */
export const DEFAULT_CONTINUE_MAX = 5;

/** A zod message for a value that is not `what`: "missing" when there is none. */
const expected =
  (what: string) =>
  (issue: { readonly input: unknown }): string =>
    issue.input === undefined ? `missing; must be ${what}` : `must be ${what}`;

const FUNCTION_NAME_RULE = 'a kebab-case name like awaiting-approval';
const functionName = z
  .string({ error: expected(FUNCTION_NAME_RULE) })
  .regex(FUNCTION_NAME_PATTERN, `must be ${FUNCTION_NAME_RULE}`);
const nameList = z.union([functionName.transform((name) => [name]), z.array(functionName)], {
  error: `must be ${FUNCTION_NAME_RULE}, or a list of them`,
});
// Typed here, checked by parseCondition: it names what is wrong better than zod would.
const condition = z.custom<Condition>();
const nonEmpty = (what: string) => z.string({ error: expected(what) }).min(1, `must be ${what}`);

const transitionSchema = z.strictObject(
  {
    when: condition,
    activate: nameList.optional(),
    deactivate: nameList.optional(),
  },
  { error: 'a transition must be an object with when and activate or deactivate' },
);
const observeSchema = z.strictObject(
  {
    tool: nonEmpty('a tool name'),
    capture_payload_as: z
      .string({ error: expected('an artifact name') })
      .regex(ARTIFACT_NAME_PATTERN, `an artifact name must be ${ARTIFACT_NAME_RULE}`)
      .optional(),
    set_evidence: nonEmpty('an evidence tag').optional(),
  },
  { error: 'an observe entry must be an object with tool and capture_payload_as or set_evidence' },
);

/**
 * A tool name as models call tools (and as an AI SDK tool set keys them). A name that is an
 * Object.prototype key (`constructor`, `__proto__`, …) is refused: a tool set is a plain
 * object, where such a name finds the prototype's property instead of a tool.
 */
const approvalToolName = z
  .string({ error: expected('a tool name') })
  .regex(
    /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/,
    'a tool name must be a letter or _ then letters, digits, _ or - (128 at most)',
  )
  .refine((tool) => !(tool in Object.prototype), 'a tool name must not be an Object.prototype key');

/** The zod schema of a function's frontmatter (SPEC §2.1). Unknown top-level keys pass through. */
export const functionSpecSchema = z.looseObject(
  {
    name: functionName,
    description: z.string({ error: expected('text') }).optional(),
    gate: condition.optional(),
    continue_until: condition.optional(),
    continue_max: z
      .number({ error: expected('a whole number of at least 0') })
      .int('must be a whole number of at least 0')
      .min(0, 'must be a whole number of at least 0')
      .optional(),
    transitions: z.array(transitionSchema, { error: expected('a list of transitions') }).optional(),
    observe: z.array(observeSchema, { error: expected('a list of observe entries') }).optional(),
    requires_evidence: z
      .array(nonEmpty('an evidence tag'), { error: expected('a list of evidence tags') })
      .optional(),
    approval_timeout: z
      .union([z.number(), z.string()], { error: expected(APPROVAL_TIMEOUT_RULE) })
      .refine((value) => durationMs(value) !== undefined, `must be ${APPROVAL_TIMEOUT_RULE}`)
      .optional(),
    on_timeout: z
      .enum(ON_TIMEOUT_ACTIONS, { error: `must be ${ON_TIMEOUT_ACTIONS.join(' or ')}` })
      .optional(),
    requires_approval_for: z
      .array(approvalToolName, { error: expected('a list of tool names') })
      .refine((tools) => new Set(tools).size === tools.length, 'a tool is listed twice')
      .optional(),
  },
  { error: 'a function definition must be an object (the keys of its frontmatter)' },
);

/** The keys of the objects inside a definition, for "unknown key" messages. */
const NESTED_KEYS: Readonly<Record<string, readonly string[]>> = {
  transitions: Object.keys(transitionSchema.shape),
  observe: Object.keys(observeSchema.shape),
};

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
  /**
   * How long an approval request of this function may stay open: ms, or `30s`, `15m`,
   * `15 min`, `2h`, `1d` (a pausing signal's `payload.timeoutMs` overrides it per request).
   */
  readonly approval_timeout?: number | string;
  /** What an expired request becomes: `escalate` (the default) or `reject`. */
  readonly on_timeout?: OnTimeout;
  /**
   * Tools whose calls, while this function is live, open a host-only approval request in its
   * ledger and run only once the host approves it (`requireApproval` from `rolebox/ai`).
   */
  readonly requires_approval_for?: readonly string[];
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
  /** `approval_timeout` in ms: the deadline of each request it opens; absent: none. */
  readonly approvalTimeoutMs?: number;
  /** `on_timeout`; absent: `escalate`. */
  readonly onTimeout?: OnTimeout;
  /** The tools whose calls this function's gate holds for the host's approval (when it lists any). */
  readonly requiresApprovalFor?: readonly string[];
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
  /** The function's name, when the definition has a valid one. */
  readonly function?: string;
  /** The field path, e.g. `transitions.0.when` (a condition's inner part: `gate.all[1].not`). */
  readonly field: string;
  /** What is wrong, without the file, function or field (which the fields above give). */
  readonly message: string;
  /** The offending value, when there is one. */
  readonly value?: unknown;
  /**
   * The code of the problem when it has one of its own: `condition_syntax`,
   * `unknown_condition` or `invalid_condition_argument` for a condition,
   * `duplicate_function` for a name defined twice, `unknown_function` for a transition to a
   * function nobody defined. The error's code stays `invalid_function_definition`.
   */
  readonly code?: ErrorCode;
}

/**
 * What the checks across definitions (duplicates, transition targets) need of one, taken
 * even from a definition with problems of its own so that one load reports them all.
 */
export interface DefinitionOutline {
  readonly name: string;
  readonly source?: string;
  /** Every function its transitions name, with the field that names it. */
  readonly targets: readonly { readonly field: string; readonly name: string }[];
}

/** What checking one definition found. */
export interface CheckedSpec {
  /** The definition, when there were no issues. */
  readonly definition?: FunctionDefinition;
  readonly issues: DefinitionIssue[];
  readonly warnings: string[];
  /** Its name and transition targets, when it has a valid name (for the cross-definition checks). */
  readonly outline?: DefinitionOutline;
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

const DEFINE_FUNCTION_OPTIONS = Object.keys({
  conditions: true,
  source: true,
  body: true,
  onWarning: true,
} satisfies Record<keyof DefineFunctionOptions, true>);

const KNOWN_KEYS = Object.keys(functionSpecSchema.shape);
const KNOWN_KEY_SET = new Set(KNOWN_KEYS);

/** How {@link formatDefinitionIssues} lays out each line. */
export interface IssueLayout {
  /** Leave out the file and the function: the heading already names them (one definition). */
  readonly oneDefinition?: boolean;
  /** Show files relative to this directory, which the heading names. */
  readonly dir?: string;
}

/** Formats a list of issues as the lines of one error message, each saying a thing once. */
export function formatDefinitionIssues(
  issues: readonly DefinitionIssue[],
  layout: IssueLayout = {},
): string {
  return issues
    .map((issue) => {
      const place: string[] = [];
      if (!layout.oneDefinition) {
        if (issue.file !== undefined) place.push(relativeTo(layout.dir, issue.file));
        if (issue.function !== undefined) place.push(`function ${issue.function}`);
      }
      place.push(issue.field);
      // A value the line already shows (in the message, or as the function's name) is not
      // shown again.
      const shown = issue.value === undefined ? undefined : describeValue(issue.value);
      const repeated =
        shown === undefined ||
        issue.message.includes(shown) ||
        (!layout.oneDefinition && issue.field === 'name' && issue.value === issue.function);
      return `  ${place.join(': ')}: ${issue.message}${repeated ? '' : ` (got ${shown})`}`;
    })
    .join('\n');
}

/**
 * The one error for a list of definition issues: `<heading> (<n> problems):` and a line per
 * issue. Returns: an `invalid_function_definition` RoleboxError with `details.issues`.
 */
export function definitionError(
  heading: string,
  issues: readonly DefinitionIssue[],
  layout: IssueLayout = {},
  details: Record<string, unknown> = {},
): RoleboxError {
  const count = `${issues.length} problem${issues.length === 1 ? '' : 's'}`;
  return new RoleboxError(
    'invalid_function_definition',
    `${heading} (${count}):\n${formatDefinitionIssues(issues, layout)}`,
    { ...details, issues },
  );
}

/** `invalid function definition <name> in <file>`: the heading of one definition's error. */
export function oneDefinitionHeading(name: string | undefined, file: string | undefined): string {
  return `invalid function definition${name === undefined ? '' : ` ${name}`}${file === undefined ? '' : ` in ${file}`}`;
}

function relativeTo(dir: string | undefined, file: string): string {
  if (dir === undefined) return file;
  const base = dir.endsWith('/') || dir.endsWith('\\') ? dir : `${dir}/`;
  return file.startsWith(base) ? file.slice(base.length) : file;
}

/**
 * Validates a definition and returns its issues instead of throwing: every problem at once
 * (schema, conditions, transitions, observe entries), not only those of the first kind found.
 */
export function checkFunctionSpec(
  spec: unknown,
  options: DefineFunctionOptions = {},
): { definition?: FunctionDefinition; issues: DefinitionIssue[]; warnings: string[] } {
  const { definition, issues, warnings } = examineFunctionSpec(spec, options);
  return { ...(definition ? { definition } : {}), issues, warnings };
}

/** Records one issue of a definition: its field, what is wrong, and the offending value. */
type ReportIssue = (
  field: string,
  message: string,
  more?: { readonly value?: unknown; readonly code?: ErrorCode },
) => void;

/** Reports the observe entries that say nothing to do, or capture a payload off `tool: signal`. */
function checkObserveEntries(observe: unknown, report: ReportIssue): void {
  const rawObserve = Array.isArray(observe) ? (observe as unknown[]) : [];
  rawObserve.forEach((entry, index) => {
    if (!isRecord(entry)) return; // the shape check named it
    const field = `observe.${index}`;
    if (entry.capture_payload_as === undefined && entry.set_evidence === undefined)
      report(field, 'an observe entry needs capture_payload_as or set_evidence', { value: entry });
    if (entry.capture_payload_as !== undefined && entry.tool !== 'signal') {
      report(
        `${field}.capture_payload_as`,
        `only supported with tool: signal, not tool ${describeValue(entry.tool)}`,
        { value: entry.tool },
      );
    }
  });
}

/** {@link checkFunctionSpec} with the definition's outline, for the checks across definitions. */
export function examineFunctionSpec(
  spec: unknown,
  options: DefineFunctionOptions = {},
): CheckedSpec {
  const file = options.source;
  const raw = isRecord(spec) ? spec : undefined;
  const rawName = raw?.name;
  const name =
    typeof rawName === 'string' && FUNCTION_NAME_PATTERN.test(rawName) ? rawName : undefined;
  const at = {
    ...(file === undefined ? {} : { file }),
    ...(name === undefined ? {} : { function: name }),
  };
  const issues: DefinitionIssue[] = [];
  const report: ReportIssue = (field, message, more = {}) => {
    issues.push({
      ...at,
      field,
      message,
      ...(more.value === undefined ? {} : { value: more.value }),
      ...(more.code === undefined ? {} : { code: more.code }),
    });
  };

  // 1. The shape. Whatever it finds, the checks below still run on the parts they can read.
  const parsed = functionSpecSchema.safeParse(spec);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const field = issue.path.map(String).join('.');
      if (issue.code === 'unrecognized_keys') {
        const known = NESTED_KEYS[String(issue.path[0])] ?? [];
        for (const key of issue.keys) {
          const meant = closestName(key, known);
          report(
            `${field}.${key}`,
            `unknown key${meant === undefined ? '' : ` (did you mean ${describeValue(meant)}?)`}; known: ${known.join(', ')}`,
          );
        }
      } else report(field || '(root)', issue.message, { value: valueAt(spec, issue.path) });
    }
  }

  // 2. Conditions, transitions and observe entries, read from the input as written.
  const registry = options.conditions ?? defaultConditionRegistry;
  const condition = (value: unknown, field: string): ConditionAst | undefined => {
    try {
      return parseCondition(value, registry, field);
    } catch (error) {
      if (!isRoleboxError(error)) throw error;
      // parseCondition names the place itself (`gate.all[1]: …`); the issue keeps the
      // place as its field and the rest as its message, so the line names it once.
      const { where, reason } = error.details;
      report(
        typeof where === 'string' ? where : field,
        typeof reason === 'string' ? reason : error.message,
        { value: 'text' in error.details ? error.details.text : value, code: error.code },
      );
      return undefined;
    }
  };
  const gate = raw?.gate === undefined ? undefined : condition(raw.gate, 'gate');
  const continueUntil =
    raw?.continue_until === undefined ? undefined : condition(raw.continue_until, 'continue_until');

  const whens: (ConditionAst | 'gate' | undefined)[] = [];
  const targets: { field: string; name: string }[] = [];
  const rawTransitions = Array.isArray(raw?.transitions) ? (raw.transitions as unknown[]) : [];
  rawTransitions.forEach((transition, index) => {
    if (!isRecord(transition)) return; // the shape check named it
    const field = `transitions.${index}`;
    const lists = { activate: transition.activate, deactivate: transition.deactivate };
    const empty = (list: unknown) =>
      list === undefined || (Array.isArray(list) && list.length === 0);
    if (empty(lists.activate) && empty(lists.deactivate))
      report(field, 'a transition needs activate or deactivate');
    for (const [verb, list] of Object.entries(lists)) {
      const names = typeof list === 'string' ? [list] : Array.isArray(list) ? list : [];
      names.forEach((target, position) => {
        if (typeof target === 'string' && FUNCTION_NAME_PATTERN.test(target))
          targets.push({ field: `${field}.${verb}.${position}`, name: target });
      });
    }
    const when = transition.when;
    if (when === 'gate') {
      if (raw?.gate === undefined)
        report(`${field}.when`, '"gate" needs the function to define a gate', { value: when });
      else whens[index] = 'gate';
    } else if (when === undefined) {
      report(`${field}.when`, 'a transition needs a when condition');
    } else whens[index] = condition(when, `${field}.when`);
  });

  checkObserveEntries(raw?.observe, report);

  const outline: DefinitionOutline | undefined =
    name === undefined
      ? undefined
      : { name, ...(file === undefined ? {} : { source: file }), targets };
  if (issues.length > 0 || !parsed.success)
    return { issues, warnings: [], ...(outline ? { outline } : {}) };

  const data = parsed.data;
  // From the input, not zod's output (which drops a `__proto__` key), and stored as own
  // keys: an unknown key is kept as written, whatever its name.
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(spec as object))
    if (!KNOWN_KEY_SET.has(key)) setOwn(extra, key, value);
  const warnings = Object.keys(extra).map((key) => {
    const meant = closestName(key, KNOWN_KEYS);
    return `${file ? `${file}: ` : ''}function ${data.name}: unknown key ${describeValue(key)} is kept but ignored${meant === undefined ? '' : ` (did you mean ${describeValue(meant)}?)`}`;
  });
  const definition: FunctionDefinition = {
    name: data.name,
    ...(data.description === undefined ? {} : { description: data.description }),
    ...(gate ? { gate } : {}),
    ...(continueUntil ? { continueUntil } : {}),
    continueMax: data.continue_max ?? DEFAULT_CONTINUE_MAX,
    transitions: (data.transitions ?? []).map((transition, index) => ({
      when: whens[index] as ConditionAst | 'gate',
      activate: transition.activate ?? [],
      deactivate: transition.deactivate ?? [],
    })),
    observe: (data.observe ?? []).map((entry) => ({
      tool: entry.tool,
      ...(entry.capture_payload_as === undefined
        ? {}
        : { capturePayloadAs: entry.capture_payload_as }),
      ...(entry.set_evidence === undefined ? {} : { setEvidence: entry.set_evidence }),
    })),
    requiresEvidence: data.requires_evidence ?? [],
    ...(data.approval_timeout === undefined
      ? {}
      : { approvalTimeoutMs: durationMs(data.approval_timeout) as number }),
    ...(data.on_timeout === undefined ? {} : { onTimeout: data.on_timeout }),
    ...(data.requires_approval_for === undefined
      ? {}
      : { requiresApprovalFor: data.requires_approval_for }),
    body: options.body ?? '',
    ...(file ? { source: file } : {}),
    extra,
  };
  return { definition, issues, warnings, outline: outline as DefinitionOutline };
}

/**
 * Validates a function definition written in code (the same shape as the YAML frontmatter).
 *
 * Returns: the {@link FunctionDefinition}.
 * Throws: `invalid_function_definition` listing every problem at once, each with its field
 * and offending value (`details.issues`, see {@link DefinitionIssue}).
 */
export function defineFunction(
  spec: FunctionSpec,
  options: DefineFunctionOptions = {},
): FunctionDefinition {
  checkOptionNames(options, DEFINE_FUNCTION_OPTIONS, 'defineFunction options');
  return definitionOrThrow(examineFunctionSpec(spec, options), options);
}

/**
 * One checked definition's outcome for a caller: the definition, its warnings passed to
 * `onWarning`; or, when it has problems, the one error listing them all.
 */
export function definitionOrThrow(
  checked: CheckedSpec,
  options: Pick<DefineFunctionOptions, 'source' | 'onWarning'>,
): FunctionDefinition {
  const { definition, issues, warnings, outline } = checked;
  if (!definition)
    throw definitionError(oneDefinitionHeading(outline?.name, options.source), issues, {
      oneDefinition: true,
    });
  const warn = options.onWarning ?? warnHost;
  for (const warning of warnings) warn(warning);
  return definition;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
