// A function definition as markdown text: YAML frontmatter, then its instructions. Pure, so
// the root entry can parse definitions in a browser; reading them from a folder is load.ts.
import { parseDocument, YAMLError } from 'yaml';
import { checkOptionNames } from '../base/option-names.js';
import {
  type CheckedSpec,
  type DefineFunctionOptions,
  definitionOrThrow,
  examineFunctionSpec,
  type FunctionDefinition,
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
): CheckedSpec {
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
      yamlWarnings.push(`${file ? `${file}: ` : ''}YAML: ${yamlProblem(warning)}`);
    spec = document.toJS();
  } catch (error) {
    return {
      issues: [{ ...at, field: '(frontmatter)', message: `invalid YAML: ${yamlProblem(error)}` }],
      warnings: [],
    };
  }
  const checked = examineFunctionSpec(spec, { ...options, body: split.body });
  return { ...checked, warnings: [...yamlWarnings, ...checked.warnings] };
}

/**
 * A YAML error or warning in one line, `<what> at line <l>, column <c>`, counting lines of
 * the file: the frontmatter starts on its second line. (YAML's own message counts from the
 * frontmatter and ends with that place, which would say it twice, differently.)
 */
function yamlProblem(error: unknown): string {
  const text = String((error as Error)?.message ?? error).split('\n')[0] as string;
  if (!(error instanceof YAMLError) || !error.linePos) return text;
  const { line, col } = error.linePos[0];
  return `${text.replace(/ at line \d+, column \d+:?$/, '')} at line ${line + 1}, column ${col}`;
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
  checkOptionNames(options, MARKDOWN_OPTIONS, 'parseFunctionMarkdown options');
  return definitionOrThrow(checkFunctionMarkdown(text, options), options);
}

const MARKDOWN_OPTIONS = Object.keys({
  conditions: true,
  source: true,
  onWarning: true,
} satisfies Record<keyof FunctionMarkdownOptions, true>);
