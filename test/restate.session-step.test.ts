// The session step engine without a Restate server: what a step refuses, and how.
import { describe, expect, it } from 'vitest';
import { defineFunction, RoleboxError } from '../src/index.js';
import { EMPTY_SESSION_STATE, SessionStepEngine } from '../src/restate/session-step.js';
import { seededIdSource } from '../src/testing/index.js';
import { rejectionOf } from './support/errors.js';

const FUNCTIONS = [defineFunction({ name: 'approval' })];

describe('a session step on an endpoint without a worker service', () => {
  it('refuses startLoop with no_dispatcher, advising the Restate fix, not the embedded one (issue 27 item 20)', async () => {
    const engine = new SessionStepEngine({ functions: FUNCTIONS }, false);
    const opened = await engine.run({
      sessionId: 's1',
      state: EMPTY_SESSION_STATE,
      now: 1_000,
      ids: seededIdSource(1),
      open: {},
    });
    const error = await rejectionOf(
      engine.run({
        sessionId: 's1',
        state: opened.state,
        now: 2_000,
        ids: seededIdSource(2),
        command: (session) => session.startLoop('|loop:2| write a haiku'),
      }),
    );
    expect(error).toBeInstanceOf(RoleboxError);
    expect(error.code).toBe('no_dispatcher');
    expect(error.message).toContain('serveRoleboxOnRestate({ workers:');
    expect(error.message).toContain('--worker');
    expect(error.message).not.toContain('createRolebox');
  });

  it('passes every other refusal through as it is', async () => {
    const engine = new SessionStepEngine({ functions: FUNCTIONS }, false);
    const opened = await engine.run({
      sessionId: 's1',
      state: EMPTY_SESSION_STATE,
      now: 1_000,
      ids: seededIdSource(1),
      open: {},
    });
    const error = await rejectionOf(
      engine.run({
        sessionId: 's1',
        state: opened.state,
        now: 2_000,
        ids: seededIdSource(2),
        command: (session) => session.activate('nobody'),
      }),
    );
    expect(error.code).toBe('unknown_function');
    expect(error.message).toContain('"nobody"');
  });
});
