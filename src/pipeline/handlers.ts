import { describeValue, RoleboxError } from '../errors.js';
import {
  createAction,
  createSignal,
  type PipelineActionInput,
  type PipelineSignalInput,
} from './builders.js';
import type {
  BuiltinActionPayloads,
  BuiltinSignalPayloads,
  RoleboxSourcePayloads,
} from './catalogue.js';
import type { HandlerContext } from './context.js';
import type {
  PipelineAction,
  PipelineNodeKind,
  PipelinePayload,
  PipelineSignal,
  PipelineSource,
} from './nodes.js';
import type { ExecutorResult, RuntimeProcessorResult } from './results.js';

type OneOrMany<T> = T | readonly T[];
type Awaitable<T> = T | Promise<T>;
/** The type(s) named by a `listen`. */
type ListenedType<TListen> = TListen extends readonly (infer TType)[] ? TType : TListen;
/** The payload a catalogue gives a type, or a plain JSON object for a type it does not know. */
type PayloadIn<TMap, TType> = TType extends keyof TMap
  ? Extract<TMap[TType], object>
  : PipelinePayload;
/** `T[K]` when T has K, else `{}` (no entries). */
type Entry<T, K extends string> = T extends { readonly [P in K]: infer V }
  ? V
  : Record<never, never>;

/** The source a handler listening to `TType` receives: one variant per listened type. */
export type SourceOf<TMap, TType extends string> = TType extends string
  ? PipelineSource<TType, PayloadIn<TMap, TType>>
  : never;
/** The signal a handler listening to `TType` receives. */
export type SignalOf<TMap, TType extends string> = TType extends string
  ? PipelineSignal<TType, PayloadIn<TMap, TType>>
  : never;
/** The action a handler listening to `TType` receives. */
export type ActionOf<TMap, TType extends string> = TType extends string
  ? PipelineAction<TType, PayloadIn<TMap, TType>>
  : never;

/** What a source or signal handler may return. */
export type ProcessorReturn = Awaitable<RuntimeProcessorResult | undefined>;
/** What an action handler may return: also the ExecutorResult of its side effect. */
export type ActionReturn = Awaitable<RuntimeProcessorResult | ExecutorResult | undefined>;

/** A handler as the registry keeps it: plain data. */
export interface PipelineHandler {
  readonly kind: PipelineNodeKind;
  /** The node types it listens to. */
  readonly listen: readonly string[];
  /** `<listened type>:<semantic suffix>`; the span and metric label. */
  readonly id: string;
  readonly handle: (node: never, ctx: HandlerContext) => unknown;
}

/** A source handler: interprets a fact as signals (no side effects). */
export interface SourceHandler<TNode extends PipelineSource<string, object> = PipelineSource>
  extends PipelineHandler {
  readonly kind: 'source';
  readonly handle: (source: TNode, ctx: HandlerContext) => ProcessorReturn;
}

/** A signal handler: routes, fans out, filters, plans actions. */
export interface SignalHandler<TNode extends PipelineSignal<string, object> = PipelineSignal>
  extends PipelineHandler {
  readonly kind: 'signal';
  readonly handle: (signal: TNode, ctx: HandlerContext) => ProcessorReturn;
}

/** An action handler: performs one side effect and reports it with an ExecutorResult. */
export interface ActionHandler<TNode extends PipelineAction<string, object> = PipelineAction>
  extends PipelineHandler {
  readonly kind: 'action';
  readonly handle: (action: TNode, ctx: HandlerContext) => ActionReturn;
}

/** A bundle of handlers installed together, in order. */
export interface PipelinePolicy {
  readonly id: string;
  readonly handlers: readonly PipelineHandler[];
}

/**
 * The handler and builder functions typed by a catalogue of payloads: a handler's node and
 * a builder's payload narrow to the listened (or built) type's payload.
 */
export interface PipelineTypes<TSources, TSignals, TActions> {
  /** Defines a source handler. `listen`: one type or several; `id`: `<type>:<suffix>`. */
  defineSourceHandler<const TListen extends OneOrMany<string>>(
    listen: TListen,
    id: string,
    handle: (
      source: SourceOf<TSources, ListenedType<TListen>>,
      ctx: HandlerContext,
    ) => ProcessorReturn,
  ): SourceHandler<SourceOf<TSources, ListenedType<TListen>>>;
  /** Defines a signal handler. */
  defineSignalHandler<const TListen extends OneOrMany<string>>(
    listen: TListen,
    id: string,
    handle: (
      signal: SignalOf<TSignals, ListenedType<TListen>>,
      ctx: HandlerContext,
    ) => ProcessorReturn,
  ): SignalHandler<SignalOf<TSignals, ListenedType<TListen>>>;
  /** Defines an action handler. */
  defineActionHandler<const TListen extends OneOrMany<string>>(
    listen: TListen,
    id: string,
    handle: (
      action: ActionOf<TActions, ListenedType<TListen>>,
      ctx: HandlerContext,
    ) => ActionReturn,
  ): ActionHandler<ActionOf<TActions, ListenedType<TListen>>>;
  /** Builds a signal whose payload is checked against the catalogue. */
  createSignal<TType extends string>(
    input: PipelineSignalInput<TType, PayloadIn<TSignals, TType>>,
  ): PipelineSignal<TType, PayloadIn<TSignals, TType>>;
  /** Builds an action whose payload is checked against the catalogue. */
  createAction<TType extends string>(
    input: PipelineActionInput<TType, PayloadIn<TActions, TType>>,
  ): PipelineAction<TType, PayloadIn<TActions, TType>>;
}

