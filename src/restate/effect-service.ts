import * as restate from '@restatedev/restate-sdk';
import { describeValue, RoleboxError } from '../errors.js';
import { checkedEvents } from '../runtime/session-effect-runner.js';
import type { RuntimeEvent, SessionEffect, SessionEffectType } from '../session/runtime-types.js';
import { SESSION_EFFECT_TYPES } from '../session/runtime-types.js';
import {
  type EffectAttemptFailure,
  type EffectAttemptStart,
  type EffectReport,
  type EffectRequest,
  effectRequestOf,
} from './effect-wire.js';

/** What an effect handler on Restate is told besides its effect and context. */
export interface RestateEffectAttempt {
  /** This attempt's number, from 1 (as the session counts it: `pendingEffects[].attempts`). */
  readonly attempt: number;
  /** The session whose effect it is (its object's key). */
  readonly sessionId: string;
}

/**
 * Carries out one effect in its own durable invocation. Do every call to a model or an API
 * inside `ctx.run(...)`: the invocation is retried when its process dies, and a journaled
 * `ctx.run` answers from the journal, so a retry never calls the model twice. Return the
 * runtime events that answer the effect. A thrown error is a failed attempt, retried after
 * the endpoint's `effectRetry` backoff (a durable `ctx.sleep`) until its last attempt,
 * which fails the effect and the session (`runtime_failed`); a `restate.TerminalError`
 * fails it at once. An error inside a `ctx.run` is retried by Restate itself, under the
 * run's own retry options (`maxRetryAttempts`: once spent, `ctx.run` throws a
 * TerminalError, which fails the effect).
 */
export type RestateEffectHandler<T extends SessionEffectType> = (
  effect: Extract<SessionEffect, { readonly type: T }>,
  ctx: restate.Context,
  info: RestateEffectAttempt,
) => Promise<readonly RuntimeEvent[] | undefined> | readonly RuntimeEvent[] | undefined;

/** One optional {@link RestateEffectHandler} per effect type. */
export type RestateEffectHandlers = {
  readonly [T in SessionEffectType]?: RestateEffectHandler<T>;
};

/**
 * A Restate service that runs a session's effects (issue 24): the session object sends it
 * each pending effect, with the effect id as idempotency key (so an effect runs in one
 * invocation however often it is sent), outside its own exclusive handler (a model call
 * never blocks the session's signals). Each attempt is announced to the session
 * (`effectStarted`: the effect is `running`, its attempts counted, `effect_started`
 * emitted); a failed one is reported (`effectAttemptFailed`: `effect_failed`), and the
 * session answers when to try again, by the endpoint's `effectRetry`, or that the effect
 * failed; the handler's events go back to the session's private `effectReturned`, which
 * applies them once. An effect the session no longer waits for is not attempted again.
 * An effect type without a handler is left pending, for the host to settle
 * (`settleEffect`). Pass its name as the endpoint's `effects: { service }`.
 * Throws: `invalid_argument` for a bad name or a handler that is not a function.
 */
export function roleboxEffectService(name: string, handlers: RestateEffectHandlers) {
  checkEffectService(name, handlers);
  return restate.service({
    name,
    handlers: {
      run: async (ctx: restate.Context, body: unknown): Promise<void> => {
        const request = effectRequestOf(body);
        const { effect } = request;
        const handler = Object.hasOwn(handlers, effect.type)
          ? (handlers[effect.type] as RestateEffectHandler<typeof effect.type> | undefined)
          : undefined;
        if (handler) await runAttempts(ctx, request, handler);
      },
    },
  });
}

/** Checks an effect service's name and handlers. Throws: `invalid_argument`. */
function checkEffectService(name: unknown, handlers: unknown): void {
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
}

/** What one attempt came to: the handler's events, or why it failed (`final`: a terminal error). */
type AttemptOutcome =
  | { readonly events: readonly RuntimeEvent[] }
  | { readonly error: string; readonly final?: boolean };

/**
 * The attempts of one effect, in this one invocation: each asked of the session first (it
 * counts it, or says the effect is no longer to run), each failure reported to it and
 * followed by a durable sleep for as long as it answers, the events sent back at the end.
 * Every step is journaled, so an invocation retried after its endpoint died goes on from
 * where it was, its attempts not counted again.
 */
async function runAttempts(
  ctx: restate.Context,
  request: EffectRequest,
  handler: RestateEffectHandler<SessionEffectType>,
): Promise<void> {
  const { effect, session } = request;
  const call = async <T>(method: string, parameter: unknown): Promise<T | null> => {
    const answer = await ctx.genericCall<unknown, { result: T | null }>({
      service: session.object,
      method,
      key: session.key,
      parameter,
      inputSerde: restate.serde.json,
      outputSerde: restate.serde.json,
    });
    return answer.result;
  };
  for (;;) {
    const start: EffectAttemptStart = { effectId: effect.id };
    const attempt = await call<number>('effectStarted', start);
    if (attempt === null) return;
    const outcome = await attemptOutcome(ctx, handler, request, attempt);
    if ('events' in outcome) {
      const report: EffectReport = { effectId: effect.id, events: outcome.events };
      ctx.genericSend({
        service: session.object,
        method: 'effectReturned',
        key: session.key,
        parameter: report,
        inputSerde: restate.serde.json,
      });
      return;
    }
    const failure: EffectAttemptFailure = { effectId: effect.id, attempt, ...outcome };
    const retryInMs = await call<number>('effectAttemptFailed', failure);
    if (retryInMs === null) return;
    await ctx.sleep(retryInMs, `retry ${effect.id}`);
  }
}

/**
 * Runs the handler once and journals what came of it (`ctx.run`): a replay of the
 * invocation takes the path its first run took, even when the handler's own code, run
 * again, would now come out otherwise. Its events are checked as the in-process runner
 * checks them: something else is a failed attempt that names it. A cancelled invocation,
 * or an attempt Restate ended, is not an attempt's failure: it goes on up.
 */
async function attemptOutcome(
  ctx: restate.Context,
  handler: RestateEffectHandler<SessionEffectType>,
  { effect, session }: EffectRequest,
  attempt: number,
): Promise<AttemptOutcome> {
  let outcome: AttemptOutcome;
  try {
    const info: RestateEffectAttempt = { attempt, sessionId: session.key };
    outcome = { events: checkedEvents(await handler(effect as never, ctx, info)) };
  } catch (error) {
    if (error instanceof restate.CancelledError || ctx.request().attemptCompletedSignal.aborted)
      throw error;
    const message = error instanceof Error ? error.message : describeValue(error);
    outcome = {
      error: message || 'the effect handler failed',
      ...(error instanceof restate.TerminalError ? { final: true } : {}),
    };
  }
  return ctx.run(`${effect.id} attempt ${attempt}`, () => outcome);
}
