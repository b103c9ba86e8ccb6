import { describeValue, RoleboxError } from '../errors.js';
import { oldestOpenRequest, openRequestById, readRequests } from '../signal/approval-requests.js';
import { isPausingSignal } from '../signal/catalogue.js';
import type { SignalArgs } from '../signal/schema.js';
import { namedRequestId, seenVersionOf, timeoutOf } from './approval-step.js';
import type { FunctionContext } from './machine-types.js';

/** What the check reads of a live function: its context (name, kv with the ledger, version). */
export type LiveFunction = Pick<FunctionContext, 'name' | 'kv' | 'version'>;

/** The open requests of `functions`, for an error message. */
export function openIds(functions: readonly LiveFunction[]): string {
  const ids = functions.flatMap((fn) =>
    readRequests(fn.kv)
      .filter((request) => request.status === 'open')
      .map((request) => request.id),
  );
  return ids.join(', ') || '(none)';
}

/** A payload's `requestId` or `seenVersion` of the wrong type, as an error. */
function payloadShapeProblem(signal: SignalArgs): RoleboxError | undefined {
  const payload = signal.payload ?? {};
  if (Object.hasOwn(payload, 'requestId') && typeof payload.requestId !== 'string')
    return new RoleboxError(
      'invalid_signal_payload',
      `payload.requestId must be a request id like deploy:r1, got ${describeValue(payload.requestId)}`,
      { requestId: payload.requestId },
    );
  if (Object.hasOwn(payload, 'seenVersion') && seenVersionOf(signal) === undefined)
    return new RoleboxError(
      'invalid_signal_payload',
      `payload.seenVersion must be a whole number (a function's version), got ${describeValue(payload.seenVersion)}`,
      { seenVersion: payload.seenVersion },
    );
  return undefined;
}

/**
 * A pausing signal's `payload.timeoutMs` (its request's own deadline) that is not a positive
 * whole number of ms of at most a year, as an error; undefined when it has none or a good one.
 */
function timeoutProblem(signal: SignalArgs): RoleboxError | undefined {
  const payload = signal.payload ?? {};
  if (!Object.hasOwn(payload, 'timeoutMs') || timeoutOf(signal) !== undefined) return undefined;
  return new RoleboxError(
    'invalid_signal_payload',
    `payload.timeoutMs must be a positive whole number of milliseconds (at most a year), got ${describeValue(payload.timeoutMs)}`,
    { timeoutMs: payload.timeoutMs },
  );
}

/** `stale_approval` when an answer saw an older version of `fn` than its current one. */
function staleApproval(
  fn: LiveFunction,
  requestId: string,
  seen: number | undefined,
): RoleboxError | undefined {
  if (seen === undefined || seen >= fn.version) return undefined;
  return new RoleboxError(
    'stale_approval',
    `answer to request ${requestId} refused: it saw version ${seen} of function ${fn.name}, which changed since (now version ${fn.version}); look again and answer with seenVersion ${fn.version}`,
    { requestId, function: fn.name, seenVersion: seen, version: fn.version },
  );
}

/**
 * Why an answer, a rejection or a pausing signal cannot be applied to the session's live
 * functions (SPEC §9), as the error to throw; undefined when it can (and for every other
 * signal). A pausing signal's own deadline (`payload.timeoutMs`) must be one. A request it
 * names must be open in a live function (`stale_answer`) and, when the host opened it (a
 * tool call held for approval), the signal must come from the host (`approval_host_only`:
 * an agent never answers it; an unnamed answer from an agent passes over it); an answer's `seenVersion` must not
 * be older than the version of any function whose request it would resolve
 * (`stale_approval`, fail closed: the request stays open). A rejection is never stale.
 *
 * Use when: before a signal is delivered, so that a refused one changes nothing.
 */
export function answerProblem(
  signal: SignalArgs,
  functions: readonly LiveFunction[],
  byHost: boolean,
): RoleboxError | undefined {
  if (isPausingSignal(signal.type)) return timeoutProblem(signal);
  if (signal.type !== 'answer' && signal.type !== 'revise_needed') return undefined;
  const shape = payloadShapeProblem(signal);
  if (shape) return shape;
  const named = namedRequestId(signal);
  const seen = signal.type === 'answer' ? seenVersionOf(signal) : undefined;
  if (named !== undefined) {
    const owner = functions.find((fn) => openRequestById(fn.kv, named) !== undefined);
    if (!owner)
      return new RoleboxError(
        'stale_answer',
        `request ${describeValue(named)} is unknown or already resolved; open requests: ${openIds(functions)}`,
        { requestId: named },
      );
    if (!byHost && openRequestById(owner.kv, named)?.hostOnly === true)
      return new RoleboxError(
        'approval_host_only',
        `request ${named} holds a tool call for the host's approval: only session.approve / session.reject answer it, not an agent's ${signal.type} signal`,
        { requestId: named },
      );
    return staleApproval(owner, named, seen);
  }
  if (signal.type !== 'answer') return undefined;
  for (const fn of functions) {
    const oldest = oldestOpenRequest(fn.kv, byHost);
    const stale = oldest && staleApproval(fn, oldest.id, seen);
    if (stale) return stale;
  }
  return undefined;
}
