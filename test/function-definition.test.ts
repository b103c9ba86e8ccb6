import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { splitFrontmatter } from '../src/function/markdown.js';
import {
  ConditionRegistry,
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
    expect(error.message).toContain('duplicate function name (got "b")');
    expect(error.message).toContain(
      'transitions.0.activate.1: function a: transition to undefined function "ghost"',
    );
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
      '6-dup.md:name',
      '5-dangling.md:transitions.0.activate.0',
    ]);
    expect(error.message).toContain('signal_observed(aproval)');
    expect(error.message).toContain('invalid YAML');
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
      ['---\nname: [a\n---\n', '(frontmatter): invalid YAML at line'],
      ['---\nname: A\n---\n', 'name: must be kebab-case'],
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
      'a.md: YAML: Unresolved tag: !custom at line 2, column 7:',
      'a.md: function a: unknown key "note" is kept but ignored',
    ]);
    expect(emitted).toEqual([]);
  });
});
