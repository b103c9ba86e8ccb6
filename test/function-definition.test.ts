import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { splitFrontmatter } from '../src/function/markdown.js';
import {
  ConditionRegistry,
  checkFunctionSpec,
  createRolebox,
  type DefinitionIssue,
  defineFunction,
  parseFunctionMarkdown,
} from '../src/index.js';
import { loadFunctions } from '../src/node.js';
import { errorOf, rejectionOf } from './support/errors.js';

const quiet = { onWarning: () => {} };

describe('defineFunction', () => {
  it('validates the frontmatter shape of SPEC §2.1 and parses every condition', () => {
    const definition = defineFunction({
      name: 'awaiting-approval',
      description: 'wait',
      gate: 'signal_observed(answer)',
      continue_until: { any: ['signal_observed(answer)', 'signal_observed(escalate)'] },
      continue_max: 3,
      transitions: [
        {
          when: 'signal_observed(escalate)',
          activate: ['emergency-handler'],
          deactivate: 'awaiting-approval',
        },
        { when: 'gate', activate: 'emergency-handler' },
      ],
      observe: [
        { tool: 'signal', capture_payload_as: 'approval-data' },
        { tool: 'write_file', set_evidence: 'wrote-file' },
      ],
      requires_evidence: ['wrote-file'],
    });
    expect(definition.name).toBe('awaiting-approval');
    expect(definition.continueMax).toBe(3);
    expect(definition.gate).toEqual({
      kind: 'named',
      name: 'signal_observed',
      arg: 'answer',
      text: 'signal_observed(answer)',
    });
    expect(definition.continueUntil?.kind).toBe('any');
    expect(definition.transitions).toEqual([
      {
        when: {
          kind: 'named',
          name: 'signal_observed',
          arg: 'escalate',
          text: 'signal_observed(escalate)',
        },
        activate: ['emergency-handler'],
        deactivate: ['awaiting-approval'],
      },
      { when: 'gate', activate: ['emergency-handler'], deactivate: [] },
    ]);
    expect(definition.observe).toEqual([
      { tool: 'signal', capturePayloadAs: 'approval-data' },
      { tool: 'write_file', setEvidence: 'wrote-file' },
    ]);
    expect(definition.requiresEvidence).toEqual(['wrote-file']);
  });

  it('defaults continue_max to 5 and the lists to empty', () => {
    const definition = defineFunction({ name: 'plain' });
    expect(definition).toMatchObject({
      continueMax: 5,
      transitions: [],
      observe: [],
      requiresEvidence: [],
      extra: {},
    });
  });

  it('keeps unknown keys and warns about each', () => {
    const warnings: string[] = [];
    const definition = defineFunction(
      { name: 'plain', owner: 'team-a', priority: 2 },
      { onWarning: (w) => warnings.push(w) },
    );
    expect(definition.extra).toEqual({ owner: 'team-a', priority: 2 });
    expect(warnings).toEqual([
      'function plain: unknown key "owner" is kept but ignored',
      'function plain: unknown key "priority" is kept but ignored',
    ]);
  });

  it.each([
    [{ name: 'Awaiting_Approval' }, 'name', 'Awaiting_Approval'],
    [{}, 'name', undefined],
    [{ name: 'x', continue_max: -1 }, 'continue_max', -1],
    [{ name: 'x', continue_max: 'five' }, 'continue_max', 'five'],
    [{ name: 'x', gate: 'signal_observed(approve)' }, 'gate', 'signal_observed(approve)'],
    [{ name: 'x', continue_until: 'whatever()' }, 'continue_until', 'whatever()'],
    [{ name: 'x', transitions: [{ when: 'user_approval()' }] }, 'transitions.0', undefined],
    [{ name: 'x', transitions: [{ activate: ['y'] }] }, 'transitions.0.when', undefined],
    [{ name: 'x', transitions: [{ when: 'gate', activate: ['y'] }] }, 'transitions.0.when', 'gate'],
    [
      { name: 'x', transitions: [{ when: 'user_approval()', activate: ['Bad Name'] }] },
      'transitions.0.activate',
      undefined,
    ],
    [
      { name: 'x', transitions: [{ when: 'user_approval()', activate: ['y'], otherwise: 1 }] },
      'transitions.0',
      undefined,
    ],
    [{ name: 'x', observe: [{ tool: 'signal' }] }, 'observe.0', undefined],
    [
      { name: 'x', observe: [{ tool: 'write_file', capture_payload_as: 'a' }] },
      'observe.0.capture_payload_as',
      'write_file',
    ],
    [{ name: 'x', observe: [{ tool: 'signal', capture: 'a' }] }, 'observe.0', undefined],
    [{ name: 'x', requires_evidence: 'wrote-file' }, 'requires_evidence', 'wrote-file'],
  ])('refuses %j at %s', (spec, field, value) => {
    const error = errorOf(() => defineFunction(spec as never, quiet));
    expect(error.code).toBe('invalid_function_definition');
    const issues = error.details.issues as DefinitionIssue[];
    expect(
      issues.some((issue) => issue.field === field || issue.field.startsWith(`${field}.`)),
    ).toBe(true);
    expect(error.message).toContain(field);
    if (value !== undefined) expect(error.message).toContain(JSON.stringify(value));
  });

  it('reports every problem of every kind at once, each line naming its place once', () => {
    const error = errorOf(() =>
      defineFunction(
        {
          name: 'review',
          continue_max: -1,
          gate: 'nope()',
          continue_until: { all: ['user_approval()', { not: 'signal_observed(answr)' }] },
          transitions: [
            { when: 'signal_observed(answer)', activate: 'Bad', otherwise: 1 },
            { when: 'gate', deactivate: [] },
          ],
          observe: [
            { tool: 'write_file', capture_payload_as: 'a' },
            { tool: 'signal', capture: 'x' },
          ],
        } as never,
        quiet,
      ),
    );
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toBe(
      [
        'invalid function definition review (9 problems):',
        '  continue_max: must be a whole number of at least 0 (got -1)',
        '  transitions.0.activate: must be a kebab-case name like awaiting-approval, or a list of them (got "Bad")',
        '  transitions.0.otherwise: unknown key; known: when, activate, deactivate',
        '  observe.1.capture: unknown key (did you mean "capture_payload_as"?); known: tool, capture_payload_as, set_evidence',
        '  gate: unknown condition "nope" in "nope()"; known: signal_observed, artifact_exists, tool_observed, evidence_met, evidence_observed, user_approval, turn_count, state_eq',
        '  continue_until.all[1].not: "signal_observed(answr)" is not a valid use of signal_observed: expected a signal type (answer, need_approval, blocked, need_clarification, handoff, progress, revise_needed, escalate)',
        '  transitions.1: a transition needs activate or deactivate',
        '  observe.0.capture_payload_as: only supported with tool: signal, not tool "write_file"',
        '  observe.1: an observe entry needs capture_payload_as or set_evidence (got {"tool":"signal","capture":"x"})',
      ].join('\n'),
    );
    const issues = error.details.issues as DefinitionIssue[];
    expect(issues.every((issue) => issue.function === 'review')).toBe(true);
    expect(issues[4]).toEqual({
      function: 'review',
      field: 'gate',
      message: expect.stringMatching(/^unknown condition "nope"/),
      value: 'nope()',
      code: 'unknown_condition',
    });
    expect(issues[5]).toMatchObject({
      field: 'continue_until.all[1].not',
      value: 'signal_observed(answr)',
      code: 'invalid_condition_argument',
    });
  });

  it.each([
    [
      { name: 'x', gate: 'nope()' },
      'invalid function definition x (1 problem):\n  gate: unknown condition "nope"',
    ],
    [
      { gate: 'user_approval()' },
      'invalid function definition (1 problem):\n  name: missing; must be a kebab-case name like awaiting-approval',
    ],
    [
      { name: 'Bad Name' },
      'invalid function definition (1 problem):\n  name: must be a kebab-case name like awaiting-approval (got "Bad Name")',
    ],
    [
      null,
      'invalid function definition (1 problem):\n  (root): a function definition must be an object (the keys of its frontmatter) (got null)',
    ],
  ])('%j: the message names the place once, never `gate: gate:`', (spec, start) => {
    const error = errorOf(() => defineFunction(spec as never, quiet));
    expect(error.message.startsWith(start)).toBe(true);
    expect(error.message).not.toMatch(/(\b[\w.[\]]+: )\1/);
  });

  it('a definition with its own problems still shows the schema problems with the others', () => {
    const checked = checkFunctionSpec({ name: 'x', continue_max: 'five', gate: 'nope()' }, quiet);
    expect(checked.definition).toBeUndefined();
    expect(checked.issues.map((issue) => issue.field)).toEqual(['continue_max', 'gate']);
  });

  it('warns about an unknown key with the known one it likely misspells', () => {
    const warnings: string[] = [];
    defineFunction({ name: 'x', gaet: 'user_approval()' }, { onWarning: (w) => warnings.push(w) });
    expect(warnings).toEqual([
      'function x: unknown key "gaet" is kept but ignored (did you mean "gate"?)',
    ]);
  });

  it('refuses an unknown option', () => {
    const error = errorOf(() => defineFunction({ name: 'x' }, { sorce: 'a.md' } as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe(
      'defineFunction options: unknown option "sorce" (did you mean "source"?); known: conditions, source, body, onWarning',
    );
  });

  it('reports every problem of a definition at once', () => {
    const error = errorOf(() =>
      defineFunction(
        {
          name: 'x',
          gate: 'nope()',
          continue_until: 'turn_count(x)',
          observe: [{ tool: 'signal' }],
        },
        quiet,
      ),
    );
    expect((error.details.issues as DefinitionIssue[]).map((issue) => issue.field)).toEqual([
      'gate',
      'continue_until',
      'observe.0',
    ]);
  });

  it('checks conditions against the given registry', () => {
    const registry = new ConditionRegistry();
    registry.register('reviewed', () => true);
    expect(
      defineFunction({ name: 'x', gate: 'reviewed' }, { conditions: registry }).gate,
    ).toMatchObject({ name: 'reviewed' });
    expect(errorOf(() => defineFunction({ name: 'x', gate: 'reviewed' })).code).toBe(
      'invalid_function_definition',
    );
  });
});

describe('a set of definitions', () => {
  it('createRolebox refuses duplicates and transitions to undefined functions, naming them', () => {
    const a = defineFunction({
      name: 'a',
      transitions: [{ when: 'user_approval()', activate: ['b', 'ghost'] }],
    });
    const b = defineFunction({ name: 'b' });
    const error = errorOf(() => createRolebox({ functions: [a, b, b] }));
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toBe(
      [
        'invalid function definitions (2 problems):',
        '  function b: name: duplicate function name',
        '  function a: transitions.0.activate.1: transition to undefined function "ghost"',
      ].join('\n'),
    );
    expect(error.details.issues).toEqual([
      {
        function: 'b',
        field: 'name',
        message: 'duplicate function name',
        value: 'b',
        code: 'duplicate_function',
      },
      {
        function: 'a',
        field: 'transitions.0.activate.1',
        message: 'transition to undefined function "ghost"',
        value: 'ghost',
        code: 'unknown_function',
      },
    ]);
  });

  it('names where a duplicate was first defined, and the likely meant target', () => {
    const review = defineFunction(
      { name: 'review', transitions: [{ when: 'user_approval()', activate: 'pubish' }] },
      { source: 'review.md' },
    );
    const publish = defineFunction({ name: 'publish' }, { source: 'publish.md' });
    const again = defineFunction({ name: 'publish' }, { source: 'again.md' });
    const error = errorOf(() => createRolebox({ functions: [review, publish, again] }));
    expect(error.message).toBe(
      [
        'invalid function definitions (2 problems):',
        '  again.md: function publish: name: duplicate function name, also defined in publish.md',
        '  review.md: function review: transitions.0.activate.0: transition to undefined function "pubish" (did you mean "publish"?)',
      ].join('\n'),
    );
  });

  it.each([
    [
      [{ name: 'x', gate: 'user_approval()' }],
      'functions[0]: gate must be a parsed condition, got "user_approval()"',
    ],
    [[null], 'functions[0]: not an object, got null'],
    [['approval'], 'functions[0]: not an object, got "approval"'],
    [
      [{ name: 'x' }],
      'functions[0]: continueMax must be a whole number of at least 0, got undefined',
    ],
    [
      [{ ...defineFunction({ name: 'x' }), transitions: [{ when: { kind: 'named' } }] }],
      'functions[0]: transitions must be a list of { when, activate, deactivate }',
    ],
  ])(
    'createRolebox refuses %j, which is not a definition, with invalid_argument',
    (functions, named) => {
      const error = errorOf(() => createRolebox({ functions: functions as never }));
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toContain(named);
      expect(error.message).toContain('a spec goes through defineFunction first');
    },
  );

  it('createRolebox refuses conditions its registry does not know, naming each', () => {
    const registry = new ConditionRegistry();
    registry.register('reviewed', () => true);
    const definition = defineFunction(
      { name: 'x', gate: { not: 'reviewed' }, transitions: [{ when: 'reviewed', activate: 'x' }] },
      { conditions: registry },
    );
    const error = errorOf(() => createRolebox({ functions: [definition] }));
    expect(error.code).toBe('invalid_function_definition');
    const issues = error.details.issues as DefinitionIssue[];
    expect(issues.map((issue) => [issue.field, issue.code])).toEqual([
      ['gate.not', 'unknown_condition'],
      ['transitions.0.when', 'unknown_condition'],
    ]);
    expect(error.message).toContain(
      'function x: gate.not: unknown condition "reviewed" in "reviewed": not in this rolebox\'s condition registry',
    );
    expect(() => createRolebox({ functions: [definition], conditions: registry })).not.toThrow();
  });
});

describe('loadFunctions', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-fns-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads every *.md file in name order, with its body', async () => {
    await writeFile(
      join(dir, 'b-awaiting.md'),
      '---\nname: awaiting-approval\ngate: signal_observed(answer)\ncontinue_until: signal_observed(answer)\nobserve:\n  - tool: signal\n    capture_payload_as: approval-data\n---\n\n# Ask for approval\nThen wait.\n',
    );
    await writeFile(
      join(dir, 'a-escalate.md'),
      '---\nname: emergency-escalate\ncontinue_until: signal_observed(escalate)\ntransitions:\n  - when: signal_observed(escalate)\n    activate: [emergency-handler]\n---\n',
    );
    await writeFile(join(dir, 'c-handler.md'), '---\nname: emergency-handler\n---\nHandle it.');
    await writeFile(join(dir, 'notes.txt'), 'not a function');
    const definitions = await loadFunctions(dir, quiet);
    expect(definitions.map((definition) => definition.name)).toEqual([
      'emergency-escalate',
      'awaiting-approval',
      'emergency-handler',
    ]);
    expect(definitions[1]?.body).toBe('# Ask for approval\nThen wait.\n');
    expect(definitions[1]?.source).toBe(join(dir, 'b-awaiting.md'));
    expect(definitions[2]?.body).toBe('Handle it.');
  });

  it('names every offending file and field in one error', async () => {
    await writeFile(join(dir, '1-bad-name.md'), '---\nname: Bad Name\n---\n');
    await writeFile(join(dir, '2-bad-yaml.md'), '---\nname: x\ngate: [unclosed\n---\n');
    await writeFile(join(dir, '3-no-frontmatter.md'), '# just markdown\n');
    await writeFile(
      join(dir, '4-bad-condition.md'),
      '---\nname: good\ngate: signal_observed(aproval)\n---\n',
    );
    await writeFile(
      join(dir, '5-dangling.md'),
      '---\nname: dangling\ntransitions:\n  - when: user_approval()\n    activate: [nowhere]\n---\n',
    );
    await writeFile(join(dir, '6-dup.md'), '---\nname: dangling\n---\n');
    const error = await rejectionOf(loadFunctions(dir, quiet));
    expect(error.code).toBe('invalid_function_definition');
    const issues = error.details.issues as DefinitionIssue[];
    const where = issues.map((issue) => `${issue.file?.split('/').at(-1)}:${issue.field}`);
    expect(where).toEqual([
      '1-bad-name.md:name',
      '2-bad-yaml.md:(frontmatter)',
      '3-no-frontmatter.md:(frontmatter)',
      '4-bad-condition.md:gate',
      '5-dangling.md:transitions.0.activate.0',
      '6-dup.md:name',
    ]);
    expect(error.message).toContain('signal_observed(aproval)');
    expect(error.message).toContain('invalid YAML');
  });

  it('reports every kind of problem of every file at once, a file with problems of its own still counting across files', async () => {
    await writeFile(
      join(dir, 'a-review.md'),
      '---\nname: review\ncontinue_max: -1\ngate: nope()\ntransitions:\n  - when: signal_observed(answr)\n    activate: [publish, pubish]\n---\n',
    );
    await writeFile(join(dir, 'b-bad-yaml.md'), '---\nname: other\ngate: [unclosed\n---\n');
    // Has a problem of its own, yet defines `publish`: review's transition to it is fine.
    await writeFile(
      join(dir, 'c-publish.md'),
      '---\nname: publish\nobserve:\n  - tool: write_file\n    capture: notes\n---\n',
    );
    await writeFile(join(dir, 'd-dup.md'), '---\nname: review\n---\n');
    const error = await rejectionOf(loadFunctions(dir, quiet));
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toBe(
      [
        `invalid function definitions in ${dir} (8 problems):`,
        '  a-review.md: function review: continue_max: must be a whole number of at least 0 (got -1)',
        '  a-review.md: function review: gate: unknown condition "nope" in "nope()"; known: signal_observed, artifact_exists, tool_observed, evidence_met, evidence_observed, user_approval, turn_count, state_eq',
        '  a-review.md: function review: transitions.0.when: "signal_observed(answr)" is not a valid use of signal_observed: expected a signal type (answer, need_approval, blocked, need_clarification, handoff, progress, revise_needed, escalate)',
        '  a-review.md: function review: transitions.0.activate.1: transition to undefined function "pubish" (did you mean "publish"?)',
        '  b-bad-yaml.md: (frontmatter): invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 16',
        '  c-publish.md: function publish: observe.0.capture: unknown key (did you mean "capture_payload_as"?); known: tool, capture_payload_as, set_evidence',
        '  c-publish.md: function publish: observe.0: an observe entry needs capture_payload_as or set_evidence (got {"tool":"write_file","capture":"notes"})',
        `  d-dup.md: function review: name: duplicate function name, also defined in ${join(dir, 'a-review.md')}`,
      ].join('\n'),
    );
    expect(error.details.dir).toBe(dir);
    const issues = error.details.issues as DefinitionIssue[];
    expect(issues[0]).toEqual({
      file: join(dir, 'a-review.md'),
      function: 'review',
      field: 'continue_max',
      message: 'must be a whole number of at least 0',
      value: -1,
    });
    expect(issues.map((issue) => issue.code)).toEqual([
      undefined,
      'unknown_condition',
      'invalid_condition_argument',
      'unknown_function',
      undefined,
      undefined,
      undefined,
      'duplicate_function',
    ]);
  });

  it('parseFunctionMarkdown names the file once, in the heading', () => {
    const error = errorOf(() =>
      parseFunctionMarkdown('---\nname: review\ngate: nope()\n---\n', { source: 'review.md' }),
    );
    expect(error.message).toBe(
      'invalid function definition review in review.md (1 problem):\n  gate: unknown condition "nope" in "nope()"; known: signal_observed, artifact_exists, tool_observed, evidence_met, evidence_observed, user_approval, turn_count, state_eq',
    );
    expect(error.details.issues).toEqual([
      expect.objectContaining({ file: 'review.md', function: 'review', field: 'gate' }),
    ]);
  });

  it.each([
    [
      'loadFunctions',
      () => loadFunctions(dir, { onWarnings: () => {} } as never),
      '"onWarnings" (did you mean "onWarning"?); known: conditions, onWarning',
    ],
    [
      'loadFunctions',
      () => loadFunctions(dir, { constructor: 1 } as never),
      '"constructor"; known: conditions, onWarning',
    ],
    [
      'parseFunctionMarkdown',
      async () => parseFunctionMarkdown('---\nname: a\n---\n', { body: 'x' } as never),
      '"body"; known: conditions, source, onWarning',
    ],
  ])('%s refuses an unknown option, listing the known ones', async (name, run, named) => {
    const error = await rejectionOf(run);
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe(`${name} options: unknown option ${named}`);
  });

  it('warns about unknown keys with the file name', async () => {
    await writeFile(join(dir, 'a.md'), '---\nname: a\nowner: me\n---\n');
    const warnings: string[] = [];
    const [definition] = await loadFunctions(dir, { onWarning: (w) => warnings.push(w) });
    expect(definition?.extra).toEqual({ owner: 'me' });
    expect(warnings).toEqual([
      `${join(dir, 'a.md')}: function a: unknown key "owner" is kept but ignored`,
    ]);
  });

  it('refuses a directory that cannot be read', async () => {
    const error = await rejectionOf(loadFunctions(join(dir, 'missing')));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('missing');
  });

  it('splits frontmatter with CRLF and a BOM, and rejects text without it', () => {
    expect(splitFrontmatter('\uFEFF---\r\nname: a\r\n---\r\nbody')).toEqual({
      frontmatter: 'name: a',
      body: 'body',
    });
    expect(splitFrontmatter('---\nname: a\n---')).toEqual({ frontmatter: 'name: a', body: '' });
    expect(splitFrontmatter('name: a')).toBeUndefined();
  });

  it('parseFunctionMarkdown reads one definition from text, as loadFunctions reads a file', () => {
    const definition = parseFunctionMarkdown(
      '---\nname: review\ngate: all(signal_observed(answer), artifact_exists(设计文档))\n---\n\nCheck it.\n',
      { source: 'review.md' },
    );
    expect(definition).toMatchObject({ name: 'review', body: 'Check it.\n', source: 'review.md' });
    expect(definition.gate?.kind).toBe('all');
    for (const [text, named] of [
      ['name: a', '(frontmatter): expected a YAML frontmatter block'],
      ['---\nname: [a\n---\n', '(frontmatter): invalid YAML: '],
      ['---\nname: A\n---\n', 'name: must be a kebab-case name'],
    ] as const) {
      const error = errorOf(() => parseFunctionMarkdown(text));
      expect(error.code).toBe('invalid_function_definition');
      expect(error.message).toContain(named);
    }
  });

  it('YAML warnings go to onWarning with the definition’s own, not to the process', async () => {
    const warnings: string[] = [];
    const emitted: string[] = [];
    const listener = (warning: Error) => emitted.push(warning.message);
    process.on('warning', listener);
    try {
      parseFunctionMarkdown('---\nname: a\nnote: !custom x\n---\n', {
        source: 'a.md',
        onWarning: (warning) => warnings.push(warning),
      });
      // process.emitWarning delivers on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listener);
    }
    expect(warnings).toEqual([
      'a.md: YAML: Unresolved tag: !custom at line 3, column 7',
      'a.md: function a: unknown key "note" is kept but ignored',
    ]);
    expect(emitted).toEqual([]);
  });
});
