import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { warnHost } from '../base/host-process.js';
import { describeValue, RoleboxError } from '../errors.js';
import { checkCatalog } from './catalog.js';
import {
  type DefineFunctionOptions,
  type DefinitionIssue,
  type FunctionDefinition,
  formatDefinitionIssues,
} from './definition.js';
import { checkFunctionMarkdown } from './markdown.js';

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
  const warn = options.onWarning ?? warnHost;
  for (const warning of warnings) warn(warning);
  return definitions;
}
