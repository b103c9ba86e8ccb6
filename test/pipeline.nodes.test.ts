import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  createAction,
  createResultSignal,
  createSignal,
  createSource,
  defineActionHandler,
  definePipelineTypes,
  definePolicy,
  defineSignalHandler,
  defineSourceHandler,
  FALLBACK_SCOPE_KEY,
  PIPELINE_SOURCE_TYPES,
  type PipelineSource,
  scopeKeyOf,
} from '../src/pipeline/index.js';
import { HandlerRegistry } from '../src/pipeline/registry.js';
import { errorOf } from './support/errors.js';

const source = createSource({
  sourceType: 'agent.user.message',
  sourceId: 'm1',
  payload: { text: 'hi' },
  scope: { topicId: 't1' },
  timestamp: 1_000,
});

describe('builders and chain refs', () => {
  it('a source: kind-prefixed id, its own chain, the scope key from its scope', () => {
    expect(source).toEqual({
      sourceId: 'source:m1',
      sourceType: 'agent.user.message',
      chain: { rootSourceId: 'source:m1', chainId: 'chain:source:m1' },
      payload: { text: 'hi' },
      scope: { topicId: 't1' },
      scopeKey: 'topic:t1',
      timestamp: 1_000,
    });
    expect(
      createSource({
        sourceType: 'x',
        sourceId: 'source:m1',
        timestamp: 0,
        chainId: 'chain:custom',
        scopeKey: 'custom:1',
      }),
    ).toMatchObject({
      sourceId: 'source:m1',
      chain: { chainId: 'chain:custom' },
      scopeKey: 'custom:1',
      payload: {},
    });
  });

  it('a signal from a source, a signal from a signal, an action from a signal, and its result signal', () => {
    const judged = createSignal({
      source,
      signalType: 'signal.feedback.satisfaction',
      payload: { satisfied: false },
    });
    expect(judged).toEqual({
      signalId: 'signal:m1/signal.feedback.satisfaction',
      signalType: 'signal.feedback.satisfaction',
      chain: { rootSourceId: 'source:m1', chainId: 'chain:source:m1', parentNodeId: 'source:m1' },
      payload: { satisfied: false },
      source: { sourceId: 'source:m1', sourceType: 'agent.user.message' },
      timestamp: 1_000,
    });
    const routed = createSignal({ signal: judged, signalType: 'signal.feedback.domain.memory' });
    expect(routed.chain).toEqual({
      rootSourceId: 'source:m1',
      chainId: 'chain:source:m1',
      parentNodeId: judged.signalId,
      parentSignalId: judged.signalId,
    });
    expect(routed.source).toEqual(judged.source);
    const action = createAction({
      signal: routed,
      actionType: 'action.user-memory.handle',
      payload: { note: 'concise' },
    });
    expect(action).toMatchObject({
      actionId:
        'action:m1/signal.feedback.satisfaction/signal.feedback.domain.memory/action.user-memory.handle',
      chain: {
        parentNodeId: routed.signalId,
        parentSignalId: routed.signalId,
        rootSourceId: 'source:m1',
      },
      signal: { signalId: routed.signalId, signalType: 'signal.feedback.domain.memory' },
      source: { sourceId: 'source:m1', sourceType: 'agent.user.message' },
      timestamp: 1_000,
    });
    // Ids are stable: building again from the same parents gives the same ids.
    expect(createAction({ signal: routed, actionType: 'action.user-memory.handle' }).actionId).toBe(
      action.actionId,
    );
    expect(createSignal({ source, signalType: 'signal.x', id: 'mine' }).signalId).toBe(
      'signal:mine',
    );

    const result = createResultSignal(
      action,
      {
        actionId: action.actionId,
        attempt: { current: 1, startedAt: 1, completedAt: 2, status: 'succeeded' },
        status: 'applied',
        output: { ok: true },
      },
      2,
    );
    expect(result).toMatchObject({
      signalId: `${action.actionId}:result`,
      signalType: 'signal.action.applied',
      chain: { parentNodeId: action.actionId, parentActionId: action.actionId },
      payload: {
        actionId: action.actionId,
        actionType: 'action.user-memory.handle',
        output: { ok: true },
      },
      timestamp: 2,
    });
  });

  const cases: [string, () => unknown, string, RegExp][] = [
    [
      'a source without a type',
      () => createSource({ sourceType: '', sourceId: 'a', timestamp: 0 }),
      'invalid_source_event',
      /sourceType must be a non-empty string, got ""/,
    ],
    [
      'a source without an id',
      () => createSource({ sourceType: 'x', sourceId: undefined as never, timestamp: 0 }),
      'invalid_source_event',
      /sourceId must be a non-empty string, got undefined/,
    ],
    [
      'a source with an array payload',
      () => createSource({ sourceType: 'x', sourceId: 'a', payload: [1] as never, timestamp: 0 }),
      'invalid_source_event',
      /payload must be a JSON object, got \[1\]/,
    ],
    [
      'a source with a text timestamp',
      () => createSource({ sourceType: 'x', sourceId: 'a', timestamp: 'now' as never }),
      'invalid_source_event',
      /timestamp must be a number of milliseconds, got "now"/,
    ],
    [
      'a scope id that is a number',
      () =>
        createSource({
          sourceType: 'x',
          sourceId: 'a',
          timestamp: 0,
          scope: { sessionId: 7 as never },
        }),
      'invalid_source_event',
      /scope.sessionId must be a non-empty string, got 7/,
    ],
    [
      'a signal without a parent',
      () => createSignal({ signalType: 'signal.x' } as never),
      'invalid_pipeline_node',
      /a signal needs the source or signal it derives from, got undefined/,
    ],
    [
      'an action without a type',
      () => createAction({ signal: createSignal({ source, signalType: 's' }), actionType: '' }),
      'invalid_pipeline_node',
      /actionType must be a non-empty string, got ""/,
    ],
  ];
  for (const [name, build, code, message] of cases) {
    it(`refuses ${name}`, () => {
      const error = errorOf(build);
      expect(error.code).toBe(code);
      expect(error.message).toMatch(message);
    });
  }
});

