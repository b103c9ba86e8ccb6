import { describeValue, RoleboxError } from '../errors.js';
import type { RuntimeEvent, SessionEffect } from '../session/runtime-types.js';
import { SESSION_EFFECT_TYPES } from '../session/runtime-types.js';
import { terminalError } from './terminal-error.js';

// What a session object and its effect service say to each other (issue 24 item 5), as
// JSON: the request that starts an effect's invocation, and the service's reports back to
// the object's private handlers `effectStarted`, `effectAttemptFailed` and `effectReturned`.
// Each body is checked when it arrives: a bad one is a terminal `invalid_argument`, which
// Restate does not retry (it would retry a TypeError forever).

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
 * An attempt of an effect's handler is about to start (`effectStarted`). The session
 * answers the attempt's number (its count of attempts, plus one), or null when the effect
 * is no longer to run (settled, cancelled, failed): then the service stops.
 */
export interface EffectAttemptStart {
  readonly effectId: string;
}

/**
 * An attempt of an effect's handler threw (`effectAttemptFailed`). The session answers the
 * milliseconds to wait before the next attempt, or null when there is none: it was the last
 * (`effectRetry.maxAttempts`) or `final`, and the effect is `failed`.
 */
export interface EffectAttemptFailure {
  readonly effectId: string;
  /** The attempt's number, as `effectStarted` answered it. */
  readonly attempt: number;
  readonly error: string;
  /** True when the handler threw a `restate.TerminalError`: no attempt follows. */
  readonly final?: boolean;
}

/** True for a string that is not empty. */
const isName = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** True for an object (not an array, not null). */
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The terminal `invalid_argument` for a body that is not `what`. */
const notA = (what: string, body: unknown) =>
  terminalError(new RoleboxError('invalid_argument', `not ${what}: ${describeValue(body)}`));

/**
 * The body of an effect service's `run` as an {@link EffectRequest}. Throws: a terminal
 * error carrying `invalid_argument` (HTTP 400).
 */
export function effectRequestOf(body: unknown): EffectRequest {
  const request = body as Partial<EffectRequest> | null;
  const effect = request?.effect as Partial<SessionEffect> | undefined;
  const valid =
    isRecord(request) &&
    isName(effect?.id) &&
    (SESSION_EFFECT_TYPES as readonly unknown[]).includes(effect?.type) &&
    isName(request.session?.object) &&
    isName(request.session?.key);
  if (!valid) throw notA('an effect request', body);
  return request as EffectRequest;
}

/**
 * The body of a session's `effectReturned` as an {@link EffectReport}. Throws: a terminal
 * error carrying `invalid_argument`.
 */
export function effectReportOf(body: unknown): EffectReport {
  const report = body as Partial<EffectReport> | null;
  const valid =
    isRecord(report) &&
    isName(report.effectId) &&
    (report.events === undefined || Array.isArray(report.events)) &&
    (report.error === undefined || isName(report.error));
  if (!valid) throw notA('an effect report', body);
  return report as EffectReport;
}

/**
 * The body of a session's `effectStarted` as an {@link EffectAttemptStart}. Throws: a
 * terminal error carrying `invalid_argument`.
 */
export function effectAttemptStartOf(body: unknown): EffectAttemptStart {
  if (!isRecord(body) || !isName(body.effectId)) throw notA('an effect attempt start', body);
  return { effectId: body.effectId };
}

/**
 * The body of a session's `effectAttemptFailed` as an {@link EffectAttemptFailure}. Throws:
 * a terminal error carrying `invalid_argument`.
 */
export function effectAttemptFailureOf(body: unknown): EffectAttemptFailure {
  const valid =
    isRecord(body) &&
    isName(body.effectId) &&
    Number.isSafeInteger(body.attempt) &&
    (body.attempt as number) >= 1 &&
    isName(body.error) &&
    (body.final === undefined || typeof body.final === 'boolean');
  if (!valid) throw notA('an effect attempt failure', body);
  return body as unknown as EffectAttemptFailure;
}
