import { describeValue, RoleboxError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { IdSource } from '../ports/ids.js';
import { createSource } from './builders.js';
import type { SourceWindow } from './context.js';
import type { PipelineLimits } from './limits.js';
import type { PipelineScope, PipelineSource } from './nodes.js';
import type { SourceEventStore } from './source-event-store.js';

/** A source event as a producer hands it in. */
export interface SourceEventInput {
  readonly sourceType: string;
  /** Stable across retries (a retry is then a duplicate); a new id when omitted. */
  readonly sourceId?: string;
  readonly payload?: Readonly<Record<string, unknown>>;
  readonly scope?: PipelineScope;
  /** Overrides the key derived from `scope`. */
  readonly scopeKey?: string;
  /** Default: the pipeline clock's now. */
  readonly timestamp?: number;
  readonly chainId?: string;
}

/** What the ingress answers for an event it has seen already. */
export interface DedupedEvent {
  readonly deduped: true;
  readonly reason: 'duplicate';
  readonly eventId: string;
  readonly scopeKey: string;
}

/**
 * Turns a producer's input into a source node, filling the id and time.
 * Throws: `invalid_source_event` naming the offending field.
 */
export function normalizeSourceEvent(
  input: SourceEventInput,
  clock: Clock,
  ids: IdSource,
): PipelineSource {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RoleboxError(
      'invalid_source_event',
      `a source event must be an object, got ${describeValue(input)}`,
      { input },
    );
  }
  return createSource({
    sourceType: input.sourceType,
    sourceId: input.sourceId === undefined ? ids.next() : input.sourceId,
    ...(input.payload === undefined ? {} : { payload: input.payload }),
    ...(input.scope === undefined ? {} : { scope: input.scope }),
    ...(input.scopeKey === undefined ? {} : { scopeKey: input.scopeKey }),
    timestamp: input.timestamp === undefined ? clock.now() : input.timestamp,
    ...(input.chainId === undefined ? {} : { chainId: input.chainId }),
  });
}

/**
 * The dedupe key of a source: `<scopeKey>:<sourceType>:<sourceId>`. The timestamp is not
 * part of it, so a retried event with a new timestamp is still a duplicate.
 */
export function sourceEventId(source: PipelineSource): string {
  return `${source.scopeKey}:${source.sourceType}:${source.sourceId}`;
}

/**
 * Counts the event into its scope's window under the scope lock. A contended lock makes
 * the event wait its turn (retrying every `lockRetryMs` on the clock), never drops it; the
 * lock's time to live frees a scope whose holder died.
 */
export async function recordInWindow(
  store: SourceEventStore,
  source: PipelineSource,
  limits: PipelineLimits,
  clock: Clock,
): Promise<SourceWindow> {
  while (!(await store.acquireScopeLock(source.scopeKey, limits.scopeLockMs))) {
    await new Promise<void>((resolve) => clock.setTimeout(resolve, limits.lockRetryMs));
  }
  try {
    const previous = await store.readWindow(source.scopeKey);
    const window: SourceWindow = {
      eventCount: (previous?.eventCount ?? 0) + 1,
      lastEventAt: source.timestamp,
      lastEventId: sourceEventId(source),
    };
    await store.writeWindow(source.scopeKey, window, limits.windowTtlMs);
    return window;
  } finally {
    await store.releaseScopeLock(source.scopeKey);
  }
}
