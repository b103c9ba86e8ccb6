import { describe, expect, it } from 'vitest';
import type { RuntimeEvent } from '../src/index.js';
import { errorOf } from './support/errors.js';
import { follow, ROUTES, sessionHarness, withId } from './support/sessions.js';

const running = ROUTES.running as RuntimeEvent[];

describe('the tool-loop burst (SPEC §4.3)', () => {
  it('allows exactly 12 loop-tool calls between user actions; the 13th waits for the user', async () => {
    const h = await sessionHarness();
    follow(h, running);
    for (let call = 1; call <= 12; call++) {
      expect(h.session.toolCall({ name: 'read_blackboard', kind: 'loop' })).toEqual({
        allowed: true,
        burst: call,
      });
    }
    expect(h.where()).toBe('running');
    const thirteenth = h.session.toolCall({ name: 'list_workers', kind: 'loop' });
    const message =
      'tool-loop burst limit reached: 12 loop-tool calls since the last user action; waiting for the user';
    expect(thirteenth).toEqual({ allowed: false, reason: 'burst_limit', message });
    expect(h.session.view()).toMatchObject({
      phase: 'waiting_user',
      waitingReason: { kind: 'input', message },
    });
    expect(h.effects().at(-1)).toEqual(withId({ type: 'emit_message', message }));
  });

  it('a user action resets the count', async () => {
    const h = await sessionHarness();
    follow(h, running);
    for (let call = 0; call < 13; call++)
      h.session.toolCall({ name: 'read_blackboard', kind: 'loop' });
    expect(h.where()).toBe('waiting_user.input');
    h.session.send({ type: 'user_submitted_input', text: 'carry on' });
    expect(h.session.view().toolLoopBurstCount).toBe(0);
    for (let call = 1; call <= 12; call++)
      expect(h.session.toolCall({ name: 'read_blackboard', kind: 'loop' }).allowed).toBe(true);
    expect(h.session.toolCall({ name: 'read_blackboard', kind: 'loop' }).allowed).toBe(false);
  });

  it('boundary tools do not count, and the limit is configurable', async () => {
    const h = await sessionHarness({ limits: { maxToolBurst: 3 } });
    follow(h, running);
    for (let call = 0; call < 5; call++)
      expect(h.session.toolCall({ name: 'ask_user', kind: 'boundary' })).toEqual({
        allowed: true,
        burst: 0,
      });
    for (let call = 1; call <= 3; call++)
      expect(h.session.toolCall({ name: 'list_artifacts', kind: 'loop' })).toEqual({
        allowed: true,
        burst: call,
      });
    expect(h.session.toolCall({ name: 'list_artifacts', kind: 'loop' }).allowed).toBe(false);
  });

  it('refuses tools while a worker is in flight (the main agent is paused), changing nothing', async () => {
    const h = await sessionHarness();
    follow(h, running);
    h.session.send({
      type: 'worker_started',
      workerId: 'writer',
      acceptanceMode: 'user_confirmed',
    });
    const before = h.persisted();
    for (const kind of ['loop', 'boundary'] as const) {
      const error = errorOf(() => h.session.toolCall({ name: 'read_blackboard', kind }));
      expect(error.code).toBe('tool_not_allowed');
      expect(error.message).toContain('worker writer is running');
    }
    expect(h.persisted()).toBe(before);
  });

  it.each(['idle', 'waiting_user.input', 'waiting_user.review_artifact', 'done', 'error'])(
    'refuses tools in %s, changing nothing',
    async (state) => {
      const h = await sessionHarness();
      follow(h, ROUTES[state] as RuntimeEvent[]);
      const before = h.persisted();
      const error = errorOf(() => h.session.toolCall({ name: 'read_blackboard', kind: 'loop' }));
      expect(error.code).toBe('tool_not_allowed');
      expect(error.message).toContain(`the session is ${state.split('.')[0]}`);
      expect(h.persisted()).toBe(before);
    },
  );

  it('refuses malformed calls', async () => {
    const h = await sessionHarness();
    follow(h, running);
    expect(errorOf(() => h.session.toolCall({ name: 'read blackboard', kind: 'loop' })).code).toBe(
      'invalid_argument',
    );
    expect(
      errorOf(() => h.session.toolCall({ name: 'read', kind: 'sideways' as never })).code,
    ).toBe('invalid_argument');
    expect(errorOf(() => h.session.toolCall(null as never)).code).toBe('invalid_argument');
  });

  it('reports allowed tool calls to the functions (tool_observed)', async () => {
    const h = await sessionHarness({
      functions: [{ name: 'reader', continue_until: 'tool_observed(read_file)' }],
    });
    follow(h, running);
    h.session.activate('reader');
    h.session.toolCall({ name: 'read_file', kind: 'loop' });
    expect(h.session.idle().completed).toEqual(['reader']);
  });
});

describe('agent signals meet the session', () => {
  it('a pausing signal while running, with no function to handle it, waits for the user with its reason', async () => {
    const h = await sessionHarness();
    follow(h, running);
    const receipt = h.session.tool(
      '|signal| type=need_approval, payload={"reason": "deploys to production"}',
    );
    expect(receipt.text).toBe('signal: need_approval acknowledged (no active functions)');
    expect(h.session.view()).toMatchObject({
      phase: 'waiting_user',
      waitingReason: { kind: 'input', message: 'deploys to production' },
    });
    expect(h.effects().at(-1)).toEqual(
      withId({ type: 'emit_message', message: 'deploys to production' }),
    );
    expect(h.session.send({ type: 'user_submitted_input', text: 'approved' }).phase).toBe(
      'running',
    );
  });

  it('without a reason, the message names the signal', async () => {
    const h = await sessionHarness();
    follow(h, running);
    h.session.signal({ type: 'blocked' });
    expect(h.session.view().waitingReason).toEqual({
      kind: 'input',
      message: 'the agent signalled blocked',
    });
  });

  it('a function FSM that records it handles it: the session keeps running, the function gates', async () => {
    const h = await sessionHarness({
      functions: [{ name: 'approval', gate: 'signal_observed(answer)' }],
    });
    follow(h, running);
    h.session.activate('approval');
    h.session.signal({ type: 'need_approval', payload: { reason: 'prod' } });
    expect(h.where()).toBe('running');
    expect(h.session.view().functions[0]?.phase).toBe('gated');
  });

  it('other signals, and pausing signals outside running, leave the phase alone', async () => {
    const h = await sessionHarness();
    follow(h, running);
    for (const type of ['answer', 'progress', 'handoff', 'escalate', 'revise_needed'] as const)
      h.session.signal({ type });
    expect(h.where()).toBe('running');
    const waiting = await sessionHarness();
    follow(waiting, ROUTES['waiting_user.review_artifact'] as RuntimeEvent[]);
    waiting.session.signal({ type: 'need_clarification' });
    expect(waiting.where()).toBe('waiting_user.review_artifact');
  });
});
