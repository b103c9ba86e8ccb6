import type { HandlerContext } from './context.js';
import type { PipelineAction } from './nodes.js';
import type { ExecutorResult } from './results.js';

/** The guard lane that remembers an idempotency key. */
export function idempotencyLane(key: string): string {
  return `action-idempotency::${key}`;
}

/** True when a side effect under `key` already succeeded in this scope. */
export async function hasApplied(ctx: HandlerContext, key: string): Promise<boolean> {
  return (await ctx.guards.get(idempotencyLane(key))).lastEventAt !== undefined;
}

/** Remembers that the side effect under `key` succeeded. Call only after it did. */
export async function markApplied(ctx: HandlerContext, key: string): Promise<void> {
  await ctx.guards.touch(idempotencyLane(key));
}

/**
 * Runs an action's side effect at most once per key: skipped (with a detail saying so)
 * when the key is already applied; applied, and the key marked, when `effect` resolves;
 * failed, and the key left unmarked so a retry may run it, when `effect` throws.
 * Returns: the ExecutorResult for the action handler to return.
 */
export async function applyOnce(
  action: PipelineAction,
  ctx: HandlerContext,
  key: string,
  effect: () => unknown,
): Promise<ExecutorResult> {
  const startedAt = ctx.now();
  if (await hasApplied(ctx, key)) {
    return {
      actionId: action.actionId,
      attempt: { current: 1, startedAt, completedAt: ctx.now(), status: 'skipped' },
      detail: `already applied (idempotency key ${key})`,
      status: 'skipped',
    };
  }
  let output: unknown;
  try {
    output = await effect();
  } catch (error) {
    const code =
      typeof (error as { code?: unknown })?.code === 'string'
        ? (error as { code: string }).code
        : 'EFFECT_FAILED';
    return {
      actionId: action.actionId,
      attempt: { current: 1, startedAt, completedAt: ctx.now(), status: 'failed' },
      status: 'failed',
      error: { code, message: error instanceof Error ? error.message : String(error) },
    };
  }
  await markApplied(ctx, key);
  return {
    actionId: action.actionId,
    attempt: { current: 1, startedAt, completedAt: ctx.now(), status: 'succeeded' },
    ...(output === undefined ? {} : { output }),
    status: 'applied',
  };
}
