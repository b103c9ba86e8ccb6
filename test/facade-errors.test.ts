import { describe, expect, it } from 'vitest';
import { parseToolCallText } from '../src/base/tool-call.js';
import {
  createRolebox,
  type ErrorCode,
  MemorySnapshotStore,
  type SessionHandle,
} from '../src/index.js';
import { errorOf, rejectionOf } from './support/errors.js';
import { startWith } from './support/rolebox.js';

async function scene() {
  const started = await startWith([
    {
      name: 'approval',
      gate: 'signal_observed(answer)',
      continue_until: 'signal_observed(answer)',
    },
    { name: 'worker' },
    { name: 'idle-fn' },
  ]);
  started.session.activate('approval');
  started.session.activate('worker');
  started.session.signal({ type: 'progress', payload: { pct: 10 } });
  return started;
}

type Case = [string, (session: SessionHandle) => unknown, ErrorCode, string];

const cases: Case[] = [
  ['unknown signal type', (s) => s.signal({ type: 'approve' }), 'unknown_signal_type', '"approve"'],
  [
    'signal type of the wrong type',
    (s) => s.signal({ type: 7 as never }),
    'unknown_signal_type',
    '7',
  ],
  [
    'payload that is a string',
    (s) => s.signal({ type: 'answer', payload: 'yes' as never }),
    'invalid_signal_payload',
    '"yes"',
  ],
  [
    'payload that is an array',
    (s) => s.signal({ type: 'answer', payload: [1] as never }),
    'invalid_signal_payload',
    '[1]',
  ],
  [
    'signal arguments that are not an object',
    (s) => s.signal('answer' as never),
    'invalid_argument',
    '"answer"',
  ],
  [
    'malformed |signal| text',
    (s) => s.tool('|signal| type=answer payload={}'),
    'malformed_signal_text',
    'type=answer payload={}',
  ],
  [
    '|signal| with bad JSON',
    (s) => s.tool('|signal| type=answer, payload={oops}'),
    'malformed_signal_text',
    'payload={oops}',
  ],
  [
    '|signal| with an unknown type',
    (s) => s.tool('|signal| type=approve'),
    'unknown_signal_type',
    '"approve"',
  ],
  [
    'tool text without bars',
    (s) => s.tool('signal type=answer'),
    'malformed_tool_text',
    'signal type=answer',
  ],
  ['tool text that is not a string', (s) => s.tool(42 as never), 'malformed_tool_text', '42'],
  [
    'a tool name that is not an identifier',
    (s) => s.observeTool('rm -rf'),
    'invalid_argument',
    '"rm -rf"',
  ],
  ['activate an unknown function', (s) => s.activate('ghost'), 'unknown_function', '"ghost"'],
  ['activate a non-string', (s) => s.activate(3 as never), 'unknown_function', '3'],
  [
    'activate an active function',
    (s) => s.activate('worker'),
    'function_already_active',
    '"worker"',
  ],
  ['deactivate an unknown function', (s) => s.deactivate('ghost'), 'unknown_function', '"ghost"'],
  [
    'deactivate an inactive function',
    (s) => s.deactivate('idle-fn'),
    'function_not_active',
    '"idle-fn"',
  ],
  ['resume an active function', (s) => s.resume('worker'), 'function_not_gated', '"worker"'],
  [
    'resume a function whose gate is closed',
    (s) => s.resume('approval'),
    'gate_closed',
    'signal_observed(answer)',
  ],
  ['resume an inactive function', (s) => s.resume('idle-fn'), 'function_not_active', '"idle-fn"'],
  [
    'setKv on an inactive function',
    (s) => s.setKv('idle-fn', 'k', 1),
    'function_not_active',
    '"idle-fn"',
  ],
  [
    'setKv with a reserved key',
    (s) => s.setKv('worker', '__signals_observed', {}),
    'invalid_argument',
    '"__signals_observed"',
  ],
  [
    'setKv with a value that is not JSON',
    (s) => s.setKv('worker', 'k', () => 1),
    'invalid_argument',
    'k',
  ],
  [
    'message that is not a string',
    (s) => s.message({ text: 'hi' } as never),
    'invalid_argument',
    '{"text":"hi"}',
  ],
  [
    'a loop agent with a NUL byte (it would reach the worker environment)',
    (s) => s.startLoop('|loop:2| x', { agent: 'a\0b' }),
    'invalid_argument',
    '"a\\u0000b"',
  ],
  [
    'a loop agent with a newline',
    (s) => s.startLoop('|loop:2| x', { agent: 'a\nb' }),
    'invalid_argument',
    '"a\\nb"',
  ],
  [
    'a blank loop agent',
    (s) => s.startLoop('|loop:2| x', { agent: '   ' }),
    'invalid_argument',
    '"   "',
  ],
];

describe('bad input to a session is refused and changes nothing', () => {
  it.each(cases)('%s', async (_label, act, code, named) => {
    const { rb, session } = await scene();
    const viewBefore = session.view();
    const systemBefore = JSON.stringify(rb.system.getPersistedSnapshot());
    const error = errorOf(() => act(session));
    expect(error.code).toBe(code);
    expect(error.message).toContain(named);
    expect(session.view()).toEqual(viewBefore);
    expect(JSON.stringify(rb.system.getPersistedSnapshot())).toBe(systemBefore);
  });
});

