import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import {
  type RuntimeEvent,
  SESSION_EFFECT_TYPES,
  type SessionEffect,
  type SessionEffectType,
} from '../session/runtime-types.js';
import type { SessionHandle } from './session-handle.js';

/** What an effect handler is given besides its effect. */
export interface EffectHandlerContext {
  /** The session that emitted the effect (its handle: send, artifacts, view, …). */
  readonly session: SessionHandle;
  /**
   * Aborted when the effect is cancelled (the session moved past it: the step was rejected
   * or superseded, the flow finished or failed), when the session is closed, and when the
   * rolebox stops. A handler should stop its work then; what it returns is not applied.
   */
  readonly signal: AbortSignal;
  /** Which attempt this is, from 1 (a retry after a thrown error, or a run after a crash). */
  readonly attempt: number;
  /**
   * The effect's id, the same on every attempt and after a restart: a crash while the handler
   * runs calls it again with the same key. Handlers should be idempotent by it (pass it as
   * the idempotency key of the APIs they call, as LLM providers and most APIs allow).
   */
  readonly idempotencyKey: string;
}

/**
 * What a handler returns: the events that answer its effect, or nothing.
 * `void` so that a handler with no `return` (an `async` function included) type-checks.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler with no return statement returns void
export type EffectHandlerResult = readonly RuntimeEvent[] | undefined | void;

/**
 * Carries out one effect of type `T` (`createRolebox({ effects: { run_worker: … } })`).
 * Returns the runtime events that answer it (e.g. `worker_started`, `worker_completed`),
 * which are validated, recorded as the effect's result and saved, then applied once, in
 * one step; or nothing (an effect no event answers, like `emit_message`, is settled when its
 * handler returns). A thrown error is retried with backoff (`effectRetry`); after the last
 * attempt the effect is `failed` and the session gets `runtime_failed`.
 * A handler may run more than once for one effect (a crash while it ran): it must be
 * idempotent by `ctx.idempotencyKey`.
 */
export type EffectHandler<T extends SessionEffectType> = (
  effect: Extract<SessionEffect, { type: T }> & { readonly id: string },
  ctx: EffectHandlerContext,
) => EffectHandlerResult | Promise<EffectHandlerResult>;

/** One optional handler per effect type; effects without one go to the host as `effect` events. */
export type EffectHandlers = { readonly [T in SessionEffectType]?: EffectHandler<T> };

/** How a failed effect handler is retried (`createRolebox({ effectRetry })`). */
export interface EffectRetryOptions {
  /** Attempts in all, the first included (default 5); 1 means no retry. */
  readonly maxAttempts?: number;
  /** Delay before the second attempt, in ms of the injected clock (default 1 000); doubles after each. */
  readonly initialDelayMs?: number;
  /** The longest delay between two attempts (default 60 000). */
  readonly maxDelayMs?: number;
}

/** {@link EffectRetryOptions} with every field filled in. */
export type EffectRetry = Required<EffectRetryOptions>;

/** The retry policy when `effectRetry` leaves a field out. */
export const DEFAULT_EFFECT_RETRY: EffectRetry = {
  maxAttempts: 5,
  initialDelayMs: 1_000,
  maxDelayMs: 60_000,
};

/**
 * Checks `createRolebox({ effects })`: an object whose own keys are effect types and whose
 * values are functions. Returns a copy with only own properties.
 * Throws: `invalid_argument` naming the key or value (an unknown effect type, a name that is
 * an Object.prototype key, a handler that is not a function).
 */
export function checkEffectHandlers(value: unknown): EffectHandlers {
  if (value === undefined) return {};
  checkOptionNames(value, SESSION_EFFECT_TYPES, 'createRolebox effects', 'effect type');
  const handlers: Record<string, unknown> = {};
  for (const type of SESSION_EFFECT_TYPES) {
    if (!Object.hasOwn(value as object, type)) continue;
    const handler = (value as Record<string, unknown>)[type];
    if (handler === undefined) continue;
    if (typeof handler !== 'function')
      throw new RoleboxError(
        'invalid_argument',
        `effects.${type} must be a function (effect, ctx) => events, got ${describeValue(handler)}`,
        { option: 'effects', effectType: type },
      );
    handlers[type] = handler;
  }
  return handlers as EffectHandlers;
}

/**
 * Checks `createRolebox({ effectRetry })` and fills in {@link DEFAULT_EFFECT_RETRY}.
 * Throws: `invalid_argument` for an unknown field or one that is not a whole number in range.
 */
export function resolveEffectRetry(value: unknown): EffectRetry {
  if (value === undefined) return DEFAULT_EFFECT_RETRY;
  checkOptionNames(value, Object.keys(DEFAULT_EFFECT_RETRY), 'createRolebox effectRetry');
  const given = value as EffectRetryOptions;
  const whole = (name: keyof EffectRetry, min: number): number => {
    const chosen = given[name] ?? DEFAULT_EFFECT_RETRY[name];
    if (typeof chosen !== 'number' || !Number.isSafeInteger(chosen) || chosen < min)
      throw new RoleboxError(
        'invalid_argument',
        `effectRetry.${name} must be a whole number of at least ${min}, got ${describeValue(chosen)}`,
        { option: 'effectRetry', field: name },
      );
    return chosen;
  };
  const retry = {
    maxAttempts: whole('maxAttempts', 1),
    initialDelayMs: whole('initialDelayMs', 0),
    maxDelayMs: whole('maxDelayMs', 0),
  };
  if (retry.maxDelayMs < retry.initialDelayMs)
    throw new RoleboxError(
      'invalid_argument',
      `effectRetry.maxDelayMs (${retry.maxDelayMs}) must be at least initialDelayMs (${retry.initialDelayMs})`,
      { option: 'effectRetry', field: 'maxDelayMs' },
    );
  return retry;
}

/** The delay before attempt `attempt + 1`, after attempt `attempt` (from 1) failed. */
export function retryDelay(retry: EffectRetry, attempt: number): number {
  return Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** Math.max(0, attempt - 1));
}
