import { describeValue, RoleboxError } from '../errors.js';
import type { SessionRead } from '../runtime/system-access.js';
import { canChangeArtifactStatus } from '../session/artifact-lifecycle.js';
import { runtimeRefusal } from '../session/runtime-refusal.js';
import type { RuntimeEvent, TimedRuntimeEvent } from '../session/runtime-types.js';

// The checks a runtime event passes before it reaches a session, wherever it comes from:
// the host's `send`, the host's `settleEffect`, an effect handler's result.

/**
 * Why a runtime event cannot be applied now, as the error to throw; undefined when it can.
 * The session machine decides (`can`); a refusal is explained by {@link runtimeRefusal}. A
 * `worker_completed` the machine would take must also name an artifact the lifecycle lets
 * go under review (the artifact store's rule, SPEC §4.1).
 */
export function runtimeEventProblem(
  snapshot: SessionRead,
  event: TimedRuntimeEvent,
): RoleboxError | undefined {
  if (!snapshot.can(event)) return runtimeRefusal(snapshot, event);
  if (event.type !== 'worker_completed') return undefined;
  const artifact = snapshot.artifacts.find((candidate) => candidate.id === event.artifactId);
  if (!artifact) {
    return new RoleboxError(
      'unknown_artifact',
      `worker_completed: session has no artifact ${describeValue(event.artifactId)}; write it first`,
      { artifactId: event.artifactId },
    );
  }
  if (!canChangeArtifactStatus(artifact.status, 'under_review')) {
    return new RoleboxError(
      'invalid_artifact_transition',
      `worker_completed: artifact ${artifact.id} is ${artifact.status}; only a drafted artifact can be put under review`,
      { artifactId: artifact.id, from: artifact.status, to: 'under_review' },
    );
  }
  return undefined;
}

/**
 * Why the events `events` of effect `effectId`'s result cannot be applied now, one after
 * another, as the error `send` would throw for the first one refused (its message says which
 * one); undefined when the session takes each. Each is checked as `send` checks it
 * ({@link runtimeEventProblem}) on the session as the events before it leave it (a pure
 * transition: the artifacts are those written so far, as a handler writes its artifact
 * before it returns).
 */
export function effectResultProblem(
  session: SessionRead,
  effectId: string,
  events: readonly RuntimeEvent[],
  at: number,
): RoleboxError | undefined {
  let now = session;
  for (const [index, event] of events.entries()) {
    const timed = { ...event, at } as TimedRuntimeEvent;
    const problem = runtimeEventProblem(now, timed);
    if (problem)
      return new RoleboxError(
        problem.code,
        `effect ${effectId}: event ${index + 1} of ${events.length} of its result is refused: ${problem.message}`,
        { ...problem.details, effectId, event: index },
      );
    // The last event's successor state is never read: a pure transition (a whole inert
    // actor built by XState) spared per result.
    if (index < events.length - 1) now = now.after(timed);
  }
  return undefined;
}