describe('bad input to the rolebox', () => {
  it('refuses a duplicate session id, and unknown sessions', async () => {
    const { rb, session } = await scene();
    const before = JSON.stringify(rb.system.getPersistedSnapshot());
    const duplicate = await rejectionOf(() => rb.openSession({ id: 'S1' }));
    expect(duplicate.code).toBe('duplicate_session');
    expect(duplicate.message).toContain('"S1"');
    expect(errorOf(() => rb.session('nope')).code).toBe('unknown_session');
    expect(errorOf(() => rb.session('nope')).message).toContain('"nope"');
    expect(JSON.stringify(rb.system.getPersistedSnapshot())).toBe(before);
    session.close();
    expect(errorOf(() => session.view()).code).toBe('unknown_session');
    expect(errorOf(() => session.signal({ type: 'answer' })).code).toBe('unknown_session');
    expect(rb.sessions()).toEqual([]);
  });

  it('two concurrent opens of one new id: one session, the second refused', async () => {
    const rb = createRolebox({ store: new MemorySnapshotStore() });
    await rb.start();
    const results = await Promise.allSettled([
      rb.openSession({ id: 'ticket-42' }),
      rb.openSession({ id: 'ticket-42' }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected']);
    const refused = (results[1] as PromiseRejectedResult).reason;
    expect(refused).toMatchObject({ code: 'duplicate_session' });
    expect(refused.message).toContain('"ticket-42"');
    expect(rb.sessions()).toEqual(['ticket-42']);
    await rb.stop();
  });

  it.each([
    [{ id: '' }, '""'],
    [{ id: 'has space' }, '"has space"'],
    [{ id: 'a:b' }, '"a:b"'],
    [{ id: 5 }, '5'],
    ['S2', '"S2"'],
  ])('refuses session id option %j', async (options, named) => {
    const { rb } = await scene();
    const error = await rejectionOf(() => rb.openSession(options as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain(named);
    expect(rb.sessions()).toEqual(['S1']);
  });

  it('needs start() first and refuses everything after stop()', async () => {
    const rb = createRolebox();
    expect((await rejectionOf(() => rb.openSession())).code).toBe('not_started');
    await rb.start();
    const session = await rb.openSession();
    await rb.stop();
    expect((await rejectionOf(() => rb.openSession())).code).toBe('stopped');
    expect(errorOf(() => session.view()).code).toBe('stopped');
    expect((await rejectionOf(() => rb.start())).code).toBe('stopped');
  });

  it.each([
    [{ functions: 'a' }, 'invalid_argument', '"a"'],
    [{ limits: { continuationsPerSession: -1 } }, 'invalid_argument', 'continuationsPerSession'],
    [{ limits: { continuationCooldowns: { x: 1 } } }, 'invalid_argument', 'continuationCooldowns'],
    [{ limits: { unknownLimit: 1 } }, 'invalid_argument', 'unknownLimit'],
  ])('refuses options %j', (options, code, named) => {
    const error = errorOf(() => createRolebox(options as never));
    expect(error.code).toBe(code);
    expect(error.message).toContain(named);
  });

  it('refuses a handler that is not a function', async () => {
    const { rb } = await scene();
    expect(errorOf(() => rb.on('continue', 'nope' as never)).code).toBe('invalid_argument');
  });
});

describe('host events', () => {
  it('are delivered after the command finished, so handlers can call back in', async () => {
    const { rb, session } = await startWith([
      { name: 'until', continue_until: 'signal_observed(answer)' },
    ]);
    session.activate('until');
    const order: string[] = [];
    rb.on('continue', () => {
      order.push('continue');
      // Re-entrant call from a handler: runs to completion at once.
      order.push(session.signal({ type: 'answer' }).text);
    });
    const report = session.idle();
    expect(report.continued).toBe(true);
    expect(order).toEqual([
      'continue',
      'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition',
    ]);
    expect(session.idle().completed).toEqual(['until']);
  });

  it('a throwing handler is reported to error handlers, and thrown when there are none', async () => {
    const { rb, session } = await startWith([{ name: 'worker' }]);
    const off = rb.on('function_activated', () => {
      throw new Error('handler broke');
    });
    expect(() => session.activate('worker')).toThrow('handler broke');
    expect(session.view().functions.map((fn) => fn.status)).toEqual(['live']);
    const errors: string[] = [];
    rb.on('error', (event) => errors.push(event.error.message));
    session.deactivate('worker');
    session.activate('worker');
    expect(errors).toEqual(['handler broke']);
    off();
  });

  it('unsubscribe stops delivery', async () => {
    const { rb, session } = await startWith([{ name: 'worker' }]);
    const seen: string[] = [];
    const off = rb.on('*', (event) => seen.push(event.type));
    session.activate('worker');
    off();
    session.signal({ type: 'progress' });
    expect(seen).toEqual(['function_activated']);
  });
});

describe('messages name any value without failing themselves', () => {
  const bare = (fields: Record<string, unknown>) => Object.assign(Object.create(null), fields);

  it.each([
    ['a null-prototype object holding a bigint', bare({ a: 0n }), '{"a":"0n"}'],
    ['an object whose toString is a bigint', { toString: 0n }, '{"toString":"0n"}'],
    [
      'a cyclic null-prototype object',
      (() => {
        const cyclic = bare({});
        cyclic.self = cyclic;
        return cyclic;
      })(),
      '[object Object]',
    ],
    ['a bigint', 10n, '10n'],
    ['a symbol', Symbol('s'), 'Symbol(s)'],
  ])('%s', (_what, value, named) => {
    const error = errorOf(() => parseToolCallText(value));
    expect(error.code).toBe('malformed_tool_text');
    expect(error.message).toBe(`tool-call text must be a string, got ${named}`);
  });

  it('a function is named by its first line, cut short', () => {
    const error = errorOf(() =>
      parseToolCallText(function long() {
        return 'x'.repeat(500);
      }),
    );
    expect(error.message).toBe('tool-call text must be a string, got function long() {');
  });
});
