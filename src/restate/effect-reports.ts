import * as restate from '@restatedev/restate-sdk';
import { type EffectRetry, retryDelay } from '../rolebox/effect-handlers.js';
import { deliverEffectCommand, type SessionHandle } from '../rolebox/session-handle.js';
import { parseRuntimeEvent } from '../session/runtime-event-schema.js';
import type { PendingEffect } from '../session/runtime-types.js';
import { effectAttemptFailureOf, effectAttemptStartOf, effectReportOf } from './effect-wire.js';
import type { WireHostEvent } from './wire.js';

/** One step of the session object, as an effect report runs it: `command` at the step's time. */
export type EffectReportStep = <T>(
  ctx: restate.ObjectContext,
  command: (session: SessionHandle, now: number) => T,
) => Promise<{ readonly result: T | null; readonly events: readonly WireHostEvent[] }>;

/** What the effect reports need of their session object. */
export interface EffectReportDeps {
  readonly step: EffectReportStep;
  /** Whether the object holds a session (a report to one closed since is ignored). */
  exists(ctx: restate.ObjectContext): Promise<boolean>;
  /** The endpoint's `effectRetry`, filled in. */
  readonly retry: EffectRetry;
}

/** The entry `effectId` of the outbox while a handler may still work on it (not failed, no result). */
function workable(session: SessionHandle, effectId: string): PendingEffect | undefined {
  const entry = session.view().pendingEffects.find((pending) => pending.id === effectId);
  return entry && entry.status !== 'failed' && entry.result === undefined ? entry : undefined;
}

/**
 * An attempt starts: the effect is `running`, its attempts counted, `effect_started`
 * emitted, as the in-process runner's `session.effect_started` does. Returns the attempt's
 * number, or null when the effect is no longer to be worked on.
 */
function startAttempt(session: SessionHandle, effectId: string): number | null {
  const entry = workable(session, effectId);
  if (!entry) return null;
  const attempt = entry.attempts + 1;
  deliverEffectCommand(session, { type: 'session.effect_started', effectId, attempt });
  return attempt;
}

/**
 * An attempt failed: retried after the backoff of `retry` (`effect_failed` with
 * `nextAttemptAt`), or, after the last attempt or a terminal error, the effect is `failed`
 * and the session gets `runtime_failed`, as in process. A report of an attempt that is not
 * the one running is stale, and changes nothing. Returns the milliseconds to wait before
 * the next attempt, or null when none follows.
 */
function failAttempt(
  session: SessionHandle,
  failure: ReturnType<typeof effectAttemptFailureOf>,
  now: number,
  retry: EffectRetry,
): number | null {
  const { effectId, attempt, error } = failure;
  const entry = workable(session, effectId);
  if (entry?.status !== 'running' || entry.attempts !== attempt) return null;
  const last = failure.final === true || attempt >= retry.maxAttempts;
  const delay = retryDelay(retry, attempt);
  deliverEffectCommand(session, {
    type: 'session.effect_attempt_failed',
    effectId,
    error,
    ...(last ? {} : { nextAttemptAt: now + delay }),
  });
  return last ? null : delay;
}

/**
 * A handler's end: its events applied in one step as the effect's answer (the effect
 * settled `by: 'handler'`, as in process), or its error fails it. Returns whether the
 * effect was still pending (a repeated report, or one for an effect the session moved past,
 * is ignored).
 */
function applyReturn(session: SessionHandle, report: ReturnType<typeof effectReportOf>): boolean {
  const { effectId, error } = report;
  if (!session.view().pendingEffects.some((entry) => entry.id === effectId)) return false;
  const events = (report.events ?? []).map((event) => parseRuntimeEvent(event));
  deliverEffectCommand(session, {
    type: 'session.settle_effect',
    effectId,
    by: 'handler',
    ...(error === undefined ? { events } : { error }),
  });
  return true;
}

/**
 * The session object's private handlers an effect service reports to (see
 * `roleboxEffectService`): `effectStarted`, `effectAttemptFailed` and `effectReturned`, each
 * one step of the session. Private, as `workerTerminated`: the ingress refuses them.
 */
export function effectReportHandlers(deps: EffectReportDeps) {
  const reported = <R, T>(
    parse: (body: unknown) => R,
    command: (session: SessionHandle, report: R, now: number) => T,
  ) =>
    restate.handlers.object.exclusive(
      { ingressPrivate: true },
      async (ctx: restate.ObjectContext, body: unknown) => {
        const report = parse(body);
        if (!(await deps.exists(ctx))) return { result: null, events: [] };
        return deps.step(ctx, (session, now) => command(session, report, now));
      },
    );
  return {
    effectStarted: reported(effectAttemptStartOf, (session, start) =>
      startAttempt(session, start.effectId),
    ),
    effectAttemptFailed: reported(effectAttemptFailureOf, (session, failure, now) =>
      failAttempt(session, failure, now, deps.retry),
    ),
    effectReturned: reported(effectReportOf, applyReturn),
  };
}
