import type { FunctionKv } from '../signal/ledger.js';

/**
 * A condition as written in a function definition: `name`, `name(arg)`, or a combination
 * `{ all: [...] }`, `{ any: [...] }`, `{ not: ... }`.
 */
export type Condition =
  | string
  | { readonly all: readonly Condition[] }
  | { readonly any: readonly Condition[] }
  | { readonly not: Condition };

/** A parsed, validated condition. */
export type ConditionAst =
  | { readonly kind: 'named'; readonly name: string; readonly arg?: string; readonly text: string }
  | { readonly kind: 'all'; readonly of: readonly ConditionAst[] }
  | { readonly kind: 'any'; readonly of: readonly ConditionAst[] }
  | { readonly kind: 'not'; readonly of: ConditionAst };

/** Everything a named condition may look at: one function's state plus its session's facts. */
export interface ConditionEnv {
  /** The function's key-value store (ledger at `__signals_observed`). */
  readonly kv: FunctionKv;
  /** Evidence tags seen by the function (`paused`, observe `set_evidence` tags, …). */
  readonly evidenceObserved: Readonly<Record<string, boolean>>;
  /** Tool names the host reported since the function was activated. */
  readonly toolsObserved: readonly string[];
  /** The function's `requires_evidence` tags. */
  readonly requiresEvidence: readonly string[];
  /** Names of the session's artifacts. */
  readonly artifacts: readonly string[];
  /** Turns completed in the session (idle cycles so far). */
  readonly currentTurn: number;
  /** `currentTurn` when the function was activated. */
  readonly activatedAtTurn: number;
  /** True when the user sent a message since the last idle. */
  readonly userMessageInTurn: boolean;
  /**
   * True while a function's gate is decided: there `signal_observed(answer)` follows the
   * approval requests (SPEC §9) instead of the ledger's level semantics. Absent: false.
   */
  readonly deciding?: 'gate';
}

/** How a named condition treats its argument. */
export type ConditionArgumentRule = 'required' | 'none' | 'optional';

/** The implementation of a named condition. */
export interface NamedCondition {
  /** Decides the condition; must be pure. */
  readonly evaluate: (arg: string | undefined, env: ConditionEnv) => boolean;
  /** Whether `name(arg)` needs, forbids or allows an argument (default `optional`). */
  readonly argument?: ConditionArgumentRule;
  /** Checks an argument at load time; returns what is wrong with it, or undefined. */
  readonly validateArg?: (arg: string) => string | undefined;
  /** One line for docs and error messages. */
  readonly description?: string;
}

/** A host-supplied condition: a bare function or a full {@link NamedCondition}. */
export type ConditionImplementation = NamedCondition['evaluate'] | NamedCondition;
