import type { FunctionPhase } from './machine-types.js';

export type { FunctionPhase } from './machine-types.js';

/** The phase of a function actor's state value: `gated`, `complete`, else `active` (also while it activates). */
export function functionPhaseOf(value: unknown): FunctionPhase {
  return value === 'gated' ? 'gated' : value === 'complete' ? 'complete' : 'active';
}
