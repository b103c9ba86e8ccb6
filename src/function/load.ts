import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument, YAMLParseError } from 'yaml';
import { describeValue, RoleboxError } from '../errors.js';
import { checkCatalog } from './catalog.js';
import {
  checkFunctionSpec,
  type DefineFunctionOptions,
  type DefinitionIssue,
  type FunctionDefinition,
  formatDefinitionIssues,
} from './definition.js';

/** A markdown file split into its YAML frontmatter text and its body. */
export interface MarkdownWithFrontmatter {
  readonly frontmatter: string;
  readonly body: string;
}

const FRONTMATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$/;

/** Splits `---\n<yaml>\n---\n<body>`; undefined when the text has no frontmatter block. */
export function splitFrontmatter(text: string): MarkdownWithFrontmatter | undefined {
  const match = FRONTMATTER.exec(text);
  if (!match) return undefined;
  return { frontmatter: match[1] as string, body: (match[2] as string).replace(/^\r?\n/, '') };
}

/** Options of {@link parseFunctionMarkdown}: those of `defineFunction` but the body. */
export type FunctionMarkdownOptions = Omit<DefineFunctionOptions, 'body'>;

/**
 * Checks one function file's text (YAML frontmatter, then the body) and returns its issues
 * instead of throwing, like `checkFunctionSpec`. Never throws.
 */
export function checkFunctionMarkdown(
  text: string,
  options: FunctionMarkdownOptions = {},
): { definition?: FunctionDefinition; issues: DefinitionIssue[]; warnings: string[] } {
  const file = options.source;
  const at = file === undefined ? {} : { file };
  const split = typeof text === 'string' ? splitFrontmatter(text) : undefined;
  if (!split) {
    return {
      issues: [
        {
          ...at,
          field: '(frontmatter)',
          message: 'expected a YAML frontmatter block between --- lines at the top',
        },
      ],
      warnings: [],
    };
  }
  let spec: unknown;
  const yamlWarnings: string[] = [];
  try {
    // YAML's own warnings (an unresolved tag, …) go to onWarning with the definition's,
    // not straight to the process.
    const document = parseDocument(split.frontmatter, { logLevel: 'silent' });
    const [error] = document.errors;
    if (error) throw error;
    for (const warning of document.warnings)
      yamlWarnings.push(`${file ? `${file}: ` : ''}YAML: ${warning.message.split('\n')[0]}`);
    spec = document.toJS();
  } catch (error) {
    const where =
      error instanceof YAMLParseError && error.linePos
        ? ` at line ${error.linePos[0].line + 1}`
        : '';
    return {
      issues: [
        {
          ...at,
          field: '(frontmatter)',
          message: `invalid YAML${where}: ${String((error as Error)?.message ?? error).split('\n')[0]}`,
        },
      ],
      warnings: [],
    };
  }
  const checked = checkFunctionSpec(spec, { ...options, body: split.body });
  return { ...checked, warnings: [...yamlWarnings, ...checked.warnings] };
}

/**
 * Parses one function definition from markdown text: YAML frontmatter between `---` lines,
 * then the body (the function's instructions), as in a file `loadFunctions` reads.
 *
 * Returns: the {@link FunctionDefinition}.
 * Throws: `invalid_function_definition` listing every offending field and value (bad
 * YAML, missing frontmatter, schema errors, bad conditions).
 */
export function parseFunctionMarkdown(
  text: string,
  options: FunctionMarkdownOptions = {},
): FunctionDefinition {
  const { definition, issues, warnings } = checkFunctionMarkdown(text, options);
  if (!definition) {
    throw new RoleboxError(
      'invalid_function_definition',
      `invalid function definition${options.source ? ` in ${options.source}` : ''}:\n${formatDefinitionIssues(issues)}`,
      { issues },
    );
  }
  const warn =
    options.onWarning ?? ((message: string) => process.emitWarning(message, 'RoleboxWarning'));
  for (const warning of warnings) warn(warning);
  return definition;
}

/** Options of {@link loadFunctions}. */
export type LoadFunctionsOptions = Omit<DefineFunctionOptions, 'source' | 'body'>;

/**
 * Reads every `*.md` file in `dir` (not recursive, in name order), each a function
 * definition in YAML frontmatter with its instructions as the body.
 *
 * Returns: the validated definitions.
 * Throws: `invalid_function_definition` listing every offending file, field and value at
 * once (bad YAML, missing frontmatter, schema errors, bad conditions, duplicates, transitions
 * to undefined functions); `invalid_argument` when `dir` cannot be read.
 */
export async function loadFunctions(
  dir: string,
  options: LoadFunctionsOptions = {},
): Promise<FunctionDefinition[]> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true }))
      .filter((entry) => entry.isFile() && entry.name.endsWith('.md'))
      .map((entry) => entry.name)
      .sort();
  } catch (error) {
    throw new RoleboxError(
      'invalid_argument',
      `cannot read function directory ${describeValue(dir)}: ${(error as Error).message}`,
      {
        dir,
      },
    );
  }

  const issues: DefinitionIssue[] = [];
  const warnings: string[] = [];
  const definitions: FunctionDefinition[] = [];
  for (const name of names) {
    const file = join(dir, name);
    const checked = checkFunctionMarkdown(await readFile(file, 'utf8'), {
      ...options,
      source: file,
    });
    issues.push(...checked.issues);
    warnings.push(...checked.warnings);
    if (checked.definition) definitions.push(checked.definition);
  }
  issues.push(...checkCatalog(definitions));
  if (issues.length > 0) {
    throw new RoleboxError(
      'invalid_function_definition',
      `invalid function definitions in ${dir}:\n${formatDefinitionIssues(issues)}`,
      {
        issues,
      },
    );
  }
  const warn =
    options.onWarning ?? ((message: string) => process.emitWarning(message, 'RoleboxWarning'));
  for (const warning of warnings) warn(warning);
  return definitions;
}
