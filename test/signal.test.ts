import { describe, expect, it } from 'vitest';
import {
  highestPriorityPausing,
  MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
  mostSevereTerminating,
  SIGNAL_TYPES,
  type SignalType,
  signalCategory,
} from '../src/index.js';
import { isPausingSignal, isTerminatingSignal } from '../src/signal/catalogue.js';
import {
  clearAllSignals,
  clearSignal,
  getSignalPayload,
  hasSignal,
  LEDGER_KEY,
  readLedgerRecord,
  recordSignal,
  SIGNAL_TYPE_KEY,
} from '../src/signal/ledger.js';
import { parseSignalText } from '../src/signal/parse-signal-text.js';
import { formatSignalReply } from '../src/signal/reply.js';
import { parseSignalArgs } from '../src/signal/schema.js';
import { errorOf } from './support/errors.js';
import { phaseOf, startWith } from './support/rolebox.js';

describe('catalogue', () => {
  it('has the eight types in catalogue order', () => {
    expect(SIGNAL_TYPES).toEqual([
      'answer',
      'need_approval',
      'blocked',
      'need_clarification',
      'handoff',
      'progress',
      'revise_needed',
      'escalate',
    ]);
  });

  it.each([
    ['answer', 'terminating'],
    ['revise_needed', 'terminating'],
    ['escalate', 'terminating'],
    ['need_approval', 'pausing'],
    ['blocked', 'pausing'],
    ['need_clarification', 'pausing'],
    ['handoff', 'handoff'],
    ['progress', 'info'],
  ] as const)('%s is %s', (type, category) => {
    expect(signalCategory(type)).toBe(category);
    expect(isTerminatingSignal(type)).toBe(category === 'terminating');
    expect(isPausingSignal(type)).toBe(category === 'pausing');
  });

  it('orders terminating signals by severity and pausing ones by priority', () => {
    expect(mostSevereTerminating(['answer', 'revise_needed'])).toBe('revise_needed');
    expect(mostSevereTerminating(['answer', 'escalate', 'revise_needed'])).toBe('escalate');
    expect(mostSevereTerminating(['progress', 'blocked'])).toBeUndefined();
    expect(highestPriorityPausing(['need_clarification', 'blocked'])).toBe('blocked');
    expect(highestPriorityPausing(['need_clarification', 'need_approval', 'blocked'])).toBe(
      'need_approval',
    );
    expect(highestPriorityPausing(['answer'])).toBeUndefined();
  });
});

describe('arguments', () => {
  it('accepts a type with or without an object payload', () => {
    expect(parseSignalArgs({ type: 'answer' })).toEqual({ type: 'answer' });
    expect(parseSignalArgs({ type: 'handoff', payload: { target: 'reviewer' } })).toEqual({
      type: 'handoff',
      payload: { target: 'reviewer' },
    });
  });

  it.each([
    [{ type: 'approve' }, 'unknown_signal_type', '"approve"'],
    [{ type: 42 }, 'unknown_signal_type', '42'],
    [{}, 'unknown_signal_type', 'undefined'],
    [{ type: 'answer', payload: 'yes' }, 'invalid_signal_payload', '"yes"'],
    [{ type: 'answer', payload: [1, 2] }, 'invalid_signal_payload', '[1,2]'],
    [{ type: 'answer', payload: null }, 'invalid_signal_payload', 'null'],
    [{ type: 'answer', extra: 1 }, 'invalid_argument', 'extra'],
    ['answer', 'invalid_argument', '"answer"'],
  ])('refuses %j with %s', (input, code, named) => {
    const error = errorOf(() => parseSignalArgs(input));
    expect(error.code).toBe(code);
    expect(error.message).toContain(named);
  });

  it('refuses payloads that are not JSON', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(errorOf(() => parseSignalArgs({ type: 'answer', payload: cyclic })).code).toBe(
      'invalid_signal_payload',
    );
  });
});

