import type { TaskStatus } from '../ports/dispatcher.js';
import type { LoopMode, LoopState } from './types.js';

/** How a loop ends; `finalizing` carries it to the terminal phase of the same name. */
export const LOOP_OUTCOMES = ['complete', 'cancelled', 'interrupted', 'error'] as const;

/** One of {@link LOOP_OUTCOMES}. */
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

/** Events a loop actor accepts (from its session and its invoked actors). */
export type LoopEvent =
  | { readonly type: 'loop.request_cancel'; readonly at: number }
  | { readonly type: 'loop.cancel_now'; readonly at: number }
  | {
      readonly type: 'worker.terminated';
      readonly taskId: string;
      readonly status: TaskStatus;
      readonly at: number;
    }
  | { readonly type: 'round.timeout'; readonly at: number }
  | { readonly type: 'delay.elapsed'; readonly at: number };

/** Events a loop sends to its session. */
export type LoopToSessionEvent =
  | { readonly type: 'loop.note'; readonly loopId: string; readonly text: string }
  | {
      readonly type: 'loop.worker_started';
      readonly loopId: string;
      readonly round: number;
      readonly taskId: string;
      readonly workerSessionId: string;
    }
  | { readonly type: 'loop.finished'; readonly loopId: string; readonly state: LoopState }
  | { readonly type: 'loop.cascade_cancel'; readonly loopId: string };
