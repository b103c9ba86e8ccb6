import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { warnHost } from '../base/host-process.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import { checkCatalog } from './catalog.js';
import {
  type DefineFunctionOptions,
  type DefinitionIssue,
  type DefinitionOutline,
  definitionError,
  type FunctionDefinition,
} from './definition.js';
import { checkFunctionMarkdown } from './markdown.js';

/** Options of {@link loadFunctions}. */
export type LoadFunctionsOptions = Omit<DefineFunctionOptions, 'source' | 'body'>;

const LOAD_OPTIONS = Object.keys({
  conditions: true,
  onWarning: true,
} satisfies Record<keyof LoadFunctionsOptions, true>);

/**
 * Reads every `*.md` file in `dir` (not recursive, in name order), each a function
 * definition in YAML frontmatter with its instructions as the body.
 *
 * Returns: the validated definitions.
 * Throws: `invalid_function_definition` listing every problem of every file at once, each
 * with its file, function, field and value (bad YAML, missing frontmatter, schema errors,
 * bad conditions, duplicates, transitions to undefined functions; `details.issues`);
 * `invalid_argument` when `dir` cannot be read or for an unknown option.
 */
export async function loadFunctions(
  dir: string,
  options: LoadFunctionsOptions = {},
): Promise<FunctionDefinition[]> {
  checkOptionNames(options, LOAD_OPTIONS, 'loadFunctions options');
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
  // Every file with a valid name takes part in the checks across files, even one with
  // problems of its own: its name is defined, and its transitions are checked.
  const outlines: DefinitionOutline[] = [];
  for (const name of names) {
    const file = join(dir, name);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      // One file that cannot be read is one problem among the others, not the end of the load.
      issues.push({
        file,
        field: '(file)',
        message: `cannot be read: ${(error as Error)?.message ?? String(error)}`,
      });
      continue;
    }
    const checked = checkFunctionMarkdown(text, { ...options, source: file });
    issues.push(...checked.issues);
    warnings.push(...checked.warnings);
    if (checked.definition) definitions.push(checked.definition);
    if (checked.outline) outlines.push(checked.outline);
  }
  issues.push(...checkCatalog(outlines));
  if (issues.length > 0) {
    // One file's problems together, files in the order they were read.
    const order = new Map(names.map((name, index) => [join(dir, name), index]));
    const rank = (issue: DefinitionIssue) => order.get(issue.file ?? '') ?? names.length;
    issues.sort((a, b) => rank(a) - rank(b));
    throw definitionError(`invalid function definitions in ${dir}`, issues, { dir }, { dir });
  }
  const warn = options.onWarning ?? warnHost;
  for (const warning of warnings) warn(warning);
  return definitions;
}
