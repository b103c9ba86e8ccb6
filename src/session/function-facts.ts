import type { SessionFacts } from '../function/session-facts.js';
import type { ArtifactRecord } from './artifact.js';
import type { SessionContext } from './machine-types.js';

/**
 * The facts a session tells its functions with every event: its turns, whether the user
 * spoke this turn, and the names of its artifacts (each once, first written first).
 * `extraArtifact` is a name being written in the same step, which the store does not hold
 * yet (its write is still on the way), so that `artifact_exists` holds at once.
 */
export function factsOf(
  context: Pick<SessionContext, 'turn' | 'userMessageInTurn'>,
  artifacts: readonly ArtifactRecord[],
  extraArtifact?: string,
): SessionFacts {
  const names = new Set(artifacts.map((artifact) => artifact.name));
  if (extraArtifact !== undefined) names.add(extraArtifact);
  return {
    turn: context.turn,
    userMessageInTurn: context.userMessageInTurn,
    artifacts: [...names],
  };
}
