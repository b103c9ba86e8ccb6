import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { parseToolCallText } from '../src/base/tool-call.js';
import {
  ConditionRegistry,
  checkFunctionSpec,
  type DefinitionIssue,
  defineFunction,
  type ErrorCode,
  formatCondition,
  isRoleboxError,
  parseCondition,
  parseFunctionMarkdown,
  RUNTIME_EVENT_TYPES,
  SIGNAL_TYPES,
} from '../src/index.js';
import { MAX_ITERATIONS_HARD_CAP } from '../src/loop/constants.js';
import { parseLoopCommand } from '../src/loop/parse-loop-command.js';
import { parseRuntimeEvent } from '../src/session/runtime-event-schema.js';
import { parseSignalText } from '../src/signal/parse-signal-text.js';
import { parseSignalArgs } from '../src/signal/schema.js';
import { errorOf } from './support/errors.js';

// Every parser answers arbitrary input with a result or a RoleboxError of its own codes:
// never another error type, never a hang. ROLEBOX_FUZZ_RUNS sets the cases per property
// (default 10 000; CI may run fewer).
const RUNS = Number(process.env.ROLEBOX_FUZZ_RUNS ?? 10_000);
if (!Number.isInteger(RUNS) || RUNS < 1)
  throw new Error(
    `ROLEBOX_FUZZ_RUNS must be a whole number ≥ 1, got ${process.env.ROLEBOX_FUZZ_RUNS}`,
  );
const settings = { numRuns: RUNS };
// A property runs RUNS cases: seconds at the default, more on a busy machine.
vi.setConfig({ testTimeout: 120_000 });
const quiet = { onWarning: () => {} };

/** Longer than any one case may take: a parser that backtracks or loops shows up as seconds. */
const CASE_BUDGET_MS = 2_000;

/**
 * Runs `parse`; passes when it returns or throws a RoleboxError whose code is one of
 * `codes`, within {@link CASE_BUDGET_MS}.
 */
function answers(parse: () => unknown, codes: readonly ErrorCode[]): void {
  const startedAt = performance.now();
  try {
    parse();
  } catch (error) {
    if (!isRoleboxError(error)) throw error;
    if (!codes.includes(error.code))
      throw new Error(`unexpected code ${error.code} (${error.message})`);
  }
  const tookMs = performance.now() - startedAt;
  if (tookMs > CASE_BUDGET_MS) throw new Error(`took ${Math.round(tookMs)} ms`);
}

const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'prototype',
];

/** Any text: full Unicode (NUL and lone surrogates included), or ASCII. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ maxLength: 80 }),
);

/** Text assembled from the pieces a parser reacts to, so the search reaches past the first check. */
function pieces(words: readonly string[]) {
  return fc
    .array(fc.oneof(fc.constantFrom(...words), anyText), { maxLength: 14 })
    .map((parts) => parts.join(''));
}

const SYNTAX = [
  '|',
  ':',
  ',',
  '=',
  ' ',
  '\t',
  '\n',
  '\u0000',
  '"',
  '\\',
  '{',
  '}',
  '[',
  ']',
  '(',
  ')',
];
const NUMBERS = ['0', '7', '-1', '1e999', '9'.repeat(400), '9007199254740993', '00012'];
const UNICODE = ['名称', '设计文档', 'नमस्ते', '😀', '\u200b', '\ud800'];

/** Values of every kind: prototype keys, Dates, Maps, null prototypes, boxed values, bigints. */
const anyValue = fc.anything({
  key: fc.oneof(
    fc.constantFrom(...PROTOTYPE_KEYS, 'type', 'payload', 'all', 'any', 'not'),
    anyText,
  ),
  maxDepth: 4,
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withNullPrototype: true,
  withObjectString: true,
  withSet: true,
  withSparseArray: true,
  withTypedArray: true,
});

