import type { RoundInput } from '../ports/dispatcher.js';

/** The two deadlines a loop keeps in its context. */
export const LOOP_DEADLINES = ['round_timeout', 'inter_round_delay'] as const;

/** One of {@link LOOP_DEADLINES}. */
export type LoopDeadline = (typeof LOOP_DEADLINES)[number];

/**
 * What a loop asks of the world in its current state (DESIGN §7 step model). The machine
 * performs no I/O: the host runtime performs these through the dispatcher and the clock and
 * answers with events. Every one is safe to perform twice (after a restart, on activation):
 * a dispatch is idempotent by `key`, a watch first asks the task's status, a deadline armed
 * again replaces the one before.
 */
export type LoopEffect =
  /** Check that rounds can be dispatched; answered with `loop.prepared` or `loop.prepare_failed`. */
  | { readonly kind: 'prepare' }
  /** Start the round's worker task; answered with `loop.round_dispatched` or `loop.dispatch_failed`. */
  | { readonly kind: 'dispatch_round'; readonly key: string; readonly round: RoundInput }
  /** Report when the task reaches a terminal status: `loop.worker_terminated`. */
  | { readonly kind: 'watch_task'; readonly taskId: string }
  /** Read the finished task's result: `loop.result_collected` or `loop.collect_failed`. */
  | { readonly kind: 'collect_result'; readonly taskId: string }
  /** Stop the task: `loop.worker_cancelled` (also when it had ended already). */
  | { readonly kind: 'cancel_round'; readonly taskId: string }
  /** Fire at `at`: `loop.deadline_reached`. */
  | { readonly kind: 'arm_deadline'; readonly deadline: LoopDeadline; readonly at: number };