describe('scope keys: first match wins', () => {
  const thread = { platform: 'slack', applicationId: 'app', threadId: 'th' };
  const full = {
    sessionId: 's',
    topicId: 't',
    taskId: 'k',
    botThread: thread,
    agentId: 'a',
    userId: 'u',
    workspaceId: 'w',
  };
  it('session > topic > task > bot thread > agent+user > user > fallback', () => {
    expect(scopeKeyOf(full)).toBe('session:s');
    const { sessionId: _s, ...noSession } = full;
    expect(scopeKeyOf(noSession)).toBe('topic:t');
    const { topicId: _t, ...noTopic } = noSession;
    expect(scopeKeyOf(noTopic)).toBe('task:k');
    const { taskId: _k, ...noTask } = noTopic;
    expect(scopeKeyOf(noTask)).toBe('bot:slack:app:th');
    const { botThread: _b, ...noThread } = noTask;
    expect(scopeKeyOf(noThread)).toBe('agent:a:user:u');
    expect(scopeKeyOf({ agentId: 'a' })).toBe(FALLBACK_SCOPE_KEY);
    expect(scopeKeyOf({ userId: 'u', workspaceId: 'w' })).toBe('user:u');
    expect(scopeKeyOf({ workspaceId: 'w' })).toBe('fallback:global');
    expect(scopeKeyOf(undefined)).toBe('fallback:global');
  });

  it('refuses a malformed scope, naming the field', () => {
    expect(
      errorOf(() =>
        scopeKeyOf({ botThread: { platform: 'slack', applicationId: '', threadId: 't' } }),
      ).message,
    ).toBe('scope.botThread.applicationId must be a non-empty string, got ""');
    expect(errorOf(() => scopeKeyOf('session:1' as never)).code).toBe('invalid_source_event');
  });
});

