/**
 * What a session tells its functions about itself with every event, so that their
 * conditions (`artifact_exists`, `user_approval`, `turn_count`) can be decided inside the
 * function actor without reaching outside it.
 */
export interface SessionFacts {
  /** Turns completed: the number of idle cycles so far. */
  readonly turn: number;
  /** True when the user sent a message since the last idle. */
  readonly userMessageInTurn: boolean;
  /** Names of the session's artifacts. */
  readonly artifacts: readonly string[];
}
