import type { LoopEffect } from './effect-types.js';
import type { LoopContext } from './machine-types.js';
import { buildRoundPrompt } from './round-prompt.js';

/** The states of a loop that ask for something (the others ask for nothing). */
export type LoopEffectState =
  | 'activating'
  | 'sending'
  | 'waiting'
  | 'awaiting_worker'
  | 'summarizing'
  | 'cancelling_worker';

/** What a round's dispatch is sent with, from the rolebox's limits. */
export interface RoundSettings {
  readonly roundTimeoutMs: number;
  readonly seedCharCap: number;
}

/**
 * Everything a loop needs from the world while it is in `state`: the full set, so that the
 * runtime can start what is new and stop what is no longer asked for (a watch, a deadline).
 * The same function serves a state's entry and a restored loop's activation.
 */
export function loopEffectsOf(
  state: LoopEffectState | undefined,
  context: LoopContext,
  settings: RoundSettings,
): readonly LoopEffect[] {
  switch (state) {
    case 'activating':
      return [{ kind: 'prepare' }];
    case 'sending':
      return [
        {
          kind: 'dispatch_round',
          key: `${context.id}:${context.current}`,
          round: {
            loopId: context.id,
            round: context.current,
            originSessionId: context.originSessionId,
            agent: context.agent,
            prompt: buildRoundPrompt(context, settings.seedCharCap),
            timeoutMs: settings.roundTimeoutMs,
          },
        },
      ];
    case 'waiting':
      return [
        {
          kind: 'arm_deadline',
          deadline: 'inter_round_delay',
          at: context.nextDispatchAt ?? context.updatedAt,
        },
      ];
    case 'awaiting_worker':
      return context.activeWorkerTaskId === undefined
        ? []
        : [
            { kind: 'watch_task', taskId: context.activeWorkerTaskId },
            {
              kind: 'arm_deadline',
              deadline: 'round_timeout',
              at: context.roundDeadlineAt ?? context.updatedAt,
            },
          ];
    case 'summarizing':
      return context.activeWorkerTaskId === undefined
        ? []
        : [{ kind: 'collect_result', taskId: context.activeWorkerTaskId }];
    case 'cancelling_worker':
      return context.cancelWorkerTaskId === undefined
        ? []
        : [{ kind: 'cancel_round', taskId: context.cancelWorkerTaskId }];
    default:
      return [];
  }
}

/** The effect state of a loop's state value (`{ dispatching: 'waiting' }` → `waiting`), if it has one. */
export function loopEffectStateOf(value: unknown): LoopEffectState | undefined {
  if (value === 'activating' || value === 'awaiting_worker' || value === 'summarizing')
    return value;
  if (typeof value !== 'object' || value === null) return undefined;
  const nested = value as { dispatching?: unknown; finalizing?: unknown };
  if (nested.dispatching === 'sending' || nested.dispatching === 'waiting')
    return nested.dispatching;
  if (nested.finalizing === 'cancelling_worker') return 'cancelling_worker';
  return undefined;
}

/**
 * What a loop's context lacks for its state to ask for what it needs (a task to watch, a
 * deadline to arm), as text; undefined when nothing is missing. A stored loop that lacks
 * it would wait forever: such a record is refused.
 */
export function loopStateLacks(value: unknown, context: Partial<LoopContext>): string | undefined {
  switch (loopEffectStateOf(value)) {
    case 'awaiting_worker':
      if (context.activeWorkerTaskId === undefined)
        return 'activeWorkerTaskId (the task it waits for)';
      if (context.roundDeadlineAt === undefined) return 'roundDeadlineAt (the round timeout)';
      return undefined;
    case 'summarizing':
      return context.activeWorkerTaskId === undefined
        ? 'activeWorkerTaskId (the task whose result it reads)'
        : undefined;
    case 'cancelling_worker':
      return context.cancelWorkerTaskId === undefined
        ? 'cancelWorkerTaskId (the task it cancels)'
        : undefined;
    case 'waiting':
      return context.nextDispatchAt === undefined
        ? 'nextDispatchAt (when the next round starts)'
        : undefined;
    default:
      return undefined;
  }
}
