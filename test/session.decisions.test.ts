import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { FunctionContext } from '../src/function/machine-types.js';
import { functionPhaseOf } from '../src/function/phase.js';
import { planActivation, planDeactivation } from '../src/session/activation.js';
import type { ArtifactRecord, ArtifactStatus } from '../src/session/artifact.js';
import {
  type ArtifactStoreContext,
  applyArtifactStatus,
  applyArtifactWrite,
  artifactStoreLogic,
  EMPTY_ARTIFACT_STORE,
  nextArtifactId,
} from '../src/session/artifact-store.js';
import { factsOf } from '../src/session/function-facts.js';
import { answerIdleCycle, beginIdleCycle, decideIdle } from '../src/session/idle-cycle.js';
import type { IdleCycle, RetiredFunction } from '../src/session/machine-types.js';
import { childSnapshot } from '../src/system/child-snapshot.js';
import { fuzzRuns } from './support/fuzz.js';

/** A function context as a snapshot would hold it (only `name` and `updatedAt` matter here). */
function fnContext(name: string, updatedAt = 5): FunctionContext {
  return {
    sessionId: 's',
    name,
    kv: {},
    evidenceObserved: {},
    toolsObserved: [],
    activatedAtTurn: 0,
    activatedAt: 1,
    updatedAt,
    facts: { turn: 0, userMessageInTurn: false, artifacts: [] },
    continuations: 0,
    cooldownUntilTurn: 0,
    transitionsHeld: [],
    version: 0,
  };
}

function artifact(id: string, name: string, status: ArtifactStatus): ArtifactRecord {
  return { id, name, status, createdAt: 0, updatedAt: 0 };
}

function idleCycle(overrides: Partial<IdleCycle> = {}): IdleCycle {
  return {
    cycle: 1,
    awaiting: [],
    continuing: [],
    completed: [],
    gated: [],
    blocked: [],
    ...overrides,
  };
}

describe('the artifact id of a write (one rule for the session and its store)', () => {
  it('a new name takes the next id of the sequence', () => {
    expect(nextArtifactId(EMPTY_ARTIFACT_STORE, 'report')).toBe('art-1');
  });

  it('a draft is edited in place and keeps its id; a reviewed version is superseded by a new id', () => {
    const drafted = applyArtifactWrite(EMPTY_ARTIFACT_STORE, { name: 'report', at: 1 });
    expect(nextArtifactId(drafted, 'report')).toBe('art-1');
    expect(nextArtifactId(drafted, 'other')).toBe('art-2');
    const underReview = applyArtifactStatus(drafted, {
      id: 'art-1',
      status: 'under_review',
      at: 2,
    });
    expect(nextArtifactId(underReview, 'report')).toBe('art-2');
  });

  it('whatever the history, the id announced before a write is the id the store gives it', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('write' as const), name: fc.constantFrom('a', 'b', 'c') }),
      fc.record({
        kind: fc.constant('status' as const),
        seq: fc.integer({ min: 1, max: 8 }),
        status: fc.constantFrom('under_review', 'accepted', 'rejected', 'superseded' as const),
      }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 20 }), (steps) => {
        let store: ArtifactStoreContext = EMPTY_ARTIFACT_STORE;
        steps.forEach((change, at) => {
          if (change.kind === 'status') {
            store = applyArtifactStatus(store, {
              id: `art-${change.seq}`,
              status: change.status,
              at,
            });
            return;
          }
          const announced = nextArtifactId(store, change.name);
          store = applyArtifactWrite(store, { name: change.name, content: `v${at}`, at });
          const written = store.artifacts.find(
            (artifact) => artifact.name === change.name && artifact.status === 'drafted',
          );
          expect(written?.id).toBe(announced);
          expect(written?.content).toBe(`v${at}`);
        });
      }),
      { numRuns: fuzzRuns(300) },
    );
  });
});

