import { describe, expect, it } from 'vitest';
import { UnsavedResults } from '../src/runtime/unsaved-results.js';
import type { PendingEffect, RuntimeEvent } from '../src/session/runtime-types.js';

// A handler's result is saved before it is applied by patching it into the effect's entry of
// the session's persisted snapshot (src/runtime/unsaved-results.ts). The crash tests
// (effects.crash, writing-agent.crash) show a restart applies it; these pin the patch.

const entry = (id: string, extra: Partial<PendingEffect> = {}): PendingEffect => ({
  id,
  effect: { id, type: 'run_worker', workerId: 'poet', decisionId: 'd1' } as PendingEffect['effect'],
  status: 'pending',
  attempts: 0,
  ...extra,
});
const events: RuntimeEvent[] = [{ type: 'worker_started', workerId: 'poet' } as RuntimeEvent];
const persisted = (pendingEffects: PendingEffect[]) => ({
  value: 'running',
  context: { sessionId: 'S', pendingEffects },
});

describe('UnsavedResults', () => {
  it('writes a kept result into its pending entry, counting the attempt no step counted', () => {
    const results = new UnsavedResults();
    results.keep('S', 'S:e1', { events, attempt: 1 });
    const before = persisted([entry('S:e1'), entry('S:e2')]);
    const after = results.patch('S', before);
    expect(after.context.pendingEffects[0]).toMatchObject({
      status: 'running',
      attempts: 1,
      result: events,
    });
    expect(after.context.pendingEffects[1]).toEqual(entry('S:e2'));
    // The snapshot given is not changed (it may be the live one's).
    expect(before.context.pendingEffects[0]).toEqual(entry('S:e1'));
  });

  it('leaves an attempt already counted, a failed entry, a recorded result and other sessions alone', () => {
    const results = new UnsavedResults();
    results.keep('S', 'S:e1', { events });
    results.keep('S', 'S:e2', { events, attempt: 1 });
    results.keep('S', 'S:e3', { events, attempt: 1 });
    const recorded: RuntimeEvent[] = [
      { type: 'worker_completed', artifactId: 'a' } as RuntimeEvent,
    ];
    const after = results.patch(
      'S',
      persisted([
        entry('S:e1', { status: 'running', attempts: 2 }),
        entry('S:e2', { status: 'failed', attempts: 3, lastError: 'x' }),
        entry('S:e3', { result: recorded }),
      ]),
    );
    expect(after.context.pendingEffects).toEqual([
      entry('S:e1', { status: 'running', attempts: 2, result: events }),
      entry('S:e2', { status: 'failed', attempts: 3, lastError: 'x' }),
      entry('S:e3', { result: recorded }),
    ]);
    const other = persisted([entry('T:e1')]);
    expect(results.patch('T', other)).toBe(other);
  });

  it('forgets a dropped result', () => {
    const results = new UnsavedResults();
    results.keep('S', 'S:e1', { events });
    results.drop('S', 'S:e1');
    const snapshot = persisted([entry('S:e1')]);
    expect(results.patch('S', snapshot)).toBe(snapshot);
    expect(results.patch('S', undefined)).toBeUndefined();
  });
});
