import { topStateOf } from '../base/state-value.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { SessionContext } from './machine-types.js';
import { artifactAwaitsReview, decisionAwaitsApproval, skillOffered } from './runtime-rules.js';
import type { TimedRuntimeEvent } from './runtime-types.js';

/**
 * Why the session machine refused a runtime event (its `can()` said no), as the error to
 * throw: a decision or artifact other than the awaited one, a skill it did not offer, or
 * otherwise `event_not_allowed` naming the phase, the waiting reason and the event. It
 * decides nothing: the same rules are the machine's guards.
 */
export function runtimeRefusal(
  session: { readonly value: unknown; readonly context: SessionContext },
  event: TimedRuntimeEvent,
): RoleboxError {
  const reason = session.context.waitingReason;
  const phase = topStateOf(session.value);
  if (
    (event.type === 'user_approved_next_step' || event.type === 'user_rejected_next_step') &&
    reason?.kind === 'approve_step' &&
    !decisionAwaitsApproval(reason, event.decisionId)
  ) {
    return new RoleboxError(
      'decision_mismatch',
      `${event.type}: decision ${describeValue(event.decisionId)} is not the one awaiting approval (${reason.decisionId})`,
      { expected: reason.decisionId, got: event.decisionId },
    );
  }
  if (
    (event.type === 'user_accepted_artifact' || event.type === 'user_rejected_artifact') &&
    reason?.kind === 'review_artifact' &&
    !artifactAwaitsReview(reason, event.artifactId)
  ) {
    return new RoleboxError(
      'artifact_mismatch',
      `${event.type}: artifact ${describeValue(event.artifactId)} is not the one under review (${reason.artifactId})`,
      { expected: reason.artifactId, got: event.artifactId },
    );
  }
  if (
    event.type === 'skill_selected' &&
    reason?.kind === 'skill_selection' &&
    !skillOffered(reason, event.skill)
  ) {
    return new RoleboxError(
      'invalid_event',
      `skill_selected: ${describeValue(event.skill)} is not one of the available skills (${reason.availableSkills.map((skill) => skill.name).join(', ')})`,
      { skill: event.skill },
    );
  }
  const where = reason ? `${phase}.${reason.kind}` : phase;
  const why =
    (event.type === 'programmatic_review_passed' || event.type === 'programmatic_review_failed') &&
    phase === 'running'
      ? ' (no artifact is under programmatic review)'
      : event.type === 'wait_expired' && phase === 'waiting_user'
        ? waitNotExpired(session.context.waitExpiresAt)
        : '';
  return new RoleboxError(
    'event_not_allowed',
    `event ${event.type} is not allowed in phase ${phase}${reason ? `, waiting reason ${reason.kind}` : ''} (${where})${why}`,
    { phase, waitingReason: reason?.kind ?? null, event: event.type },
  );
}

/** Why `wait_expired` is refused in `waiting_user`: the wait has no deadline, or not yet. */
function waitNotExpired(waitExpiresAt: number | null): string {
  return waitExpiresAt === null
    ? ' (this wait has no deadline: limits.waitUserTimeoutMs is not set)'
    : ` (this wait expires at ${new Date(waitExpiresAt).toISOString()})`;
}
