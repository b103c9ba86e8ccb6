import type { SignalArgs } from '../signal/schema.js';
import type { ContinuationBlock } from './continuation.js';
import type { SessionFacts } from './session-facts.js';

/** The phases of a function FSM (SPEC §2.3). `complete` is final. */
export const FUNCTION_PHASES = ['active', 'gated', 'complete'] as const;

/** One of the phases of a function FSM. */
export type FunctionPhase = (typeof FUNCTION_PHASES)[number];

/** The context of a function actor: plain JSON. */
export interface FunctionContext {
  readonly sessionId: string;
  readonly name: string;
  /**
   * Key-value store; the signal ledger lives at `__signals_observed`, the approval requests
   * at `__approval_requests` (src/signal/approval-requests.ts).
   */
  readonly kv: Readonly<Record<string, unknown>>;
  readonly evidenceObserved: Readonly<Record<string, boolean>>;
  /** Tool names reported since activation, first report first. */
  readonly toolsObserved: readonly string[];
  readonly activatedAtTurn: number;
  readonly activatedAt: number;
  readonly updatedAt: number;
  /** The session's facts as of the last event. */
  readonly facts: SessionFacts;
  /** Continuations granted on this function's behalf. */
  readonly continuations: number;
  /** No continuation at idles where the session's turn is ≤ this. */
  readonly cooldownUntilTurn: number;
  /** The truth of each transition's `when` after the last event (for edge triggering). */
  readonly transitionsHeld: readonly boolean[];
  /**
   * What changed the function, counted: every signal but an answer or a rejection, every tool
   * observed, every kv value set (SPEC §9). A request records it when it opens; an answer
   * that saw an older one is refused (`stale_approval`).
   */
  readonly version: number;
}

/** What a session passes when it spawns a function. */
export interface FunctionInput {
  readonly sessionId: string;
  readonly name: string;
  readonly facts: SessionFacts;
  readonly at: number;
}

/** Events a session sends to its functions. Every one carries the session's current facts. */
export type FunctionEvent =
  | {
      readonly type: 'fn.signal';
      readonly signal: SignalArgs;
      readonly facts: SessionFacts;
      readonly at: number;
      /** The request this signal expires (its deadline came; sent by the session, SPEC §9). */
      readonly expires?: string;
      /** The signal came from the host, not an agent (SPEC §9: host-only requests). */
      readonly byHost?: true;
    }
  | {
      readonly type: 'fn.tool';
      readonly tool: string;
      readonly facts: SessionFacts;
      readonly at: number;
    }
  | {
      readonly type: 'fn.idle';
      readonly cycle: number;
      readonly facts: SessionFacts;
      readonly at: number;
    }
  | { readonly type: 'fn.facts'; readonly facts: SessionFacts; readonly at: number }
  | { readonly type: 'fn.resume'; readonly facts: SessionFacts; readonly at: number }
  | {
      readonly type: 'fn.kv_set';
      readonly key: string;
      readonly value: unknown;
      readonly facts: SessionFacts;
      readonly at: number;
    }
  | { readonly type: 'fn.continue_granted'; readonly turn: number; readonly at: number }
  /** The host moved an open request's deadline (`session.extendRequest`, SPEC §9). */
  | {
      readonly type: 'fn.extend_request';
      readonly requestId: string;
      readonly expiresAt: number;
      readonly by?: string;
      readonly at: number;
    };

/** What a function decided at an idle cycle. */
export type FunctionIdleOutcome =
  | { readonly kind: 'completed' }
  | { readonly kind: 'continue' }
  | { readonly kind: 'blocked'; readonly reason: Exclude<ContinuationBlock, 'global_cap'> }
  | { readonly kind: 'gated' }
  | { readonly kind: 'nothing_to_do' };

/** Events a function sends to its session. */
export type FunctionToSessionEvent =
  | {
      readonly type: 'fn.idle_result';
      readonly function: string;
      readonly cycle: number;
      readonly outcome: FunctionIdleOutcome;
    }
  | {
      readonly type: 'fn.capture';
      readonly function: string;
      readonly artifact: string;
      readonly content: string;
    }
  | {
      readonly type: 'fn.transition';
      readonly function: string;
      readonly activate: readonly string[];
      readonly deactivate: readonly string[];
    }
  | { readonly type: 'fn.completed'; readonly function: string; readonly context: FunctionContext };
