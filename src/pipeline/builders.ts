import { describeValue, RoleboxError } from '../errors.js';
import { PIPELINE_RESULT_SIGNAL_TYPES } from './catalogue.js';
import type {
  PipelineAction,
  PipelinePayload,
  PipelineScope,
  PipelineSignal,
  PipelineSource,
} from './nodes.js';
import type { ExecutorResult } from './results.js';
import { scopeKeyOf } from './scope-key.js';

/** `<kind>:<id>`, unless `id` already has that prefix. */
function withKind(kind: string, id: string): string {
  return id.startsWith(`${kind}:`) ? id : `${kind}:${id}`;
}

/** An id without its `<kind>:` prefix, to derive a child's id from it. */
function withoutKind(id: string): string {
  return id.replace(/^(source|signal|action):/, '');
}

function requireText(
  field: string,
  value: unknown,
  code: 'invalid_source_event' | 'invalid_pipeline_node',
): string {
  if (typeof value !== 'string' || value === '') {
    throw new RoleboxError(
      code,
      `${field} must be a non-empty string, got ${describeValue(value)}`,
      { field, value },
    );
  }
  return value;
}

function requirePayload(
  value: unknown,
  code: 'invalid_source_event' | 'invalid_pipeline_node',
): PipelinePayload {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RoleboxError(code, `payload must be a JSON object, got ${describeValue(value)}`, {
      payload: value,
    });
  }
  return value as PipelinePayload;
}

/** What {@link createSource} needs. */
export interface PipelineSourceInput<
  TType extends string = string,
  TPayload extends object = PipelinePayload,
> {
  readonly sourceType: TType;
  /** Stable across retries, so a retried event is recognised as a duplicate. */
  readonly sourceId: string;
  readonly payload?: TPayload;
  readonly scope?: PipelineScope;
  /** Overrides the key derived from `scope`. */
  readonly scopeKey?: string;
  readonly timestamp: number;
  /** Defaults to `chain:<sourceId>`. */
  readonly chainId?: string;
}

/**
 * Builds a source: id `source:<sourceId>`, a chain of its own, the scope key from the
 * scope (first match wins, see `scopeKeyOf`) unless one is given.
 * Throws: `invalid_source_event` naming the field that is missing or malformed.
 */
export function createSource<TType extends string, TPayload extends object = PipelinePayload>(
  input: PipelineSourceInput<TType, TPayload>,
): PipelineSource<TType, TPayload> {
  if (typeof input !== 'object' || input === null) {
    throw new RoleboxError(
      'invalid_source_event',
      `a source event must be an object, got ${describeValue(input)}`,
    );
  }
  requireText('sourceType', input.sourceType, 'invalid_source_event');
  const sourceId = withKind(
    'source',
    requireText('sourceId', input.sourceId, 'invalid_source_event'),
  );
  const payload = requirePayload(input.payload, 'invalid_source_event') as TPayload;
  if (typeof input.timestamp !== 'number' || !Number.isFinite(input.timestamp)) {
    throw new RoleboxError(
      'invalid_source_event',
      `timestamp must be a number of milliseconds, got ${describeValue(input.timestamp)}`,
    );
  }
  const scopeKey =
    input.scopeKey === undefined
      ? scopeKeyOf(input.scope)
      : requireText('scopeKey', input.scopeKey, 'invalid_source_event');
  const chainId =
    input.chainId === undefined
      ? `chain:${sourceId}`
      : requireText('chainId', input.chainId, 'invalid_source_event');
  return {
    sourceId,
    sourceType: input.sourceType,
    chain: { rootSourceId: sourceId, chainId },
    payload,
    ...(input.scope ? { scope: input.scope } : {}),
    scopeKey,
    timestamp: input.timestamp,
  };
}

/** What {@link createSignal} needs: the source it interprets, or the signal it refines. */
export type PipelineSignalInput<
  TType extends string = string,
  TPayload extends object = PipelinePayload,
> = {
  readonly signalType: TType;
  readonly payload?: TPayload;
  /** Needed only when one parent yields two signals of the same type. */
  readonly id?: string;
  readonly timestamp?: number;
} & (
  | { readonly source: PipelineSource; readonly signal?: never }
  | { readonly signal: PipelineSignal; readonly source?: never }
);

/**
 * Builds a signal derived from a source (`parentNodeId` = the source) or from another signal
 * (`parentNodeId` = `parentSignalId` = that signal). Its id, `signal:<parent>/<type>`, is
 * stable, so a re-run of the same source derives the same ids; its time is its parent's.
 * Throws: `invalid_pipeline_node` for a missing type or a payload that is not an object.
 */