describe('payloads are plain JSON, bounded', () => {
  class Approval {
    approved = true;
  }
  const nested = (levels: number): Record<string, unknown> => {
    let value: Record<string, unknown> = {};
    for (let i = 1; i < levels; i++) value = { a: value };
    return value;
  };

  it.each([
    ['a Date', new Date(0), 'payload is a Date, not a plain object'],
    ['a Map', new Map([['a', 1]]), 'payload is a Map, not a plain object'],
    ['a class instance', new Approval(), 'payload is a Approval, not a plain object'],
    ['symbol keys', { [Symbol('s')]: 1 }, 'payload has symbol keys'],
    ['a nested Date', { at: new Date(0) }, 'payload.at is a Date'],
    ['NaN', { n: [1, Number.NaN] }, 'payload.n[1] is NaN, not a JSON number'],
    ['a function', { f: () => 1 }, 'payload.f is a function'],
    ['a bigint', { big: 10n }, 'payload.big is a bigint (10n)'],
    ['an undefined array item', { list: [undefined] }, 'payload.list[0] is undefined'],
    ['65 levels', nested(MAX_PAYLOAD_DEPTH + 1), 'nested deeper than 64 levels'],
    ['8 000 levels', nested(8_000), 'nested deeper than 64 levels'],
  ])('refuses %s with invalid_signal_payload naming it', (_what, payload, named) => {
    const error = errorOf(() => parseSignalArgs({ type: 'answer', payload }));
    expect(error.code).toBe('invalid_signal_payload');
    expect(error.message).toContain(named);
  });

  it('refuses a payload over the size bound, and takes one at it', () => {
    const text = (bytes: number) => ({ t: 'x'.repeat(bytes - '{"t":""}'.length) });
    expect(JSON.stringify(text(MAX_PAYLOAD_BYTES)).length).toBe(MAX_PAYLOAD_BYTES);
    expect(parseSignalArgs({ type: 'answer', payload: text(MAX_PAYLOAD_BYTES) }).payload).toEqual(
      text(MAX_PAYLOAD_BYTES),
    );
    const error = errorOf(() =>
      parseSignalArgs({ type: 'answer', payload: text(MAX_PAYLOAD_BYTES + 1) }),
    );
    expect(error.code).toBe('invalid_signal_payload');
    expect(error.message).toContain(`${MAX_PAYLOAD_BYTES + 1} bytes`);
  });

  it('takes 64 levels, null-prototype objects and undefined members, cloned', () => {
    const deep = nested(MAX_PAYLOAD_DEPTH);
    expect(parseSignalArgs({ type: 'answer', payload: deep }).payload).toEqual(deep);
    const bare = Object.assign(Object.create(null), { a: 1, gone: undefined });
    const parsed = parseSignalArgs({ type: 'answer', payload: bare }).payload;
    expect(parsed).toEqual({ a: 1 });
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    const payload = { list: [{ x: 1 }] };
    expect(parseSignalArgs({ type: 'answer', payload }).payload?.list).not.toBe(payload.list);
  });

  it('keeps a "__proto__" key as data: in the ledger, the captured artifact and the view', async () => {
    const payload = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}');
    expect(Object.keys(parseSignalArgs({ type: 'answer', payload }).payload ?? {})).toEqual([
      '__proto__',
      'ok',
    ]);
    const { session } = await startWith([
      { name: 'capture', observe: [{ tool: 'signal', capture_payload_as: 'data' }] },
    ]);
    session.activate('capture');
    session.tool('|signal| type=answer, payload={"__proto__": {"polluted": true}, "ok": 1}');
    const view = session.view();
    expect(JSON.stringify(view.functions[0]?.signals)).toBe(
      '{"answer":{"__proto__":{"polluted":true},"ok":1}}',
    );
    expect(view.artifacts[0]?.content).toBe('{"__proto__":{"polluted":true},"ok":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('the session refuses a Date payload and records nothing', async () => {
    const { session } = await startWith([{ name: 'plain' }]);
    session.activate('plain');
    const error = errorOf(() => session.signal({ type: 'answer', payload: new Date(0) as never }));
    expect(error.code).toBe('invalid_signal_payload');
    expect(session.view().functions[0]?.signals).toEqual({});
  });
});

