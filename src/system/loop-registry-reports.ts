import type { LoopEmitted } from '../loop/machine-types.js';
import type { SystemLoopEvent } from './machine-types.js';

/**
 * What the system's loop registry must be told of something a loop emitted: a round that
 * started in a worker session (a loop started in that session is the loop's child), or a
 * cancelNow to cascade to the child loops. The loop emits these itself instead of sending
 * them through its session and shard (two XState steps per round for a relay); the
 * runtime sends the report to the root, and a replay does the same, so a recorded run
 * journals neither: they follow from the loop's own step.
 */
export function registryReportOf(
  emitted: LoopEmitted | { readonly type: string },
): SystemLoopEvent | undefined {
  const event = emitted as LoopEmitted;
  switch (event.type) {
    case 'round_started':
      return {
        type: 'system.loop_worker',
        loopId: event.loopId,
        workerSessionId: event.workerSessionId,
      };
    case 'loop_cascade_cancel':
      return { type: 'system.loop_cascade_cancel', loopId: event.loopId, at: event.at };
    default:
      return undefined;
  }
}

/** The root event types that are {@link registryReportOf}'s reports (a journal skips them). */
export const REGISTRY_REPORT_TYPES: ReadonlySet<string> = new Set([
  'system.loop_worker',
  'system.loop_cascade_cancel',
]);
