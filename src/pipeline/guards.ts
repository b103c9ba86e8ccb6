import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { HandlerContext } from './context.js';
import type { TerminalResult } from './results.js';

/**
 * The lane a guard keeps its state on: `<lane>::debounce`, `<lane>::throttle`,
 * `<lane>::outer-timeout`, so a debounce, a throttle and an outer timeout given the same
 * lane never read each other's state.
 */
export function guardLane(guard: 'debounce' | 'throttle' | 'outer-timeout', lane: string): string {
  return `${lane}::${guard}`;
}

/** Which lane, and the window in milliseconds. */
export interface GuardOptions {
  readonly lane: string;
  readonly ms: number;
}

/** What a guard returns when it holds the handler back: a `wait` with the delay to retry after. */
export interface GuardWait {
  readonly status: 'wait';
  readonly pending: {
    readonly guard: 'debounce' | 'throttle';
    readonly lane: string;
    readonly delayMs: number;
  };
}

function checkOptions(guard: string, options: GuardOptions): void {
  checkOptionNames(options, ['lane', 'ms'], `${guard} options`);
  if (typeof options?.lane !== 'string' || options.lane === '') {
    throw new RoleboxError(
      'invalid_argument',
      `${guard}: lane must be a non-empty string, got ${describeValue(options?.lane)}`,
    );
  }
  if (typeof options.ms !== 'number' || !Number.isFinite(options.ms) || options.ms < 0) {
    throw new RoleboxError(
      'invalid_argument',
      `${guard}: ms must be a number ≥ 0, got ${describeValue(options.ms)}`,
    );
  }
}

/**
 * Debounce: an event within `ms` of the lane's last one extends the window (touches the
 * lane) and waits `delayMs = ms`; an event after a quiet `ms` (or the first) touches the
 * lane and passes (returns undefined).
 * Use when: a burst of events should be handled once. `const held = await debounce(ctx, …);
 * if (held) return held;`
 */
export async function debounce(
  ctx: HandlerContext,
  options: GuardOptions,
): Promise<GuardWait | undefined> {
  checkOptions('debounce', options);
  const lane = guardLane('debounce', options.lane);
  const { lastEventAt } = await ctx.guards.get(lane);
  await ctx.guards.touch(lane);
  if (lastEventAt !== undefined && ctx.now() - lastEventAt < options.ms) {
    return {
      status: 'wait',
      pending: { guard: 'debounce', lane: options.lane, delayMs: options.ms },
    };
  }
  return undefined;
}

/**
 * Throttle: within `ms` of the lane's last passing event, waits `ms - elapsed` without
 * touching the lane; otherwise touches it and passes.
 * Use when: at most one event per `ms` should get through.
 */
export async function throttle(
  ctx: HandlerContext,
  options: GuardOptions,
): Promise<GuardWait | undefined> {
  checkOptions('throttle', options);
  const lane = guardLane('throttle', options.lane);
  const { lastEventAt } = await ctx.guards.get(lane);
  if (lastEventAt !== undefined) {
    const elapsed = ctx.now() - lastEventAt;
    if (elapsed < options.ms) {
      return {
        status: 'wait',
        pending: { guard: 'throttle', lane: options.lane, delayMs: options.ms - elapsed },
      };
    }
  }
  await ctx.guards.touch(lane);
  return undefined;
}

/**
 * Outer timeout: the first call starts the lane's clock; once `now - startedAt ≥ ms` the
 * handler should stop, with `conclude` and `reason: 'timed_out'`. Only that first call
 * touches the lane, so it expires `limits.guardTtlMs` after it started: a scope that timed
 * out starts a new clock after that, and a window `ms` at or above the TTL never times out.
 * Use when: a multi-hop process must give up after a while, however busy it is.
 */
export async function outerTimeout(
  ctx: HandlerContext,
  options: GuardOptions,
): Promise<TerminalResult | undefined> {
  checkOptions('outerTimeout', options);
  const lane = guardLane('outer-timeout', options.lane);
  const { startedAt } = await ctx.guards.get(lane);
  if (startedAt === undefined) {
    await ctx.guards.touch(lane);
    return undefined;
  }
  const elapsedMs = ctx.now() - startedAt;
  if (elapsedMs >= options.ms) {
    return {
      status: 'conclude',
      concluded: { reason: 'timed_out', lane: options.lane, elapsedMs },
    };
  }
  return undefined;
}
