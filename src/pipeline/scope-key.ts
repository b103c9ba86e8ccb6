import { describeValue, RoleboxError } from '../errors.js';
import type { PipelineScope } from './nodes.js';

/** The scope key of sources with no scope at all. */
export const FALLBACK_SCOPE_KEY = 'fallback:global';

const STRING_FIELDS = [
  'userId',
  'agentId',
  'taskId',
  'topicId',
  'sessionId',
  'workspaceId',
] as const;

/**
 * The scope key of a scope, first match wins: `session:<id>`, `topic:<id>`, `task:<id>`,
 * `bot:<platform>:<app>:<thread>`, `agent:<a>:user:<u>`, `user:<id>`, `fallback:global`.
 * Throws: `invalid_source_event` when a scope field is not a non-empty string.
 */
export function scopeKeyOf(scope: PipelineScope | undefined): string {
  if (scope === undefined) return FALLBACK_SCOPE_KEY;
  if (typeof scope !== 'object' || scope === null || Array.isArray(scope)) {
    throw new RoleboxError(
      'invalid_source_event',
      `scope must be an object, got ${describeValue(scope)}`,
      { scope },
    );
  }
  for (const field of STRING_FIELDS) {
    const value = scope[field];
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      throw new RoleboxError(
        'invalid_source_event',
        `scope.${field} must be a non-empty string, got ${describeValue(value)}`,
        { field, value },
      );
    }
  }
  const thread = scope.botThread;
  if (thread !== undefined) {
    for (const field of ['platform', 'applicationId', 'threadId'] as const) {
      if (typeof thread?.[field] !== 'string' || thread[field] === '') {
        throw new RoleboxError(
          'invalid_source_event',
          `scope.botThread.${field} must be a non-empty string, got ${describeValue(thread?.[field])}`,
          { field: `botThread.${field}` },
        );
      }
    }
  }
  if (scope.sessionId) return `session:${scope.sessionId}`;
  if (scope.topicId) return `topic:${scope.topicId}`;
  if (scope.taskId) return `task:${scope.taskId}`;
  if (thread) return `bot:${thread.platform}:${thread.applicationId}:${thread.threadId}`;
  if (scope.agentId && scope.userId) return `agent:${scope.agentId}:user:${scope.userId}`;
  if (scope.userId) return `user:${scope.userId}`;
  return FALLBACK_SCOPE_KEY;
}
