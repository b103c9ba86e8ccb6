import { describe, expect, it } from 'vitest';
import { evaluateCondition } from '../src/condition/evaluate.js';
import {
  type ConditionEnv,
  ConditionRegistry,
  defineFunction,
  formatCondition,
  MAX_CONDITION_DEPTH,
  parseCondition,
  registerCondition,
} from '../src/index.js';
import { LEDGER_KEY } from '../src/signal/ledger.js';
import { errorOf } from './support/errors.js';

const baseEnv: ConditionEnv = {
  kv: {},
  evidenceObserved: {},
  toolsObserved: [],
  requiresEvidence: [],
  artifacts: [],
  currentTurn: 0,
  activatedAtTurn: 0,
  userMessageInTurn: false,
};

function holds(
  condition: unknown,
  env: Partial<ConditionEnv> = {},
  registry = new ConditionRegistry(),
) {
  return evaluateCondition(parseCondition(condition, registry), { ...baseEnv, ...env }, registry);
}

describe('built-in named conditions', () => {
  it('signal_observed reads the ledger, in the record and the legacy array form', () => {
    expect(holds('signal_observed(answer)', { kv: { [LEDGER_KEY]: { answer: null } } })).toBe(true);
    expect(holds('signal_observed(answer)', { kv: { [LEDGER_KEY]: { escalate: {} } } })).toBe(
      false,
    );
    expect(holds('signal_observed( answer )', { kv: { [LEDGER_KEY]: ['answer'] } })).toBe(true);
    expect(holds('signal_observed(answer)', { kv: { [LEDGER_KEY]: ['blocked'] } })).toBe(false);
    expect(holds('signal_observed(answer)', { kv: {} })).toBe(false);
  });

  it('artifact_exists, tool_observed and evidence_observed', () => {
    expect(holds('artifact_exists(plan)', { artifacts: ['plan'] })).toBe(true);
    expect(holds('artifact_exists(plan)', { artifacts: ['draft'] })).toBe(false);
    expect(holds('tool_observed(write_file)', { toolsObserved: ['read', 'write_file'] })).toBe(
      true,
    );
    expect(holds('tool_observed(write_file)', { toolsObserved: ['read'] })).toBe(false);
    expect(holds('evidence_observed(paused)', { evidenceObserved: { paused: true } })).toBe(true);
    expect(holds('evidence_observed(paused)', { evidenceObserved: { other: true } })).toBe(false);
  });

  it('evidence_met needs every required tag (and holds when none are required)', () => {
    expect(holds('evidence_met()', { requiresEvidence: [] })).toBe(true);
    expect(
      holds('evidence_met()', { requiresEvidence: ['a', 'b'], evidenceObserved: { a: true } }),
    ).toBe(false);
    expect(
      holds('evidence_met', {
        requiresEvidence: ['a', 'b'],
        evidenceObserved: { a: true, b: true },
      }),
    ).toBe(true);
  });

  it('user_approval holds when the user wrote in the current turn', () => {
    expect(holds('user_approval()', { userMessageInTurn: true })).toBe(true);
    expect(holds('user_approval()', { userMessageInTurn: false })).toBe(false);
  });

  it('turn_count(n) counts turns since activation, at the boundary', () => {
    expect(holds('turn_count(2)', { currentTurn: 5, activatedAtTurn: 3 })).toBe(true);
    expect(holds('turn_count(2)', { currentTurn: 4, activatedAtTurn: 3 })).toBe(false);
    expect(holds('turn_count(0)', { currentTurn: 3, activatedAtTurn: 3 })).toBe(true);
  });

  it('state_eq compares String(kv[key]) with the value; a missing key never matches', () => {
    expect(holds('state_eq(stage=review)', { kv: { stage: 'review' } })).toBe(true);
    expect(holds('state_eq( count = 3 )', { kv: { count: 3 } })).toBe(true);
    expect(holds('state_eq(flag=true)', { kv: { flag: true } })).toBe(true);
    expect(holds('state_eq(stage=review)', { kv: { stage: 'draft' } })).toBe(false);
    expect(holds('state_eq(stage=undefined)', { kv: {} })).toBe(false);
    expect(holds('state_eq(expr=a=b)', { kv: { expr: 'a=b' } })).toBe(true);
  });
});