/** The payload maps a policy declares for its own types. */
export interface PayloadCatalogue {
  readonly sources?: object;
  readonly signals?: object;
  readonly actions?: object;
}

function defineHandler<TKind extends PipelineNodeKind>(
  kind: TKind,
  listen: unknown,
  id: unknown,
  handle: unknown,
) {
  const types = typeof listen === 'string' ? [listen] : listen;
  if (
    !Array.isArray(types) ||
    types.length === 0 ||
    types.some((type) => typeof type !== 'string' || type === '')
  ) {
    throw new RoleboxError(
      'invalid_handler',
      `${kind} handler ${describeValue(id)}: listen must be a type or a non-empty list of types, got ${describeValue(listen)}`,
      { listen },
    );
  }
  if (typeof id !== 'string' || id === '') {
    throw new RoleboxError(
      'invalid_handler',
      `${kind} handler listening to ${describeValue(types)}: id must be a non-empty string, got ${describeValue(id)}`,
      { id },
    );
  }
  if (typeof handle !== 'function') {
    throw new RoleboxError(
      'invalid_handler',
      `${kind} handler ${describeValue(id)}: handle must be a function, got ${describeValue(handle)}`,
      { id },
    );
  }
  return Object.freeze({
    kind,
    listen: Object.freeze([...types]) as readonly string[],
    id,
    handle,
  });
}

/**
 * The handler and builder functions for a catalogue of your own types, merged with
 * rolebox's (its source events, result signals and `action.rolebox.send`).
 *
 * Use when: a policy defines its own signal and action types and wants its handlers typed:
 * `const t = definePipelineTypes<{ signals: { 'signal.x': { sessionId: string } } }>();`
 */
export function definePipelineTypes<
  TCatalogue extends PayloadCatalogue = Record<never, never>,
>(): PipelineTypes<
  RoleboxSourcePayloads & Entry<TCatalogue, 'sources'>,
  BuiltinSignalPayloads & Entry<TCatalogue, 'signals'>,
  BuiltinActionPayloads & Entry<TCatalogue, 'actions'>
> {
  return {
    defineSourceHandler: (listen, id, handle) =>
      defineHandler('source', listen, id, handle) as never,
    defineSignalHandler: (listen, id, handle) =>
      defineHandler('signal', listen, id, handle) as never,
    defineActionHandler: (listen, id, handle) =>
      defineHandler('action', listen, id, handle) as never,
    createSignal: (input) => createSignal(input as PipelineSignalInput) as never,
    createAction: (input) => createAction(input as PipelineActionInput) as never,
  };
}

const builtin = definePipelineTypes();

/**
 * Defines a source handler over rolebox's catalogue: it interprets a source event as
 * signals. Upstream: the source type(s) in `listen`. Downstream: the signals it dispatches.
 * Throws: `invalid_handler` for an empty `listen`, a missing id or a handle that is not a function.
 */
export const defineSourceHandler = builtin.defineSourceHandler;

/**
 * Defines a signal handler over rolebox's catalogue: routing, fan-out, filtering,
 * planning actions. Throws: `invalid_handler` as {@link defineSourceHandler}.
 */
export const defineSignalHandler = builtin.defineSignalHandler;

/**
 * Defines an action handler over rolebox's catalogue: one side effect, reported with an
 * ExecutorResult. Throws: `invalid_handler` as {@link defineSourceHandler}.
 */
export const defineActionHandler = builtin.defineActionHandler;

/**
 * Bundles handlers into a policy; falsy entries are left out, so a policy factory can
 * include optional handlers with `options.x && handler`.
 * Throws: `invalid_handler` for a missing id or an entry that is not a handler.
 */
export function definePolicy(
  id: string,
  handlers: readonly (PipelineHandler | false | null | undefined)[],
): PipelinePolicy {
  if (typeof id !== 'string' || id === '') {
    throw new RoleboxError(
      'invalid_handler',
      `a policy id must be a non-empty string, got ${describeValue(id)}`,
      { id },
    );
  }
  if (!Array.isArray(handlers)) {
    throw new RoleboxError(
      'invalid_handler',
      `policy ${describeValue(id)}: handlers must be a list, got ${describeValue(handlers)}`,
      { id },
    );
  }
  const kept = handlers.filter((handler): handler is PipelineHandler => Boolean(handler));
  for (const handler of kept) {
    if (
      !['source', 'signal', 'action'].includes(handler?.kind) ||
      typeof handler.handle !== 'function' ||
      !Array.isArray(handler.listen)
    ) {
      throw new RoleboxError(
        'invalid_handler',
        `policy ${describeValue(id)}: ${describeValue(handler)} is not a handler (use defineSourceHandler / defineSignalHandler / defineActionHandler)`,
        { id },
      );
    }
  }
  return Object.freeze({ id, handlers: Object.freeze(kept) });
}
