import * as restate from '@restatedev/restate-sdk';
import { describeValue, RoleboxError } from '../errors.js';
import type { RuntimeEvent, SessionEffect, SessionEffectType } from '../session/runtime-types.js';
import { SESSION_EFFECT_TYPES } from '../session/runtime-types.js';
import { terminalError } from './terminal-error.js';

/** What a session object sends its effect service for one pending effect. */
export interface EffectRequest {
  readonly effect: SessionEffect;
  /** Where to report the effect's end: the session object's name and key. */
  readonly session: { readonly object: string; readonly key: string };
}

/** What an effect service reports back to the session (`effectReturned`). */
export interface EffectReport {
  readonly effectId: string;
  /** The handler's runtime events: applied in one step as the effect's answer. */
  readonly events?: readonly RuntimeEvent[];
  /** Why the handler failed for good: the effect is `failed`, the session `runtime_failed`. */
  readonly error?: string;
}

/**
 * Carries out one effect in its own durable invocation. Do every call to a model or an API
 * inside `ctx.run(...)`: the invocation is retried when its process dies, and a journaled
 * `ctx.run` answers from the journal, so a retry never calls the model twice. Return the
 * runtime events that answer the effect; throw a `restate.TerminalError` for an effect
 * that failed for good, any other error to have Restate retry it.
 */
export type RestateEffectHandler<T extends SessionEffectType> = (
  effect: Extract<SessionEffect, { readonly type: T }>,
  ctx: restate.Context,
) => Promise<readonly RuntimeEvent[] | undefined> | readonly RuntimeEvent[] | undefined;

/** One optional {@link RestateEffectHandler} per effect type. */
export type RestateEffectHandlers = {
  readonly [T in SessionEffectType]?: RestateEffectHandler<T>;
};

/**
 * A Restate service that runs a session's effects (issue 24): the session object sends it
 * each pending effect, with the effect id as idempotency key (so an effect runs in one
 * invocation however often it is sent), outside its own exclusive handler (a model call
 * never blocks the session's signals); the handler's events go back to the session's
 * private `effectReturned`, which applies them once. An effect type without a handler is
 * left pending, for the host to settle (`settleEffect`). Pass its name as the endpoint's
 * `effects: { service }`.
 * Throws: `invalid_argument` for a bad name or a handler that is not a function.
 */
export function roleboxEffectService(name: string, handlers: RestateEffectHandlers) {
  if (typeof name !== 'string' || name === '')
    throw new RoleboxError(
      'invalid_argument',
      `an effect service needs a name, got ${describeValue(name)}`,
    );
  if (typeof handlers !== 'object' || handlers === null)
    throw new RoleboxError(
      'invalid_argument',
      `an effect service needs handlers, got ${describeValue(handlers)}`,
    );
  for (const [type, handler] of Object.entries(handlers))
    if (
      !(SESSION_EFFECT_TYPES as readonly string[]).includes(type) ||
      typeof handler !== 'function'
    )
      throw new RoleboxError(
        'invalid_argument',
        `effect handler ${describeValue(type)} must be a function for one of ${SESSION_EFFECT_TYPES.join(', ')}, got ${describeValue(handler)}`,
      );
  return restate.service({
    name,
    handlers: {
      run: async (ctx: restate.Context, body: unknown): Promise<void> => {
        const request = effectRequestOf(body);
        const { effect } = request;
        const handler = Object.hasOwn(handlers, effect.type)
          ? (handlers[effect.type] as RestateEffectHandler<typeof effect.type> | undefined)
          : undefined;
        if (!handler) return;
        let report: EffectReport;
        try {
          const events = await handler(effect as never, ctx);
          report = { effectId: effect.id, events: events ?? [] };
        } catch (error) {
          // A CancelledError (the invocation was cancelled) and a passing error go on:
          // Restate ends or retries the invocation; only a terminal error fails the effect.
          if (error instanceof restate.TerminalError && !(error instanceof restate.CancelledError))
            report = { effectId: effect.id, error: error.message || 'effect failed' };
          else throw error;
        }
        ctx.genericSend({
          service: request.session.object,
          method: 'effectReturned',
          key: request.session.key,
          parameter: report,
          inputSerde: restate.serde.json,
        });
      },
    },
  });
}

/** True for a string that is not empty. */
const isName = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * The body of an effect service's `run` as an {@link EffectRequest}. Throws: a terminal
 * error carrying `invalid_argument` (HTTP 400): Restate would retry a TypeError forever.
 */
export function effectRequestOf(body: unknown): EffectRequest {
  const request = body as Partial<EffectRequest> | null;
  const effect = request?.effect as Partial<SessionEffect> | undefined;
  const valid =
    typeof request === 'object' &&
    request !== null &&
    isName(effect?.id) &&
    (SESSION_EFFECT_TYPES as readonly unknown[]).includes(effect?.type) &&
    isName(request.session?.object) &&
    isName(request.session?.key);
  if (!valid)
    throw terminalError(
      new RoleboxError('invalid_argument', `not an effect request: ${describeValue(body)}`),
    );
  return request as EffectRequest;
}

/**
 * The body of a session's `effectReturned` as an {@link EffectReport}. Throws: a terminal
 * error carrying `invalid_argument`.
 */
export function effectReportOf(body: unknown): EffectReport {
  const report = body as Partial<EffectReport> | null;
  const valid =
    typeof report === 'object' &&
    report !== null &&
    isName(report.effectId) &&
    (report.events === undefined || Array.isArray(report.events)) &&
    (report.error === undefined || isName(report.error));
  if (!valid)
    throw terminalError(
      new RoleboxError('invalid_argument', `not an effect report: ${describeValue(body)}`),
    );
  return report as EffectReport;
}