/** `levels` objects or arrays nested in one another around `inner`. */
function nest(levels: number, wrap: (inner: unknown) => unknown, inner: unknown): unknown {
  let value = inner;
  for (let i = 0; i < levels; i++) value = wrap(value);
  return value;
}

describe('parseToolCallText', () => {
  it('answers any value with a call or malformed_tool_text', () => {
    fc.assert(
      fc.property(fc.oneof(pieces([...SYNTAX, 'signal', 'loop']), anyValue), (text) =>
        answers(() => parseToolCallText(text), ['malformed_tool_text']),
      ),
      settings,
    );
  });

  it('reads back the name, params and args it was built from', () => {
    const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_-]{0,20}$/);
    const params = fc.option(
      fc.string({ unit: 'binary', maxLength: 30 }).map((p) => p.replace(/\|/g, '')),
    );
    fc.assert(
      fc.property(name, params, anyText, (tool, param, args) => {
        const call = parseToolCallText(`|${tool}${param === null ? '' : `:${param}`}| ${args}`);
        expect(call.name).toBe(tool.toLowerCase());
        expect(call.params).toBe(param === null ? undefined : param.trim());
        expect(call.args).toBe(args.trim());
      }),
      settings,
    );
  });
});

describe('parseSignalText and parseSignalArgs', () => {
  const SIGNAL_CODES: ErrorCode[] = [
    'malformed_tool_text',
    'malformed_signal_text',
    'unknown_signal_type',
    'invalid_signal_payload',
    'invalid_argument',
  ];
  const signalText = fc.oneof(
    pieces([
      ...SYNTAX,
      ...NUMBERS,
      ...PROTOTYPE_KEYS,
      '|signal|',
      '|signal:x|',
      'type=',
      'payload=',
      ...SIGNAL_TYPES,
      '{"type":"answer","payload":',
      '{"__proto__":{"a":1}}',
      '"\\u0000"',
    ]),
    fc
      .tuple(fc.integer({ min: 0, max: 500 }), fc.constantFrom('[', '{"a":'))
      .map(([levels, open]) => {
        const close = open === '[' ? ']' : '}';
        return `|signal| type=answer, payload={"deep":${open.repeat(levels)}1${close.repeat(levels)}}`;
      }),
  );

  it('answers any text with arguments or a signal error', () => {
    fc.assert(
      fc.property(signalText, (text) =>
        answers(() => {
          const args = parseSignalText(text);
          expect(JSON.parse(JSON.stringify(args))).toEqual(args);
        }, SIGNAL_CODES),
      ),
      settings,
    );
  });

  it('answers any value with arguments or a signal error', () => {
    const args = fc.oneof(
      anyValue,
      fc.record({ type: fc.constantFrom(...SIGNAL_TYPES, ...PROTOTYPE_KEYS), payload: anyValue }),
      fc.tuple(fc.integer({ min: 0, max: 500 }), fc.boolean()).map(([levels, asArray]) => ({
        type: 'answer',
        payload: { deep: nest(levels, (inner) => (asArray ? [inner] : { a: inner }), 1) },
      })),
    );
    fc.assert(
      fc.property(args, (input) =>
        answers(() => {
          const parsed = parseSignalArgs(input);
          expect(JSON.parse(JSON.stringify(parsed))).toEqual(parsed);
        }, SIGNAL_CODES),
      ),
      settings,
    );
  });

  it('type=…, payload=<JSON> reads back the type and a JSON copy of the payload', () => {
    const payload = fc.dictionary(
      fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), fc.string({ unit: 'binary', maxLength: 12 })),
      fc.jsonValue({ maxDepth: 3 }),
      { maxKeys: 5 },
    );
    fc.assert(
      fc.property(fc.constantFrom(...SIGNAL_TYPES), payload, fc.boolean(), (type, data, quoted) => {
        const json = JSON.stringify(data);
        const parsed = parseSignalText(
          `|signal| type=${quoted ? `"${type}"` : type}, payload=${json}`,
        );
        expect(parsed.type).toBe(type);
        expect(JSON.stringify(parsed.payload)).toBe(json);
        expect(parseSignalText(`|signal| {"type": "${type}", "payload": ${json}}`)).toEqual(parsed);
      }),
      settings,
    );
  });
});