describe('|signal| text', () => {
  it.each([
    ['|signal| type=answer', { type: 'answer' }],
    ['  |signal|   type = answer  ', { type: 'answer' }],
    ['|signal| type="answer"', { type: 'answer' }],
    [
      '|signal| type=need_approval, payload={"reason": "LLM output requires human review"}',
      { type: 'need_approval', payload: { reason: 'LLM output requires human review' } },
    ],
    [
      '|signal| payload={"target": "reviewer", "context": "a, b } c"}, type=handoff',
      { type: 'handoff', payload: { target: 'reviewer', context: 'a, b } c' } },
    ],
    [
      '|signal| {"type": "progress", "payload": {"pct": 50}}',
      { type: 'progress', payload: { pct: 50 } },
    ],
    ['|SIGNAL| type=escalate', { type: 'escalate' }],
  ])('parses %s', (text, expected) => {
    expect(parseSignalText(text)).toEqual(expected);
  });

  it.each([
    ['signal type=answer', 'malformed_tool_text'],
    ['|signal|', 'malformed_signal_text'],
    ['|signal| answer', 'malformed_signal_text'],
    ['|signal| type=', 'malformed_signal_text'],
    ['|signal| type=answer payload={}', 'malformed_signal_text'],
    ['|signal| type=answer, payload={"a": 1', 'malformed_signal_text'],
    ['|signal| type=answer, payload={a: 1}', 'malformed_signal_text'],
    ['|signal| type=answer, reason=x', 'malformed_signal_text'],
    ['|signal| type=answer, type=blocked', 'malformed_signal_text'],
    ['|signal| {"type": "answer"} trailing', 'malformed_signal_text'],
    ['|signal:2| type=answer', 'malformed_signal_text'],
    ['|loop| type=answer', 'malformed_signal_text'],
    ['|signal| type=approve', 'unknown_signal_type'],
    ['|signal| type=answer, payload=[1]', 'invalid_signal_payload'],
    ['|signal| type=answer, payload="x"', 'invalid_signal_payload'],
  ])('refuses %s with %s naming the text', (text, code) => {
    const error = errorOf(() => parseSignalText(text));
    expect(error.code).toBe(code);
    if (code.startsWith('malformed'))
      expect(error.message).toContain(JSON.stringify(text).slice(0, 20));
  });
});

describe('reply text', () => {
  it.each([
    [
      'answer',
      undefined,
      'signal: answer acknowledged | recorded on 2 function(s) | → satisfies continue_until condition',
    ],
    [
      'revise_needed',
      undefined,
      'signal: revise_needed acknowledged | recorded on 2 function(s) | → satisfies continue_until condition',
    ],
    [
      'escalate',
      undefined,
      'signal: escalate acknowledged | recorded on 2 function(s) | → satisfies continue_until condition',
    ],
    [
      'need_approval',
      undefined,
      'signal: need_approval acknowledged | recorded on 2 function(s) | → paused (gated)',
    ],
    [
      'blocked',
      undefined,
      'signal: blocked acknowledged | recorded on 2 function(s) | → paused (gated)',
    ],
    [
      'need_clarification',
      undefined,
      'signal: need_clarification acknowledged | recorded on 2 function(s) | → paused (gated)',
    ],
    [
      'handoff',
      { target: 'reviewer' },
      'signal: handoff acknowledged | recorded on 2 function(s) | → handoff to reviewer',
    ],
    [
      'handoff',
      { subagent: 'coder' },
      'signal: handoff acknowledged | recorded on 2 function(s) | → handoff to coder',
    ],
    [
      'handoff',
      { target: 'a', subagent: 'b' },
      'signal: handoff acknowledged | recorded on 2 function(s) | → handoff to a',
    ],
    [
      'handoff',
      undefined,
      'signal: handoff acknowledged | recorded on 2 function(s) | → handoff to (unspecified)',
    ],
    [
      'progress',
      undefined,
      'signal: progress acknowledged | recorded on 2 function(s) | → informational (no state transition)',
    ],
  ] as const)('%s %j', (type, payload, text) => {
    expect(formatSignalReply(type, 2, payload)).toBe(text);
  });

  it('says so when no function is active', () => {
    expect(formatSignalReply('answer', 0)).toBe(
      'signal: answer acknowledged (no active functions)',
    );
  });
});

