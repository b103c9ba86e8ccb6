import type { RoundResult, TaskStatus } from '../ports/dispatcher.js';
import type { LoopDeadline, LoopEffect } from './effect-types.js';
import type { LoopMode, LoopState } from './types.js';

/** How a loop ends; `finalizing` carries it to the terminal phase of the same name. */
export const LOOP_OUTCOMES = ['complete', 'cancelled', 'interrupted', 'error'] as const;

/** One of `LOOP_OUTCOMES`. */
export type LoopOutcome = (typeof LOOP_OUTCOMES)[number];

/** The context of a loop actor: its {@link LoopState} without `phase` (the state value is the phase). */
export interface LoopContext extends Omit<LoopState, 'phase'> {
  /** Set on the way into `finalizing`. */
  readonly finalizeAs?: LoopOutcome;
  /** A worker task `finalizing` must cancel. */
  readonly cancelWorkerTaskId?: string;
  /** `cancelNow` arrived while a dispatch was in flight: cancel as soon as it returns. */
  readonly stopNowRequested: boolean;
}

/** What a session passes when it starts a loop. */
export interface LoopInput {
  readonly loopId: string;
  readonly originSessionId: string;
  readonly agent: string;
  readonly basePrompt: string;
  readonly mode: LoopMode;
  readonly total: number;
  readonly requested: number;
  readonly clamped: boolean;
  readonly parentLoopId?: string;
  readonly promptFingerprint: string;
  readonly at: number;
}

/**
 * What the host runtime answers a loop's effects with ({@link LoopEffect}); `at` is the clock
 * time of the answer. Each names what it answers (the key, the task, the deadline), so a
 * stale answer is ignored.
 */
export type LoopAnswer =
  | { readonly type: 'loop.prepared'; readonly at: number }
  | { readonly type: 'loop.prepare_failed'; readonly reason: string; readonly at: number }
  | {
      readonly type: 'loop.round_dispatched';
      readonly key: string;
      readonly taskId: string;
      readonly workerSessionId: string;
      readonly at: number;
    }
  | {
      readonly type: 'loop.dispatch_failed';
      readonly key: string;
      readonly reason: string;
      readonly at: number;
    }
  | {
      readonly type: 'loop.worker_terminated';
      readonly taskId: string;
      readonly status: TaskStatus;
      readonly at: number;
    }
  | {
      readonly type: 'loop.result_collected';
      readonly taskId: string;
      readonly result: RoundResult;
      readonly at: number;
    }
  | {
      readonly type: 'loop.collect_failed';
      readonly taskId: string;
      readonly reason: string;
      readonly at: number;
    }
  | { readonly type: 'loop.worker_cancelled'; readonly taskId: string; readonly at: number }
  | {
      readonly type: 'loop.deadline_reached';
      readonly deadline: LoopDeadline;
      readonly at: number;
    };

/** Events a loop actor accepts: its session's stop requests and the runtime's answers. */
export type LoopEvent =
  | { readonly type: 'loop.request_cancel'; readonly at: number }
  | { readonly type: 'loop.cancel_now'; readonly at: number }
  | LoopAnswer;

/** The one event a loop sends to its session: it finished, with its last state. */
export type LoopToSessionEvent = {
  readonly type: 'loop.finished';
  readonly loopId: string;
  readonly state: LoopState;
};

/**
 * What a loop emits itself, for the runtime that listens to every live loop: its needs
 * (all of them; see `loopEffectsOf`), its progress notes and round starts (host events of
 * its origin session), and a cancelNow to cascade to its child loops.
 */
export type LoopEmitted =
  | {
      readonly type: 'loop_effects';
      readonly sessionId: string;
      readonly loopId: string;
      readonly effects: readonly LoopEffect[];
    }
  | {
      readonly type: 'note';
      readonly sessionId: string;
      readonly loopId: string;
      /** The round the note is about: a round's completion, or the round whose failure ended the loop. */
      readonly round?: number;
      readonly text: string;
    }
  | {
      readonly type: 'round_started';
      readonly sessionId: string;
      readonly loopId: string;
      readonly round: number;
      readonly taskId: string;
      readonly workerSessionId: string;
    }
  | { readonly type: 'loop_cascade_cancel'; readonly loopId: string; readonly at: number };