describe('parseLoopCommand', () => {
  const MODES = ['inherit', 'on', 'true', 'fresh', 'no-inherit', 'off', 'false'];
  it('answers any text with a command or malformed_loop_text', () => {
    const loopText = pieces([
      ...SYNTAX,
      ...NUMBERS,
      ...PROTOTYPE_KEYS,
      ...MODES,
      '|loop|',
      '|loop:',
      '|LOOP:',
      'iterations=',
      'mode=',
      '_0=',
      '_1=',
    ]);
    const numbered = fc
      .tuple(
        fc.constantFrom('|loop:', '|loop:iterations=', '|loop: _0 = '),
        fc.oneof(fc.constantFrom(...NUMBERS), fc.stringMatching(/^\d{1,30}$/)),
        fc.constantFrom('', ',fresh', ', mode=on', ',toString', ',,', ',fresh,3'),
        anyText,
      )
      .map(([open, n, mode, task]) => `${open}${n}${mode}| ${task}`);
    fc.assert(
      fc.property(fc.oneof(loopText, numbered, anyValue), (text) =>
        answers(() => {
          const command = parseLoopCommand(text as string);
          // What it returns goes into machine context: plain JSON, whole numbers in range.
          expect(JSON.parse(JSON.stringify(command))).toEqual(command);
          expect(Number.isSafeInteger(command.requested)).toBe(true);
          expect(command.iterations).toBe(Math.min(command.requested, MAX_ITERATIONS_HARD_CAP));
          expect(command.iterations).toBeGreaterThanOrEqual(1);
        }, ['malformed_loop_text']),
      ),
      settings,
    );
  });

  it('a command built from parts reads back to those parts, clamped to the cap', () => {
    const iterations = fc.oneof(
      fc.integer({ min: 1, max: 200 }),
      fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    );
    const task = anyText.filter((text) => text.trim() !== '');
    const form = fc.constantFrom('positional', 'named', 'mixed', 'named-reversed');
    fc.assert(
      fc.property(
        iterations,
        fc.option(fc.constantFrom(...MODES, ...MODES.map((mode) => mode.toUpperCase()))),
        task,
        form,
        (n, mode, text, how) => {
          const params =
            mode === null
              ? how === 'positional'
                ? `${n}`
                : `iterations=${n}`
              : how === 'positional'
                ? `${n}, ${mode}`
                : how === 'named'
                  ? `iterations = ${n}, mode = ${mode}`
                  : how === 'mixed'
                    ? `${n},mode=${mode}`
                    : `mode=${mode},iterations=${n}`;
          const command = parseLoopCommand(`|loop:${params}| ${text}`);
          expect(command).toEqual({
            iterations: Math.min(n, MAX_ITERATIONS_HARD_CAP),
            requested: n,
            clamped: n > MAX_ITERATIONS_HARD_CAP,
            mode:
              mode === null || ['inherit', 'on', 'true'].includes(mode.toLowerCase())
                ? 'inherit'
                : 'fresh',
            task: text.trim(),
          });
          expect(Number.isSafeInteger(command.requested)).toBe(true);
        },
      ),
      settings,
    );
  });
});