describe('ledger', () => {
  it('records with last write wins per type, null for no payload, without touching the input', () => {
    const empty = {};
    const once = recordSignal(empty, 'need_approval', { reason: 'a' });
    const twice = recordSignal(once, 'need_approval', { reason: 'b' });
    const bare = recordSignal(twice, 'answer');
    expect(empty).toEqual({});
    expect(readLedgerRecord(once)).toEqual({ need_approval: { reason: 'a' } });
    expect(readLedgerRecord(bare)).toEqual({ need_approval: { reason: 'b' }, answer: null });
    expect(getSignalPayload(bare, 'answer')).toBeNull();
    expect(getSignalPayload(bare, 'escalate')).toBeUndefined();
    expect(hasSignal(bare, 'answer')).toBe(true);
    expect(hasSignal(bare, 'escalate')).toBe(false);
  });

  it('returns a copy from readLedgerRecord', () => {
    const kv = recordSignal({}, 'answer', { ok: true });
    const copy = readLedgerRecord(kv);
    copy.escalate = null;
    expect(hasSignal(kv, 'escalate')).toBe(false);
  });

  it('clears one type or all', () => {
    const kv = recordSignal(recordSignal({ other: 1 }, 'answer'), 'blocked');
    expect(readLedgerRecord(clearSignal(kv, 'answer'))).toEqual({ blocked: null });
    expect(clearAllSignals(kv)).toEqual({ other: 1, [LEDGER_KEY]: {} });
    expect(hasSignal(kv, 'answer')).toBe(true);
  });

  it('reads the legacy string[] form and migrates it on the next write', () => {
    const legacy = { [LEDGER_KEY]: ['answer', 'progress'] };
    expect(hasSignal(legacy, 'answer')).toBe(true);
    expect(hasSignal(legacy, 'blocked')).toBe(false);
    expect(readLedgerRecord(legacy)).toEqual({ answer: null, progress: null });
    expect(recordSignal(legacy, 'blocked', { why: 'x' })[LEDGER_KEY]).toEqual({
      answer: null,
      progress: null,
      blocked: { why: 'x' },
    });
  });
});