export function createSignal<TType extends string, TPayload extends object = PipelinePayload>(
  input: PipelineSignalInput<TType, TPayload>,
): PipelineSignal<TType, TPayload> {
  requireText('signalType', input?.signalType, 'invalid_pipeline_node');
  const payload = requirePayload(input.payload, 'invalid_pipeline_node') as TPayload;
  const parent = input.signal ?? input.source;
  if (typeof parent !== 'object' || parent === null) {
    throw new RoleboxError(
      'invalid_pipeline_node',
      `a signal needs the source or signal it derives from, got ${describeValue(parent)}`,
    );
  }
  const parentId = 'signalId' in parent ? parent.signalId : parent.sourceId;
  const source =
    'signalId' in parent
      ? parent.source
      : { sourceId: parent.sourceId, sourceType: parent.sourceType };
  return {
    signalId: input.id
      ? withKind('signal', input.id)
      : `signal:${withoutKind(parentId)}/${input.signalType}`,
    signalType: input.signalType,
    chain: {
      rootSourceId: parent.chain.rootSourceId,
      chainId: parent.chain.chainId,
      parentNodeId: parentId,
      ...('signalId' in parent ? { parentSignalId: parent.signalId } : {}),
    },
    payload,
    source,
    timestamp: input.timestamp ?? parent.timestamp,
  };
}

/** What {@link createAction} needs. */
export interface PipelineActionInput<
  TType extends string = string,
  TPayload extends object = PipelinePayload,
> {
  readonly signal: PipelineSignal;
  readonly actionType: TType;
  readonly payload?: TPayload;
  /** Needed only when one signal plans two actions of the same type. */
  readonly id?: string;
  readonly timestamp?: number;
}

/**
 * Builds an action planned by a signal: `parentNodeId` = `parentSignalId` = the signal, id
 * `action:<signal>/<type>` (stable, the anchor of idempotency keys and of the result signal).
 * Throws: `invalid_pipeline_node` for a missing type, signal or payload object.
 */
export function createAction<TType extends string, TPayload extends object = PipelinePayload>(
  input: PipelineActionInput<TType, TPayload>,
): PipelineAction<TType, TPayload> {
  requireText('actionType', input?.actionType, 'invalid_pipeline_node');
  const payload = requirePayload(input.payload, 'invalid_pipeline_node') as TPayload;
  const signal = input.signal;
  if (typeof signal?.signalId !== 'string') {
    throw new RoleboxError(
      'invalid_pipeline_node',
      `an action needs the signal that planned it, got ${describeValue(signal)}`,
    );
  }
  return {
    actionId: input.id
      ? withKind('action', input.id)
      : `action:${withoutKind(signal.signalId)}/${input.actionType}`,
    actionType: input.actionType,
    chain: {
      rootSourceId: signal.chain.rootSourceId,
      chainId: signal.chain.chainId,
      parentNodeId: signal.signalId,
      parentSignalId: signal.signalId,
    },
    payload,
    signal: { signalId: signal.signalId, signalType: signal.signalType },
    source: signal.source,
    timestamp: input.timestamp ?? signal.timestamp,
  };
}

const RESULT_TYPE = {
  applied: PIPELINE_RESULT_SIGNAL_TYPES.actionApplied,
  skipped: PIPELINE_RESULT_SIGNAL_TYPES.actionSkipped,
  failed: PIPELINE_RESULT_SIGNAL_TYPES.actionFailed,
} as const;

/**
 * The built-in result signal of an action: `signal.action.applied | skipped | failed`, id
 * `<actionId>:result`, derived from the action (`parentActionId`).
 */
export function createResultSignal(
  action: PipelineAction,
  result: ExecutorResult,
  timestamp: number,
): PipelineSignal {
  return {
    signalId: `${action.actionId}:result`,
    signalType: RESULT_TYPE[result.status],
    chain: {
      rootSourceId: action.chain.rootSourceId,
      chainId: action.chain.chainId,
      parentNodeId: action.actionId,
      parentActionId: action.actionId,
    },
    payload: {
      actionId: action.actionId,
      actionType: action.actionType,
      attempt: result.attempt,
      ...(result.detail === undefined ? {} : { detail: result.detail }),
      ...(result.status !== 'failed' && result.output !== undefined
        ? { output: result.output }
        : {}),
      ...(result.status === 'failed' ? { error: result.error } : {}),
    },
    source: action.source,
    timestamp,
  };
}