describe('parseCondition', () => {
  const registry = new ConditionRegistry();
  const CONDITION_CODES: ErrorCode[] = [
    'condition_syntax',
    'unknown_condition',
    'invalid_condition_argument',
  ];

  /** An argument: any text without parentheses, or one wrapped in balanced ones. */
  const argument = fc
    .oneof(
      fc.string({ unit: 'binary', maxLength: 16 }).map((text) => text.replace(/[()]/g, '')),
      fc.string({ maxLength: 8 }).map((text) => `(${text.replace(/[()]/g, '')})`),
    )
    .filter((text) => text.trim() !== '');
  const artifactName = fc.constantFrom(
    'plan',
    '设计文档',
    '审批 数据',
    'notes/a:b',
    'x'.repeat(128),
  );
  const named = fc.oneof(
    fc.constantFrom(...SIGNAL_TYPES).map((type) => `signal_observed(${type})`),
    artifactName.map((name) => `artifact_exists(${name})`),
    argument.map((arg) => `tool_observed(${arg})`),
    argument.map((arg) => `evidence_observed(${arg})`),
    fc.nat().map((n) => `turn_count(${n})`),
    argument
      .filter((arg) => !arg.trimStart().startsWith('='))
      .map((arg) => `state_eq(${arg.replace(/=/g, '')}=${arg})`)
      .filter((text) => /^state_eq\([^=]+=/.test(text)),
    fc.constantFrom('evidence_met()', 'user_approval()', 'user_approval', ' user_approval ( ) '),
  );
  /** A valid condition in object or text form, up to a few levels deep. */
  const { condition } = fc.letrec((tie) => ({
    condition: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      named,
      fc.record({ all: fc.array(tie('condition'), { maxLength: 4 }) }),
      fc.record({ any: fc.array(tie('condition'), { maxLength: 4 }) }),
      fc.record({ not: tie('condition') }),
      fc
        .tuple(fc.constantFrom('all', 'any'), fc.array(tie('condition'), { maxLength: 4 }))
        .map(([kind, items]) => `${kind}(${items.map(asText).join(', ')})`),
      tie('condition').map((inner) => `not(${asText(inner)})`),
    ),
  }));

  it('answers any value or text with an AST or a condition error', () => {
    const deep = fc
      .tuple(fc.integer({ min: 0, max: 500 }), fc.constantFrom('not', 'all', 'any', 'text'))
      .map(([levels, kind]) =>
        kind === 'text'
          ? `${'not('.repeat(levels)}user_approval()${')'.repeat(levels)}`
          : nest(levels, (inner) => (kind === 'not' ? { not: inner } : { [kind]: [inner] }), 'x'),
      );
    const text = pieces([
      ...SYNTAX,
      ...PROTOTYPE_KEYS,
      ...UNICODE,
      'all(',
      'any(',
      'not(',
      'signal_observed(',
      'artifact_exists(',
      'state_eq(',
      'turn_count(',
      'answer',
    ]);
    fc.assert(
      fc.property(fc.oneof(text, anyValue, deep, condition), (input) =>
        answers(() => parseCondition(input, registry), CONDITION_CODES),
      ),
      settings,
    );
  });

  it('formatCondition(parseCondition(x)) parses back to the same AST, and formats the same', () => {
    fc.assert(
      fc.property(condition, (input) => {
        const ast = parseCondition(input, registry);
        const text = formatCondition(ast);
        const again = parseCondition(text, registry);
        expect(again).toEqual(ast);
        expect(formatCondition(again)).toBe(text);
      }),
      settings,
    );
  });
});

/** A condition as text (the object form through the parser's own formatting). */
function asText(condition: unknown): string {
  return typeof condition === 'string'
    ? condition
    : formatCondition(parseCondition(condition, new ConditionRegistry()));
}

