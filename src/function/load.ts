import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
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
    const split = splitFrontmatter(await readFile(file, 'utf8'));
    if (!split) {
      issues.push({
        file,
        field: '(frontmatter)',
        message: 'expected a YAML frontmatter block between --- lines at the top',
      });
      continue;
    }
    let spec: unknown;
    try {
      spec = parseYaml(split.frontmatter);
    } catch (error) {
      const where =
        error instanceof YAMLParseError && error.linePos
          ? ` at line ${error.linePos[0].line + 1}`
          : '';
      issues.push({
        file,
        field: '(frontmatter)',
        message: `invalid YAML${where}: ${(error as Error).message.split('\n')[0]}`,
      });
      continue;
    }
    const checked = checkFunctionSpec(spec, { ...options, source: file, body: split.body });
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
