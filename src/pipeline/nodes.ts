/**
 * The three kinds of node a pipeline run is made of (SPEC-pipeline §2): a **source** is a
 * fact from outside, a **signal** what it means, an **action** a side effect to perform.
 * Nodes are plain JSON; every one carries the chain back to its root source.
 */

/** A JSON object: what every node's payload is. */
export type PipelinePayload = Readonly<Record<string, unknown>>;

/** Where a node comes from: its chain, the root source, and the node it was derived from. */
export interface ChainRef {
  /** The source the whole chain started from. */
  readonly rootSourceId: string;
  /** `chain:<rootSourceId>` unless the producer chose one. */
  readonly chainId: string;
  /** The node this one was derived from (absent on the root source). */
  readonly parentNodeId?: string;
  /** The signal this node was derived from, when it was derived from a signal. */
  readonly parentSignalId?: string;
  /** The action this node reports on (result signals only). */
  readonly parentActionId?: string;
}

/** A bot thread, as a scope: messages of one thread of one app on one platform. */
export interface BotThread {
  readonly platform: string;
  readonly applicationId: string;
  readonly threadId: string;
}

/** What a source is about; its scope key is derived from it (see `scopeKeyOf`). */
export interface PipelineScope {
  readonly userId?: string;
  readonly agentId?: string;
  readonly taskId?: string;
  readonly topicId?: string;
  readonly sessionId?: string;
  readonly workspaceId?: string;
  readonly botThread?: BotThread;
}

/** A fact from outside: a message, a finished execution, an agent signal. */
export interface PipelineSource<
  TType extends string = string,
  TPayload extends object = PipelinePayload,
> {
  /** `source:<id>`. */
  readonly sourceId: string;
  readonly sourceType: TType;
  readonly chain: ChainRef;
  readonly payload: TPayload;
  readonly scope?: PipelineScope;
  /** The serialisation boundary: dedupe, scope lock, window and guard state are per key. */
  readonly scopeKey: string;
  readonly timestamp: number;
}

/** Which source a signal or action descends from. */
export interface SourceRef {
  readonly sourceId: string;
  readonly sourceType: string;
}

/** What a source (or another signal) means. */
export interface PipelineSignal<
  TType extends string = string,
  TPayload extends object = PipelinePayload,
> {
  /** `signal:<id>`, or `<actionId>:result` for a built-in result signal. */
  readonly signalId: string;
  readonly signalType: TType;
  readonly chain: ChainRef;
  readonly payload: TPayload;
  readonly source: SourceRef;
  readonly timestamp: number;
}

/** A side effect a signal planned. */
export interface PipelineAction<
  TType extends string = string,
  TPayload extends object = PipelinePayload,
> {
  /** `action:<id>`: the anchor of its result signal and of idempotency keys. */
  readonly actionId: string;
  readonly actionType: TType;
  readonly chain: ChainRef;
  readonly payload: TPayload;
  readonly output?: unknown;
  readonly signal: { readonly signalId: string; readonly signalType: string };
  readonly source: SourceRef;
  readonly timestamp: number;
}

/** Any node of a run. */
export type PipelineNode = PipelineSource | PipelineSignal | PipelineAction;

/** Which kind of node, and so which handlers listen to it. */
export type PipelineNodeKind = 'source' | 'signal' | 'action';

/** The kind of a node, from the id field it carries. */
export function nodeKindOf(node: PipelineNode): PipelineNodeKind {
  if ('actionId' in node) return 'action';
  if ('signalId' in node) return 'signal';
  return 'source';
}

/** The id of a node, whatever its kind. */
export function nodeIdOf(node: PipelineNode): string {
  if ('actionId' in node) return node.actionId;
  if ('signalId' in node) return node.signalId;
  return node.sourceId;
}

/** The type of a node, whatever its kind. */
export function nodeTypeOf(node: PipelineNode): string {
  if ('actionId' in node) return node.actionType;
  if ('signalId' in node) return node.signalType;
  return node.sourceType;
}
