// The inspector page's effects panel (inspector/page/effects.js) on its own: the rows it
// draws from a session's context, and that an actor without an outbox gets none.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: the page's modules are plain JavaScript without type declarations.
import { effectRows } from '../inspector/page/effects.js';

describe("the inspector page's effects panel", () => {
  it('draws one row per pending effect with its status, attempts, last error and next attempt', () => {
    const context = {
      pendingEffects: [
        {
          id: 'S:e1',
          effect: { id: 'S:e1', type: 'invoke_main_agent', reason: 'input' },
          status: 'pending',
          attempts: 2,
          lastError: 'model down',
          nextAttemptAt: 61_000,
        },
        {
          id: 'S:e2',
          effect: { id: 'S:e2', type: 'run_worker', workerId: 'poet', decisionId: 'd1' },
          status: 'running',
          attempts: 1,
        },
      ],
    };
    expect(effectRows(context)).toEqual([
      {
        id: 'S:e1',
        type: 'invoke_main_agent',
        status: 'pending',
        attempts: 2,
        lastError: 'model down',
        nextAttemptAt: '1970-01-01T00:01:01.000Z',
      },
      {
        id: 'S:e2',
        type: 'run_worker',
        status: 'running',
        attempts: 1,
        lastError: '',
        nextAttemptAt: '',
      },
    ]);
    expect(effectRows({ pendingEffects: [] })).toEqual([]);
  });

  it('has no rows for an actor without an outbox, and does not break on an odd entry', () => {
    expect(effectRows(undefined)).toBeUndefined();
    expect(effectRows({ round: 1 })).toBeUndefined();
    expect(effectRows({ pendingEffects: 'none' })).toBeUndefined();
    expect(
      effectRows({ pendingEffects: [null, { attempts: 'x', nextAttemptAt: 'soon' }] }),
    ).toEqual([
      { id: '?', type: '?', status: '?', attempts: 0, lastError: '', nextAttemptAt: '' },
      { id: '?', type: '?', status: '?', attempts: 0, lastError: '', nextAttemptAt: '' },
    ]);
  });
});