describe('combinations', () => {
  const answered = { kv: { [LEDGER_KEY]: { answer: null } } };

  it('all / any / not, nested', () => {
    expect(
      holds(
        { all: ['signal_observed(answer)', 'artifact_exists(plan)'] },
        { ...answered, artifacts: ['plan'] },
      ),
    ).toBe(true);
    expect(holds({ all: ['signal_observed(answer)', 'artifact_exists(plan)'] }, answered)).toBe(
      false,
    );
    expect(holds({ any: ['signal_observed(escalate)', 'signal_observed(answer)'] }, answered)).toBe(
      true,
    );
    expect(
      holds({ any: ['signal_observed(escalate)', 'signal_observed(blocked)'] }, answered),
    ).toBe(false);
    expect(holds({ not: 'signal_observed(answer)' }, answered)).toBe(false);
    expect(holds({ not: { any: ['signal_observed(escalate)'] } }, answered)).toBe(true);
  });

  it('empty all is true and empty any is false', () => {
    expect(holds({ all: [] })).toBe(true);
    expect(holds({ any: [] })).toBe(false);
  });

  it('formats back to readable text', () => {
    const registry = new ConditionRegistry();
    const ast = parseCondition(
      { all: ['signal_observed(answer)', { not: 'user_approval()' }] },
      registry,
    );
    expect(formatCondition(ast)).toBe('all(signal_observed(answer), not(user_approval()))');
  });
});

describe('combinators written as text', () => {
  const registry = new ConditionRegistry();
  const answered = { kv: { [LEDGER_KEY]: { answer: null } } };

  it('all(…), any(…) and not(…) parse to the same AST as the object form', () => {
    expect(parseCondition('all(signal_observed(answer), not(state_eq(k=a,b)))', registry)).toEqual(
      parseCondition({ all: ['signal_observed(answer)', { not: 'state_eq(k=a,b)' }] }, registry),
    );
    expect(parseCondition('any()', registry)).toEqual({ kind: 'any', of: [] });
    expect(holds('any(signal_observed(escalate), signal_observed(answer))', answered)).toBe(true);
    expect(holds('not(signal_observed(answer))', answered)).toBe(false);
  });

  it('formatCondition reads back to the same AST', () => {
    const ast = parseCondition(
      { any: [{ all: [] }, { not: { any: ['tool_observed(a,b)', 'user_approval()'] } }] },
      registry,
    );
    expect(parseCondition(formatCondition(ast), registry)).toEqual(ast);
  });

  it.each([
    ['all', 'needs its conditions in parentheses'],
    ['not()', 'not takes exactly one condition, got 0'],
    ['not(user_approval(), user_approval())', 'not takes exactly one condition, got 2'],
    ['all(user_approval(),,user_approval())', 'an empty condition'],
    ['any(user_approval(), )', 'an empty condition'],
  ])('%j → condition_syntax', (text, named) => {
    const error = errorOf(() => parseCondition(text, registry));
    expect(error.code).toBe('condition_syntax');
    expect(error.message).toContain(named);
  });

  it('all, any and not cannot be registered as named conditions', () => {
    for (const name of ['all', 'any', 'not'])
      expect(errorOf(() => registry.register(name, () => true)).code).toBe('invalid_argument');
  });
});

describe('nesting depth', () => {
  const registry = new ConditionRegistry();
  const nestedObject = (levels: number): unknown => {
    let condition: unknown = 'user_approval()';
    for (let i = 1; i < levels; i++) condition = { not: condition };
    return condition;
  };
  const nestedText = (levels: number) =>
    `${'not('.repeat(levels - 1)}user_approval()${')'.repeat(levels - 1)}`;

  it(`takes ${MAX_CONDITION_DEPTH} levels and refuses ${MAX_CONDITION_DEPTH + 1}, as object or text`, () => {
    expect(() => parseCondition(nestedObject(MAX_CONDITION_DEPTH), registry)).not.toThrow();
    expect(() => parseCondition(nestedText(MAX_CONDITION_DEPTH), registry)).not.toThrow();
    for (const condition of [
      nestedObject(MAX_CONDITION_DEPTH + 1),
      nestedText(MAX_CONDITION_DEPTH + 1),
    ]) {
      const error = errorOf(() => parseCondition(condition, registry, 'gate'));
      expect(error.code).toBe('condition_syntax');
      expect(error.message).toContain(`nested at most ${MAX_CONDITION_DEPTH} levels deep`);
    }
  });

  it('an 8 000-deep condition is a RoleboxError, not a stack overflow', () => {
    for (const condition of [nestedObject(8_000), nestedText(8_000)])
      expect(errorOf(() => parseCondition(condition, registry)).code).toBe('condition_syntax');
    let wide: unknown = 'user_approval()';
    for (let i = 0; i < 8_000; i++) wide = { all: [wide] };
    expect(errorOf(() => parseCondition(wide, registry)).code).toBe('condition_syntax');
  });

  it('a function definition with one is refused with invalid_function_definition', () => {
    const error = errorOf(() =>
      defineFunction({ name: 'deep', gate: nestedObject(8_000) as never }),
    );
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toContain('conditions may be nested at most 32 levels deep');
  });
});

