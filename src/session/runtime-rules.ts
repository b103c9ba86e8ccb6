import type { WaitingReason } from './runtime-types.js';

// The rules of SPEC §4.2 that depend on what the session waits for. The session machine
// uses them as guards; the facade uses the same ones to say why the machine refused.

/** An approval or rejection names the decision that awaits approval. */
export function decisionAwaitsApproval(reason: WaitingReason | null, decisionId: string): boolean {
  return reason?.kind === 'approve_step' && reason.decisionId === decisionId;
}

/** An acceptance or rejection names the artifact under review. */
export function artifactAwaitsReview(reason: WaitingReason | null, artifactId: string): boolean {
  return reason?.kind === 'review_artifact' && reason.artifactId === artifactId;
}

/** A skill may be selected: one the session offered (any, when it offered none). */
export function skillOffered(reason: WaitingReason | null, skill: string): boolean {
  if (reason?.kind !== 'skill_selection') return false;
  return (
    reason.availableSkills.length === 0 ||
    reason.availableSkills.some((offered) => offered.name === skill)
  );
}
