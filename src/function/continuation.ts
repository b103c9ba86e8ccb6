/** Why a continuation was not granted at an idle cycle. */
export const CONTINUATION_BLOCKS = ['global_cap', 'function_cap', 'cooldown'] as const;

/** One of {@link CONTINUATION_BLOCKS}. */
export type ContinuationBlock = (typeof CONTINUATION_BLOCKS)[number];

/** The continuation limits of SPEC §2.3; all configurable through `createRolebox({ limits })`. */
export interface ContinuationLimits {
  /** Most continuations per session (default 25). */
  readonly perSession: number;
  /**
   * Cooldowns: after the n-th continuation of a function, it may not continue again for
   * this many turns (default `{ 3: 1, 5: 3 }`).
   */
  readonly cooldownTurns: Readonly<Record<number, number>>;
}

/** The defaults of SPEC §2.3. */
export const DEFAULT_CONTINUATION_LIMITS: ContinuationLimits = {
  perSession: 25,
  cooldownTurns: { 3: 1, 5: 3 },
};

/** A function's continuation bookkeeping, as kept in its context. */
export interface ContinuationState {
  /** Continuations granted on this function's behalf. */
  readonly continuations: number;
  /** The function may not continue at idles where the session's completed turns are ≤ this. */
  readonly cooldownUntilTurn: number;
}

/**
 * Why a function may not ask for a continuation now, or undefined when it may.
 * `currentTurn` is the session's count of completed turns at this idle.
 */
export function functionContinuationBlock(
  state: ContinuationState,
  continueMax: number,
  currentTurn: number,
): Exclude<ContinuationBlock, 'global_cap'> | undefined {
  if (state.continuations >= continueMax) return 'function_cap';
  if (currentTurn <= state.cooldownUntilTurn) return 'cooldown';
  return undefined;
}

/** The state after a continuation is granted at `currentTurn`, with the cooldown it earns. */
export function grantContinuation(
  state: ContinuationState,
  currentTurn: number,
  limits: ContinuationLimits,
): ContinuationState {
  const continuations = state.continuations + 1;
  const cooldown = limits.cooldownTurns[continuations] ?? 0;
  return {
    continuations,
    cooldownUntilTurn: cooldown > 0 ? currentTurn + cooldown : state.cooldownUntilTurn,
  };
}
