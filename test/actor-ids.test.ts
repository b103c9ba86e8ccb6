import { describe, expect, it } from 'vitest';
import {
  artifactsActorId,
  functionActorId,
  functionChildId,
  LOOP_CHILD_ID,
  loopActorId,
  parseActorId,
  SYSTEM_ACTOR_ID,
  sessionActorId,
} from '../src/base/actor-ids.js';

describe('actor ids', () => {
  it('parse back what the builders build', () => {
    expect(parseActorId(SYSTEM_ACTOR_ID)).toEqual({ kind: 'system' });
    expect(parseActorId(sessionActorId('S.1'))).toEqual({ kind: 'session', sessionId: 'S.1' });
    expect(parseActorId(functionActorId('S', 'awaiting-approval'))).toEqual({
      kind: 'function',
      sessionId: 'S',
      name: 'awaiting-approval',
    });
    expect(parseActorId(artifactsActorId('S'))).toEqual({ kind: 'artifacts', sessionId: 'S' });
    expect(parseActorId(loopActorId('loop_x1'))).toEqual({ kind: 'loop', loopId: 'loop_x1' });
  });

  it('child ids are local: they name no session or loop, only what the systemId adds to', () => {
    expect(functionChildId('awaiting-approval')).toBe('fn:awaiting-approval');
    expect(LOOP_CHILD_ID).toBe('loop');
    // The systemIds keep the unique part and stay distinct from the child ids.
    expect(functionActorId('S', 'a')).not.toBe(functionChildId('a'));
    expect(loopActorId('loop_x1')).not.toBe(LOOP_CHILD_ID);
  });

  it.each(['', 'session', 'session:', 'fn:S', 'fn:S:', 'fn::name', ':S', 'x:y', 'artifacts'])(
    'refuse %j',
    (text) => {
      expect(parseActorId(text)).toBeUndefined();
    },
  );
});