describe('the facts a function is told', () => {
  it('carry the turn, the user message flag and each artifact name once, first written first', () => {
    const artifacts = [
      artifact('art-1', 'plan', 'superseded'),
      artifact('art-2', 'report', 'drafted'),
      artifact('art-3', 'plan', 'drafted'),
    ];
    expect(factsOf({ turn: 3, userMessageInTurn: true }, artifacts)).toEqual({
      turn: 3,
      userMessageInTurn: true,
      artifacts: ['plan', 'report'],
    });
  });

  it('include a name being written in the same step, once', () => {
    const context = { turn: 0, userMessageInTurn: false };
    expect(factsOf(context, [], 'notes').artifacts).toEqual(['notes']);
    const report = artifact('art-1', 'report', 'drafted');
    expect(factsOf(context, [report], 'report').artifacts).toEqual(['report']);
  });
});

describe('activation plan', () => {
  it('spawns the names that are not live, in order and once, and brings retired ones back', () => {
    const retired: RetiredFunction = {
      phase: 'complete',
      reason: 'completed',
      at: 3,
      context: fnContext('b'),
    };
    const plan = planActivation({ liveFunctions: ['a'], retiredFunctions: { b: retired } }, [
      'a',
      'b',
      'c',
      'b',
    ]);
    expect(plan).toEqual({
      spawn: ['b', 'c'],
      liveFunctions: ['a', 'b', 'c'],
      retiredFunctions: {},
    });
  });

  it('changes nothing when every name is live already', () => {
    const context = { liveFunctions: ['a'], retiredFunctions: {} };
    const plan = planActivation(context, ['a']);
    expect(plan.spawn).toEqual([]);
    expect(plan.liveFunctions).toBe(context.liveFunctions);
    expect(plan.retiredFunctions).toBe(context.retiredFunctions);
  });
});

describe('deactivation plan', () => {
  it('stops the live names, retires each with its last state and phase, ignores the others', () => {
    const plan = planDeactivation(
      { liveFunctions: ['a', 'b', 'c'], retiredFunctions: {}, idle: null },
      ['c', 'x', 'a', 'c'],
      {
        a: { value: 'gated', context: fnContext('a') },
        c: { value: 'active', context: fnContext('c') },
      },
      9,
    );
    expect(plan.stop).toEqual(['c', 'a']);
    expect(plan.liveFunctions).toEqual(['b']);
    expect(plan.retiredFunctions).toEqual({
      a: { phase: 'gated', reason: 'deactivated', at: 9, context: fnContext('a') },
      c: { phase: 'active', reason: 'deactivated', at: 9, context: fnContext('c') },
    });
    expect(plan.idle).toBeNull();
    expect(plan.settle).toBe(false);
  });

  it('a function whose actor is gone is stopped without a record; an own-key lookup only', () => {
    const plan = planDeactivation(
      { liveFunctions: ['constructor'], retiredFunctions: {}, idle: null },
      ['constructor'],
      {},
      1,
    );
    expect(plan.stop).toEqual(['constructor']);
    expect(plan.retiredFunctions).toEqual({});
  });

  it('stopping the last functions an idle cycle waits for settles it; others leave it waiting', () => {
    const waiting = idleCycle({ awaiting: ['a', 'b'], continuing: ['c'] });
    const context = { liveFunctions: ['a', 'b', 'c'], retiredFunctions: {}, idle: waiting };
    const one = planDeactivation(context, ['a'], {}, 2);
    expect(one.idle).toEqual({ ...waiting, awaiting: ['b'] });
    expect(one.settle).toBe(false);
    const both = planDeactivation(context, ['a', 'b'], {}, 2);
    expect(both.idle).toEqual({ ...waiting, awaiting: [] });
    expect(both.settle).toBe(true);
  });

  it('an idle cycle that waited for nobody is not settled twice', () => {
    const settled = idleCycle({ awaiting: [] });
    const plan = planDeactivation(
      { liveFunctions: ['a'], retiredFunctions: {}, idle: settled },
      ['a'],
      {},
      2,
    );
    expect(plan.settle).toBe(false);
  });

  it('changes nothing when no name is live', () => {
    const context = {
      liveFunctions: ['a'],
      retiredFunctions: {},
      idle: idleCycle({ awaiting: ['a'] }),
    };
    const plan = planDeactivation(context, ['b'], {}, 2);
    expect(plan).toEqual({ ...context, stop: [], settle: false });
    expect(plan.idle).toBe(context.idle);
  });

  it('reads a phase from a state value, active for anything else', () => {
    expect(['active', 'gated', 'complete', { odd: 1 }, undefined].map(functionPhaseOf)).toEqual([
      'active',
      'gated',
      'complete',
      'active',
      'active',
    ]);
  });
});