describe('signals delivered to a session (SPEC §1 category table)', () => {
  const specs = [{ name: 'plain' }, { name: 'other' }];

  it.each(['answer', 'revise_needed', 'escalate'] as const)(
    '%s is recorded, sets __signal_type and satisfies continue_until',
    async (type) => {
      const { session } = await startWith([
        ...specs,
        { name: 'until', continue_until: `signal_observed(${type})` },
      ]);
      for (const name of ['plain', 'other', 'until']) session.activate(name);
      const receipt = session.signal({ type, payload: { n: 1 } });
      expect(receipt).toEqual({
        type,
        category: 'terminating',
        recordedOn: 3,
        text: `signal: ${type} acknowledged | recorded on 3 function(s) | → satisfies continue_until condition`,
      });
      for (const fn of session.view().functions) {
        expect(fn.signals).toEqual({ [type]: { n: 1 } });
        expect(fn.terminatingSignal).toBe(type);
        expect(fn.kv).not.toHaveProperty(SIGNAL_TYPE_KEY);
        expect(fn.phase).toBe('active');
      }
      expect(session.idle().completed).toEqual(['until']);
      expect(phaseOf(session, 'until')).toBe('complete(completed)');
    },
  );

  it.each(['need_approval', 'blocked', 'need_clarification'] as const)(
    '%s is recorded, sets paused evidence and gates',
    async (type) => {
      const { session } = await startWith(specs);
      session.activate('plain');
      session.activate('other');
      const receipt = session.signal({ type, payload: { reason: 'r' } });
      expect(receipt.text).toBe(
        `signal: ${type} acknowledged | recorded on 2 function(s) | → paused (gated), requests plain:r1, other:r1`,
      );
      expect(receipt.category).toBe('pausing');
      for (const fn of session.view().functions) {
        expect(fn.phase).toBe('gated');
        expect(fn.evidence.paused).toBe(true);
        expect(fn.signals).toEqual({ [type]: { reason: 'r' } });
        expect(fn.terminatingSignal).toBeNull();
      }
    },
  );

  it('keeps rolebox-internal keys out of the view, while conditions still read them (issue 27 item 18)', async () => {
    const { session } = await startWith([
      // Each completes only if its condition sees what the view leaves out.
      { name: 'typed', continue_until: `state_eq(${SIGNAL_TYPE_KEY}=answer)` },
      { name: 'paused-once', continue_until: 'evidence_observed(paused)' },
    ]);
    session.activate('typed');
    session.activate('paused-once');
    session.setKv('typed', 'ticket', 42);
    session.signal({ type: 'need_approval', payload: { reason: 'r' } });
    for (const fn of session.view().functions) {
      expect(fn.phase).toBe('gated');
      expect(fn.evidence).toEqual({ paused: true });
    }
    session.signal({ type: 'answer', payload: { ok: true } });
    expect([...session.idle().completed].sort()).toEqual(['paused-once', 'typed']);
    const [typed, pausedOnce] = session.view().functions;
    for (const fn of [typed, pausedOnce]) {
      expect(fn?.status).toBe('completed');
      expect(fn?.evidence).toEqual({});
      expect(fn?.terminatingSignal).toBe('answer');
      expect(fn?.signals).toEqual({ need_approval: { reason: 'r' }, answer: { ok: true } });
      expect(Object.keys(fn?.kv ?? {}).filter((key) => key.startsWith('__'))).toEqual([]);
    }
    expect(typed?.kv).toEqual({ ticket: 42 });
  });

  it('handoff is recorded, changes nothing and names the target', async () => {
    const { session } = await startWith(specs);
    session.activate('plain');
    const receipt = session.signal({ type: 'handoff', payload: { subagent: 'reviewer' } });
    expect(receipt.text).toBe(
      'signal: handoff acknowledged | recorded on 1 function(s) | → handoff to reviewer',
    );
    const [fn] = session.view().functions;
    expect(fn?.phase).toBe('active');
    expect(fn?.signals).toEqual({ handoff: { subagent: 'reviewer' } });
    expect(fn?.evidence).toEqual({});
  });

  it('progress is recorded and changes nothing', async () => {
    const { session } = await startWith(specs);
    session.activate('plain');
    expect(session.signal({ type: 'progress' }).text).toBe(
      'signal: progress acknowledged | recorded on 1 function(s) | → informational (no state transition)',
    );
    const [fn] = session.view().functions;
    expect(fn?.phase).toBe('active');
    expect(fn?.signals).toEqual({ progress: null });
  });

  it('with no active function the receipt says so', async () => {
    const { session } = await startWith(specs);
    expect(session.signal({ type: 'answer' })).toEqual({
      type: 'answer',
      category: 'terminating',
      recordedOn: 0,
      text: 'signal: answer acknowledged (no active functions)',
    });
  });

  it('records on gated functions too, but not on completed or deactivated ones', async () => {
    const { session } = await startWith([
      { name: 'done-fast', continue_until: 'turn_count(1)' },
      { name: 'waiting', gate: 'signal_observed(answer)' },
      { name: 'dropped' },
    ]);
    for (const name of ['done-fast', 'waiting', 'dropped']) session.activate(name);
    session.idle();
    session.deactivate('dropped');
    expect(session.signal({ type: 'progress' }).recordedOn).toBe(1);
    expect(session.view().functions.find((fn) => fn.name === 'waiting')?.signals).toEqual({
      progress: null,
    });
  });

  it('last write wins across deliveries', async () => {
    const { session } = await startWith(specs);
    session.activate('plain');
    session.signal({ type: 'progress', payload: { pct: 10 } });
    session.tool('|signal| type=progress, payload={"pct": 90}');
    expect(session.view().functions[0]?.signals).toEqual({ progress: { pct: 90 } });
  });

  it('captures payloads into the artifacts named by observe', async () => {
    const { session, clock } = await startWith([
      { name: 'capture', observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }] },
    ]);
    session.activate('capture');
    session.signal({ type: 'need_approval', payload: { reason: 'prod' } });
    clock.advance(5);
    session.signal({ type: 'answer', payload: { approved: true } });
    session.signal({ type: 'progress' });
    const artifacts = session.view().artifacts;
    expect(artifacts).toHaveLength(1);
    expect(artifacts[0]).toMatchObject({
      id: 'art-1',
      name: 'approval-data',
      status: 'drafted',
      content: 'null',
      createdAt: 1_000,
      updatedAt: 1_005,
    });
  });

  it('captured artifacts satisfy artifact_exists in every function', async () => {
    const { session } = await startWith([
      { name: 'capture', observe: [{ tool: 'signal', capture_payload_as: 'plan' }] },
      { name: 'waits-for-plan', gate: 'artifact_exists(plan)' },
    ]);
    session.activate('capture');
    session.activate('waits-for-plan');
    expect(phaseOf(session, 'waits-for-plan')).toBe('gated');
    session.signal({ type: 'progress', payload: { plan: 'v1' } });
    expect(phaseOf(session, 'waits-for-plan')).toBe('active');
  });

  it('exposes every signal type through the tool text', async () => {
    const { session } = await startWith(specs);
    session.activate('plain');
    for (const type of SIGNAL_TYPES as readonly SignalType[]) {
      const receipt = session.tool(`|signal| type=${type}`);
      expect(receipt.kind).toBe('signal');
      expect(
        receipt.text.startsWith(`signal: ${type} acknowledged | recorded on 1 function(s)`),
      ).toBe(true);
    }
    expect(Object.keys(session.view().functions[0]?.signals ?? {}).sort()).toEqual(
      [...SIGNAL_TYPES].sort(),
    );
  });
});
