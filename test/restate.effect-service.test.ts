// The effect service's checks, without a server: a bad name or handler is refused when it
// is made; a body that is no effect request or report is a terminal invalid_argument.
import * as restate from '@restatedev/restate-sdk';
import { describe, expect, it } from 'vitest';
import { RoleboxError } from '../src/index.js';
import {
  effectReportOf,
  effectRequestOf,
  roleboxEffectService,
} from '../src/restate/effect-service.js';
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
});