describe('idle cycles', () => {
  it('an idle ends the turn and waits for every live function', () => {
    expect(beginIdleCycle({ turn: 2, idleCycle: 4, liveFunctions: ['a', 'b'] })).toEqual({
      turn: 3,
      userMessageInTurn: false,
      idleCycle: 5,
      idle: idleCycle({ cycle: 5, awaiting: ['a', 'b'] }),
    });
  });

  it('records each awaited answer under its outcome', () => {
    let idle: IdleCycle | undefined = idleCycle({ awaiting: ['a', 'b', 'c', 'd', 'e'] });
    const outcomes = [
      ['a', { kind: 'continue' }],
      ['b', { kind: 'completed' }],
      ['c', { kind: 'gated' }],
      ['d', { kind: 'blocked', reason: 'cooldown' }],
      ['e', { kind: 'nothing_to_do' }],
    ] as const;
    for (const [name, outcome] of outcomes)
      idle = answerIdleCycle(idle ?? null, { function: name, cycle: 1, outcome });
    expect(idle).toEqual(
      idleCycle({
        continuing: ['a'],
        completed: ['b'],
        gated: ['c'],
        blocked: [{ function: 'd', reason: 'cooldown' }],
      }),
    );
  });

  it('ignores answers it does not await: no cycle, another cycle, twice, or not asked', () => {
    const idle = idleCycle({ cycle: 2, awaiting: ['a'] });
    const answer = { function: 'a', cycle: 2, outcome: { kind: 'continue' } } as const;
    expect(answerIdleCycle(null, answer)).toBeUndefined();
    expect(answerIdleCycle(idle, { ...answer, cycle: 1 })).toBeUndefined();
    expect(answerIdleCycle(idle, { ...answer, function: 'b' })).toBeUndefined();
    const answered = answerIdleCycle(idle, answer) as IdleCycle;
    expect(answerIdleCycle(answered, answer)).toBeUndefined();
  });

  it('grants one continuation for every function that asked, below the cap', () => {
    const idle = idleCycle({
      continuing: ['a', 'b'],
      completed: ['c'],
      gated: ['d'],
      blocked: [{ function: 'e', reason: 'cooldown' }],
    });
    expect(decideIdle(idle, { turn: 4, continuations: 2 }, 3)).toEqual({
      continuations: 3,
      report: {
        turn: 4,
        continued: true,
        continuing: ['a', 'b'],
        completed: ['c'],
        blocked: [{ function: 'e', reason: 'cooldown' }],
        gated: ['d'],
      },
    });
  });

  it('at the cap, every function that asked is blocked by the global cap instead', () => {
    const idle = idleCycle({
      continuing: ['a', 'b'],
      blocked: [{ function: 'e', reason: 'cooldown' }],
    });
    expect(decideIdle(idle, { turn: 4, continuations: 3 }, 3)).toEqual({
      continuations: 3,
      report: {
        turn: 4,
        continued: false,
        continuing: [],
        completed: [],
        blocked: [
          { function: 'e', reason: 'cooldown' },
          { function: 'a', reason: 'global_cap' },
          { function: 'b', reason: 'global_cap' },
        ],
        gated: [],
      },
    });
  });

  it('nobody asking is no continuation, whatever the count', () => {
    const decision = decideIdle(idleCycle({ completed: ['a'] }), { turn: 1, continuations: 9 }, 3);
    expect(decision.continuations).toBe(9);
    expect(decision.report).toMatchObject({ continued: false, continuing: [], blocked: [] });
  });
});

describe('reading a child snapshot', () => {
  it('gives the typed snapshot of a child, and undefined for an id with no child', () => {
    const store = createActor(artifactStoreLogic).start();
    const parent = { getSnapshot: () => ({ children: { artifacts: store } }) };
    expect(childSnapshot<typeof artifactStoreLogic>(parent, 'artifacts')?.context).toEqual(
      EMPTY_ARTIFACT_STORE,
    );
    expect(childSnapshot<typeof artifactStoreLogic>(parent, 'missing')).toBeUndefined();
    store.stop();
  });
});
