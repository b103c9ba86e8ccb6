// The effect service's checks, without a server: a bad name or handler is refused when it
// is made; a body that is no effect request or report is a terminal invalid_argument.
import * as restate from '@restatedev/restate-sdk';
import { describe, expect, it } from 'vitest';
import { RoleboxError } from '../src/index.js';
import { roleboxEffectService } from '../src/restate/effect-service.js';
import {
  effectAttemptFailureOf,
  effectAttemptStartOf,
  effectReportOf,
  effectRequestOf,
} from '../src/restate/effect-wire.js';
import { errorOf } from './support/errors.js';

/** What `fn` throws, whatever it is. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

describe('roleboxEffectService', () => {
  it('refuses a bad name, handlers that are not an object, an unknown effect type and a handler that is no function', () => {
    for (const [make, culprit] of [
      [() => roleboxEffectService('', {}), '""'],
      [() => roleboxEffectService('fx', null as never), 'null'],
      [() => roleboxEffectService('fx', { invoke_agent: async () => [] } as never), 'invoke_agent'],
      [() => roleboxEffectService('fx', { run_worker: 'go' } as never), '"go"'],
      [() => roleboxEffectService('fx', { toString: async () => [] } as never), 'toString'],
    ] as const) {
      const error = errorOf(make);
      expect(error).toBeInstanceOf(RoleboxError);
      expect((error as RoleboxError).code).toBe('invalid_argument');
      expect((error as RoleboxError).message).toContain(culprit);
    }
    expect(roleboxEffectService('fx', { run_worker: async () => [] }).name).toBe('fx');
  });

  it('reads an effect request and an effect report, and refuses anything else as terminal', () => {
    const request = {
      effect: { id: 'S:e1', type: 'emit_message', message: 'hi' },
      session: { object: 'rolebox-session', key: 'S' },
    };
    expect(effectRequestOf(request)).toEqual(request);
    expect(effectReportOf({ effectId: 'S:e1', events: [] })).toEqual({
      effectId: 'S:e1',
      events: [],
    });
    for (const bad of [
      null,
      { ...request, effect: { id: 'S:e1', type: 'dance' } },
      { ...request, session: { object: '', key: 'S' } },
    ]) {
      const error = thrown(() => effectRequestOf(bad));
      expect(error).toBeInstanceOf(restate.TerminalError);
      expect((error as Error).message).toMatch(/^not an effect request: /);
    }
    for (const bad of [{}, { effectId: 'S:e1', events: 'x' }, { effectId: 'S:e1', error: '' }]) {
      const error = thrown(() => effectReportOf(bad));
      expect(error).toBeInstanceOf(restate.TerminalError);
      expect((error as Error).message).toMatch(/^not an effect report: /);
    }
  });

  it('reads the reports of an attempt started and failed, and refuses anything else as terminal, naming it', () => {
    expect(effectAttemptStartOf({ effectId: 'S:e1' })).toEqual({ effectId: 'S:e1' });
    const failure = { effectId: 'S:e1', attempt: 2, error: 'model down' };
    expect(effectAttemptFailureOf(failure)).toEqual(failure);
    expect(effectAttemptFailureOf({ ...failure, final: true })).toEqual({
      ...failure,
      final: true,
    });
    for (const [bad, named] of [
      [null, 'null'],
      [{}, '{}'],
      [{ effectId: '' }, '""'],
      [['S:e1'], 'S:e1'],
    ] as const) {
      const error = thrown(() => effectAttemptStartOf(bad));
      expect(error).toBeInstanceOf(restate.TerminalError);
      expect((error as Error).message).toMatch(/^not an effect attempt start: /);
      expect((error as Error).message).toContain(named);
    }
    for (const [bad, named] of [
      [{ ...failure, attempt: 0 }, '"attempt":0'],
      [{ ...failure, attempt: 1.5 }, '1.5'],
      [{ ...failure, attempt: '2' }, '"2"'],
      [{ ...failure, error: '' }, '"error":""'],
      [{ ...failure, final: 'yes' }, '"yes"'],
      [{ attempt: 1, error: 'x' }, '"error":"x"'],
    ] as const) {
      const error = thrown(() => effectAttemptFailureOf(bad));
      expect(error).toBeInstanceOf(restate.TerminalError);
      expect((error as Error).message).toMatch(/^not an effect attempt failure: /);
      expect((error as Error).message).toContain(named);
    }
  });
});