describe('errors name the text', () => {
  it.each([
    ['signal_observed(answer', 'condition_syntax'],
    ['signal observed', 'condition_syntax'],
    ['', 'condition_syntax'],
    ['state_eq(a=(b)', 'condition_syntax'],
    ['123()', 'condition_syntax'],
    ['no_such_thing(x)', 'unknown_condition'],
    ['signal_observed', 'invalid_condition_argument'],
    ['signal_observed()', 'invalid_condition_argument'],
    ['signal_observed(approve)', 'invalid_condition_argument'],
    ['user_approval(yes)', 'invalid_condition_argument'],
    ['turn_count(two)', 'invalid_condition_argument'],
    ['turn_count(-1)', 'invalid_condition_argument'],
    ['state_eq(stage)', 'invalid_condition_argument'],
  ])('%j → %s', (text, code) => {
    const error = errorOf(() => parseCondition(text, new ConditionRegistry(), 'gate'));
    expect(error.code).toBe(code);
    expect(error.message).toContain(JSON.stringify(text));
    expect(error.message.startsWith('gate:')).toBe(true);
  });

  it.each([
    [42, 'condition_syntax'],
    [null, 'condition_syntax'],
    [['signal_observed(answer)'], 'condition_syntax'],
    [{}, 'condition_syntax'],
    [{ all: ['user_approval()'], any: [] }, 'condition_syntax'],
    [{ either: [] }, 'condition_syntax'],
    [{ all: 'user_approval()' }, 'condition_syntax'],
  ])('object form %j → %s', (condition, code) => {
    expect(errorOf(() => parseCondition(condition, new ConditionRegistry())).code).toBe(code);
  });

  it('names the path of a nested error', () => {
    const error = errorOf(() =>
      parseCondition(
        { all: ['user_approval()', { not: 'nope()' }] },
        new ConditionRegistry(),
        'continue_until',
      ),
    );
    expect(error.code).toBe('unknown_condition');
    expect(error.message).toContain('continue_until.all[1].not');
    expect(error.details).toMatchObject({ where: 'continue_until.all[1].not', text: 'nope()' });
  });
});

describe('registerCondition', () => {
  it('adds a named condition with its own argument rules', () => {
    const registry = new ConditionRegistry();
    registry.register('kv_above', {
      argument: 'required',
      validateArg: (arg) => (/^\w+:\d+$/.test(arg) ? undefined : 'expected key:number'),
      evaluate: (arg, env) => {
        const [key, limit] = (arg as string).split(':');
        return Number(env.kv[key as string]) > Number(limit);
      },
    });
    expect(holds('kv_above(score:3)', { kv: { score: 4 } }, registry)).toBe(true);
    expect(holds('kv_above(score:3)', { kv: { score: 3 } }, registry)).toBe(false);
    expect(errorOf(() => parseCondition('kv_above(score)', registry)).code).toBe(
      'invalid_condition_argument',
    );
  });

  it('accepts a bare function (argument optional)', () => {
    const registry = new ConditionRegistry();
    registry.register('always_true', () => true);
    expect(holds('always_true', {}, registry)).toBe(true);
    expect(holds('always_true(anything)', {}, registry)).toBe(true);
  });

  it('refuses duplicates, built-in names, bad names and non-functions', () => {
    const registry = new ConditionRegistry();
    registry.register('mine', () => true);
    expect(errorOf(() => registry.register('mine', () => false)).code).toBe('duplicate_condition');
    expect(errorOf(() => registry.register('signal_observed', () => false)).code).toBe(
      'duplicate_condition',
    );
    expect(errorOf(() => registry.register('Bad-Name', () => false)).code).toBe('invalid_argument');
    expect(errorOf(() => registry.register('ok_name', 'yes' as never)).code).toBe(
      'invalid_argument',
    );
  });

  it('registers in the process-wide registry used by default', () => {
    registerCondition('test_global_condition', () => true);
    expect(evaluateCondition(parseCondition('test_global_condition'), baseEnv)).toBe(true);
    expect(
      errorOf(() => parseCondition('test_global_condition', new ConditionRegistry())).code,
    ).toBe('unknown_condition');
  });
});