describe('function definitions', () => {
  const KEYS = [
    'name',
    'description',
    'gate',
    'continue_until',
    'continue_max',
    'transitions',
    'observe',
    'requires_evidence',
    'when',
    'activate',
    'deactivate',
    'tool',
    'capture_payload_as',
    'set_evidence',
    ...PROTOTYPE_KEYS,
  ];
  const VALUES = [
    'a',
    'awaiting-approval',
    'signal_observed(answer)',
    'all(user_approval(), not(evidence_met()))',
    'gate',
    'signal',
    '设计文档',
    '[a, b]',
    '{not: user_approval()}',
    '5',
    '-1',
    '1e999',
    '~',
    '&a [1]',
    '*a',
    '!!binary aGk=',
    '!!set {a}',
    "'__proto__'",
  ];
  /** YAML lines from the keys and values a definition has, indented at random. */
  const yaml = fc
    .array(
      fc.tuple(
        fc.constantFrom('', '  ', '    ', '  - ', '- '),
        fc.constantFrom(...KEYS),
        fc.oneof(fc.constantFrom(...VALUES), anyText),
      ),
      { maxLength: 10 },
    )
    .map((lines) => lines.map(([indent, key, value]) => `${indent}${key}: ${value}`).join('\n'));
  // Deep YAML costs the YAML parser ~0.1 ms a level, so it is a small share of the cases.
  const markdown = fc.oneof(
    { arbitrary: yaml.map((body) => `---\n${body}\n---\nThe body.\n`), weight: 4 },
    {
      arbitrary: fc
        .tuple(fc.constantFrom('---\n', '\uFEFF---\r\n', ''), yaml, anyText)
        .map(([start, body, rest]) => `${start}${body}\n---${rest}`),
      weight: 4,
    },
    {
      arbitrary: fc
        .tuple(fc.integer({ min: 0, max: 300 }), fc.constantFrom('[', '{a: ', '- '))
        .map(([levels, open]) => {
          const close = open === '[' ? ']' : open === '- ' ? '' : '}';
          return `---\nname: a\ngate: ${open.repeat(levels)}x${close.repeat(levels)}\n---\n`;
        }),
      weight: 1,
    },
    { arbitrary: anyText, weight: 1 },
  );

  it('parseFunctionMarkdown answers any text with a definition or invalid_function_definition', () => {
    fc.assert(
      fc.property(markdown, (text) =>
        answers(() => parseFunctionMarkdown(text, quiet), ['invalid_function_definition']),
      ),
      settings,
    );
  });

  it('defineFunction and checkFunctionSpec answer any value', () => {
    const spec = fc.oneof(
      anyValue,
      fc.dictionary(fc.constantFrom(...KEYS), fc.oneof(fc.constantFrom(...VALUES), anyValue), {
        maxKeys: 6,
      }),
      fc.record({ name: fc.constantFrom('a', 'b-c'), gate: anyValue, observe: anyValue }),
    );
    fc.assert(
      fc.property(spec, (input) => {
        answers(() => defineFunction(input as never, quiet), ['invalid_function_definition']);
        const checked = checkFunctionSpec(input, quiet);
        expect(checked.definition === undefined).toBe(checked.issues.length > 0);
      }),
      settings,
    );
  });
});