describe('handlers, policies and the registry', () => {
  it('handlers are plain data; listen may be one type or several', () => {
    const handle = () => undefined;
    const one = defineSourceHandler('agent.user.message', 'agent.user.message:judge', handle);
    expect(one).toEqual({
      kind: 'source',
      listen: ['agent.user.message'],
      id: 'agent.user.message:judge',
      handle,
    });
    const many = defineSignalHandler(['signal.a', 'signal.b'], 'signal.ab:route', handle);
    expect(many.listen).toEqual(['signal.a', 'signal.b']);
    expect(defineActionHandler('action.x', 'action.x:run', handle).kind).toBe('action');
  });

  it('refuses malformed handlers and policies', () => {
    expect(errorOf(() => defineSourceHandler([], 'x', () => undefined)).message).toMatch(
      /source handler "x": listen must be a type or a non-empty list of types, got \[\]/,
    );
    expect(errorOf(() => defineSignalHandler('s', '', () => undefined)).message).toMatch(
      /signal handler listening to \["s"\]: id must be a non-empty string, got ""/,
    );
    expect(errorOf(() => defineActionHandler('a', 'a:x', 'run' as never)).message).toMatch(
      /action handler "a:x": handle must be a function, got "run"/,
    );
    expect(errorOf(() => definePolicy('', [])).code).toBe('invalid_handler');
    expect(errorOf(() => definePolicy('p', [{ id: 'fake' } as never])).message).toMatch(
      /policy "p": \{"id":"fake"\} is not a handler/,
    );
  });

  it('a policy leaves out optional handlers that are not there, and installs in order', () => {
    const a = defineSourceHandler('x', 'x:a', () => undefined);
    const b = defineSourceHandler('x', 'x:b', () => undefined);
    const withOptional = (optional: boolean) =>
      definePolicy('p', [a, optional && b, undefined, null]);
    expect(withOptional(false).handlers).toEqual([a]);
    const registry = new HandlerRegistry([
      withOptional(true),
      definePolicy('q', [defineSourceHandler(['x', 'y'], 'x:c', () => undefined)]),
    ]);
    expect(
      registry
        .handlersFor('source', 'x')
        .map((installed) => `${installed.policyId}/${installed.handler.id}`),
    ).toEqual(['p/x:a', 'p/x:b', 'q/x:c']);
    expect(registry.handlersFor('source', 'y')).toHaveLength(1);
    expect(registry.handlersFor('signal', 'x')).toEqual([]);
  });

  it('refuses the same handler id twice for one type', () => {
    const handler = defineSourceHandler('x', 'x:a', () => undefined);
    const error = errorOf(
      () => new HandlerRegistry([definePolicy('p', [handler]), definePolicy('q', [handler])]),
    );
    expect(error.code).toBe('duplicate_handler');
    expect(error.message).toBe(
      'source handler "x:a" is registered twice for "x" (policies "p" and "q")',
    );
  });
});

describe('types narrow by listen', () => {
  it('rolebox source events', () => {
    defineSourceHandler(
      PIPELINE_SOURCE_TYPES.agentSignalEmitted,
      'agent.signal.emitted:t',
      (emitted) => {
        expectTypeOf(emitted.payload.signalType).toEqualTypeOf<
          | 'answer'
          | 'need_approval'
          | 'need_clarification'
          | 'blocked'
          | 'handoff'
          | 'progress'
          | 'revise_needed'
          | 'escalate'
        >();
        expectTypeOf(emitted.payload.recordedOn).toEqualTypeOf<readonly string[]>();
        // @ts-expect-error -- not a field of agent.signal.emitted
        emitted.payload.functions;
        return undefined;
      },
    );
    defineSourceHandler(
      [PIPELINE_SOURCE_TYPES.loopFinished, PIPELINE_SOURCE_TYPES.functionCompleted],
      'loop-or-function:t',
      (fact) => {
        if (fact.sourceType === 'loop.finished') expectTypeOf(fact.payload.phase).toBeString();
        else expectTypeOf(fact.payload.function).toBeString();
        return undefined;
      },
    );
    // A type outside every catalogue gets a plain JSON object.
    defineSourceHandler('my.custom.event', 'my.custom.event:t', (custom) => {
      expectTypeOf(custom).toEqualTypeOf<PipelineSource<'my.custom.event'>>();
      return undefined;
    });
  });

  it('a policy catalogue types handlers and builders', () => {
    const t = definePipelineTypes<{
      signals: { 'signal.refund.eligible': { sessionId: string; amount: number } };
      actions: { 'action.refund.pay': { amount: number } };
    }>();
    t.defineSignalHandler('signal.refund.eligible', 'signal.refund.eligible:pay', (signal) => {
      expectTypeOf(signal.payload.amount).toBeNumber();
      // @ts-expect-error -- the catalogue has no `currency`
      signal.payload.currency;
      return {
        status: 'dispatch',
        actions: [
          t.createAction({
            signal,
            actionType: 'action.refund.pay',
            payload: { amount: signal.payload.amount },
          }),
        ],
      };
    });
    t.defineActionHandler('action.refund.pay', 'action.refund.pay:run', (action) => {
      expectTypeOf(action.payload).toEqualTypeOf<{ amount: number }>();
      return undefined;
    });
    t.createSignal({
      source,
      signalType: 'signal.refund.eligible',
      // @ts-expect-error -- amount must be a number
      payload: { sessionId: 's', amount: '12' },
    });
    // Built-in types stay typed: action.rolebox.send wants a command.
    t.defineActionHandler('action.rolebox.send', 'action.rolebox.send:spy', (action) => {
      expectTypeOf(action.payload.sessionId).toBeString();
      return undefined;
    });
  });
});
