import type { ContinuationBlock } from '../function/continuation.js';
import type { LoopEffect } from '../loop/effect-types.js';
import type { LoopPhase } from '../loop/types.js';
import type { SignalReceipt } from '../signal/reply.js';
import type { SessionEffect, SessionEffectType, WaitingReasonKind } from './runtime-types.js';

/** What one idle cycle of a session decided. */
export interface IdleReport {
  /** The session's completed turns after this idle. */
  readonly turn: number;
  /** True when the host should continue the agent (one continuation, at most, per idle). */
  readonly continued: boolean;
  /** Functions that asked for the continuation (all are served by the one continuation). */
  readonly continuing: readonly string[];
  /** Functions whose `continue_until` held and which completed. */
  readonly completed: readonly string[];
  /** Functions that wanted to continue but were refused, with why. */
  readonly blocked: readonly { readonly function: string; readonly reason: ContinuationBlock }[];
  /** Functions that are gated and so did not take part. */
  readonly gated: readonly string[];
}

/**
 * What the actor system emits for the host: what sessions, their functions and loops did.
 * The facade delivers them (with its own `error` and `inspector_command`) as host events.
 */
export type EmittedEvent =
  | {
      readonly type: 'signal';
      readonly sessionId: string;
      readonly receipt: SignalReceipt;
      /** The signal's payload (`{}` when it had none). */
      readonly payload: Readonly<Record<string, unknown>>;
      /** The live functions that recorded it. */
      readonly recordedOn: readonly string[];
    }
  | {
      readonly type: 'tool';
      readonly sessionId: string;
      readonly tool: string;
      readonly observedOn: number;
    }
  | { readonly type: 'idle'; readonly sessionId: string; readonly report: IdleReport }
  | {
      readonly type: 'continue';
      readonly sessionId: string;
      readonly functions: readonly string[];
      /** How many continuations this session has had, this one included. */
      readonly continuation: number;
    }
  | {
      readonly type: 'continue_blocked';
      readonly sessionId: string;
      readonly function: string;
      readonly reason: ContinuationBlock;
    }
  | {
      readonly type: 'function_activated';
      readonly sessionId: string;
      readonly function: string;
      readonly by: string;
    }
  | { readonly type: 'function_completed'; readonly sessionId: string; readonly function: string }
  | {
      readonly type: 'function_deactivated';
      readonly sessionId: string;
      readonly function: string;
      readonly by: string;
    }
  | {
      readonly type: 'artifact_written';
      readonly sessionId: string;
      readonly artifactId: string;
      readonly name: string;
    }
  | { readonly type: 'session_opened'; readonly sessionId: string }
  | {
      readonly type: 'effect';
      readonly sessionId: string;
      readonly effect: SessionEffect;
      /** True when it is delivered again (after an activation) because it is still pending. */
      readonly redelivered?: boolean;
    }
  | {
      readonly type: 'effect_started';
      readonly sessionId: string;
      readonly effectId: string;
      readonly effectType: SessionEffectType;
      readonly attempt: number;
    }
  | {
      readonly type: 'effect_settled';
      readonly sessionId: string;
      readonly effectId: string;
      readonly effectType: SessionEffectType;
      /**
       * What settled it: the runtime event that answered it, `handler` (its handler's result,
       * applied), `host` (`session.settleEffect`), `delivered` (an `emit_message` with no
       * handler), or `cancelled`.
       */
      readonly by: string;
      /** Why it was cancelled, when `by` is `cancelled`. */
      readonly reason?: string;
      /** A result's events the session no longer accepted (skipped), when there were any. */
      readonly skipped?: number;
    }
  | {
      readonly type: 'effect_failed';
      readonly sessionId: string;
      readonly effectId: string;
      readonly effectType: SessionEffectType;
      readonly attempt: number;
      readonly error: string;
      /** When it will be tried again; absent after the last attempt (the effect is `failed`). */
      readonly nextAttemptAt?: number;
    }
  | {
      /** A wait for the user outlived `limits.waitUserTimeoutMs`: the session is in `error`. */
      readonly type: 'wait_expired';
      readonly sessionId: string;
      /** The waiting reason that went unanswered. */
      readonly waitingReason: WaitingReasonKind;
      /** The deadline that passed (clock time). */
      readonly expiresAt: number;
    }
  | {
      readonly type: 'note';
      readonly sessionId: string;
      readonly loopId: string;
      /** The round the note is about: a round's completion, or the round whose failure ended the loop. */
      readonly round?: number;
      readonly text: string;
    }
  | { readonly type: 'loop_started'; readonly sessionId: string; readonly loopId: string }
  | {
      readonly type: 'round_started';
      readonly sessionId: string;
      readonly loopId: string;
      readonly round: number;
      readonly taskId: string;
      readonly workerSessionId: string;
    }
  | {
      readonly type: 'loop_finished';
      readonly sessionId: string;
      readonly loopId: string;
      readonly phase: LoopPhase;
    };

/**
 * A loop's effects on their way to the host runtime, which performs them and answers the
 * loop. Not a host event: the facade hands it to the runtime and never to `rb.on` handlers.
 */
export interface LoopEffectsRequest {
  readonly type: 'loop_effects';
  readonly sessionId: string;
  readonly loopId: string;
  readonly effects: readonly LoopEffect[];
}

/**
 * A cancelNow that cascades (SPEC §3.5): these child loops, started from the cancelled
 * loop's workers, must be cancelled at once; the runtime reaches their sessions (activating
 * a passivated one). Not a host event.
 */
export interface LoopCascadeRequest {
  readonly type: 'loop_cascade';
  readonly loops: readonly { readonly loopId: string; readonly sessionId: string }[];
  readonly at: number;
}

/**
 * A loop's cancelNow, to cascade to its child loops: the runtime finds them in the loop
 * registry and stops each (a {@link LoopCascadeRequest}). Not a host event.
 */
export interface LoopCascadeCancelRequest {
  readonly type: 'loop_cascade_cancel';
  readonly loopId: string;
  readonly at: number;
}

/** Everything the actor system emits: host events, and what only the runtime handles. */
export type SystemEmitted =
  | EmittedEvent
  | LoopEffectsRequest
  | LoopCascadeRequest
  | LoopCascadeCancelRequest;