describe('definition-shaped objects', () => {
  // Objects with a definition's keys, each holding a good, a bad or an odd value, so the
  // search reaches the condition, transition and observe checks behind the shape check.
  const condition = fc.oneof(
    fc.constantFrom(
      'signal_observed(answer)',
      'user_approval()',
      'nope()',
      'signal_observed(answr)',
      'all(user_approval(), not(evidence_met()))',
      'any(',
      'gate',
      '',
      { not: 'nope()' },
      { all: ['user_approval()', 'x('] },
      { any: 'user_approval()' },
    ),
    anyValue,
  );
  const name = fc.oneof(
    fc.constantFrom('a', 'b-c', 'review', 'Bad Name', '', '__proto__', 'constructor'),
    anyValue,
  );
  const names = fc.oneof(name, fc.array(name, { maxLength: 3 }));
  const transition = fc.oneof(
    fc.record(
      { when: condition, activate: names, deactivate: names, otherwise: anyValue },
      { requiredKeys: [] },
    ),
    anyValue,
  );
  const text = fc.oneof(
    fc.constantFrom('signal', 'write_file', 'notes', '设计文档', 'a(b)', ''),
    anyValue,
  );
  const observeEntry = fc.oneof(
    fc.record(
      { tool: text, capture_payload_as: text, set_evidence: text, capture: anyValue },
      { requiredKeys: [] },
    ),
    anyValue,
  );
  const list = <T>(item: fc.Arbitrary<T>) => fc.oneof(fc.array(item, { maxLength: 3 }), anyValue);
  const definitionLike = fc.record(
    {
      name,
      description: text,
      gate: condition,
      continue_until: condition,
      continue_max: fc.oneof(fc.integer({ min: -2, max: 9 }), anyValue),
      transitions: list(transition),
      observe: list(observeEntry),
      requires_evidence: list(text),
      gaet: anyValue,
      constructor: anyValue,
    },
    { requiredKeys: [] },
  );
  // Each case builds and checks large values: a fifth of the cases of the other properties.
  const fewer = { numRuns: Math.max(1, Math.round(RUNS / 5)) };
  const key = (issue: DefinitionIssue) => `${issue.field}|${issue.message}`;
  /** Issues not at `field` (or inside it). */
  const besides = (issues: readonly DefinitionIssue[], field: string) =>
    issues
      .filter((issue) => issue.field !== field && !issue.field.startsWith(`${field}.`))
      .map(key);

  it('defineFunction answers with a definition or one error naming each place once', () => {
    fc.assert(
      fc.property(definitionLike, (spec) => {
        answers(() => defineFunction(spec as never, quiet), ['invalid_function_definition']);
        const { definition, issues } = checkFunctionSpec(spec, quiet);
        expect(definition === undefined).toBe(issues.length > 0);
        for (const issue of issues) {
          expect(typeof issue.field).toBe('string');
          expect(typeof issue.message).toBe('string');
          expect(issue.message.startsWith(`${issue.field}:`), issue.message).toBe(false);
        }
        if (definition === undefined) {
          const { message } = errorOf(() => defineFunction(spec as never, quiet));
          expect(message, message).not.toMatch(/(?:^|\s)([^\s:]+): \1: /m);
        }
      }),
      fewer,
    );
  });

  it('a problem of one kind never hides a problem of another: every problem is reported at once', () => {
    fc.assert(
      fc.property(definitionLike, fc.constantFrom('five', -1, 1.5), (spec, badMax) => {
        const alone = checkFunctionSpec(spec, quiet).issues;
        // A schema problem added: every other problem is still reported.
        const withSchemaProblem = checkFunctionSpec(
          { ...spec, continue_max: badMax },
          quiet,
        ).issues;
        expect(besides(withSchemaProblem, 'continue_max')).toEqual(besides(alone, 'continue_max'));
        // A condition problem added: likewise.
        const withConditionProblem = checkFunctionSpec(
          { ...spec, continue_until: 'nope()' },
          quiet,
        ).issues;
        expect(besides(withConditionProblem, 'continue_until')).toEqual(
          besides(alone, 'continue_until'),
        );
      }),
      fewer,
    );
  });
});

describe('parseRuntimeEvent', () => {
  const FIELDS = [
    'type',
    'availableSkills',
    'initialSkill',
    'intakePrompt',
    'skill',
    'text',
    'decision',
    'decisionId',
    'workerId',
    'acceptanceMode',
    'questions',
    'artifactId',
    'assessment',
    'instruction',
    'reason',
    'kind',
    'id',
    ...PROTOTYPE_KEYS,
  ];
  it('answers any value with an event or invalid_event', () => {
    const event = fc.oneof(
      anyValue,
      fc
        .tuple(
          fc.constantFrom(...RUNTIME_EVENT_TYPES, ...PROTOTYPE_KEYS),
          fc.dictionary(fc.constantFrom(...FIELDS), anyValue, { maxKeys: 4 }),
        )
        .map(([type, fields]) => ({ ...fields, type })),
    );
    fc.assert(
      fc.property(event, (input) =>
        answers(() => {
          const parsed = parseRuntimeEvent(input);
          expect(JSON.parse(JSON.stringify(parsed))).toEqual(parsed);
        }, ['invalid_event']),
      ),
      settings,
    );
  });
});
