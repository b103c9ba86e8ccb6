import { describeValue, RoleboxError } from '../errors.js';
import { openRequestById } from '../signal/approval-requests.js';
import { MAX_APPROVAL_TIMEOUT_MS } from '../signal/approval-timeout.js';
import { type LiveFunction, openIds } from './approval-check.js';
import { readRequestOptions } from './request-options.js';

/** The options of `session.extendRequest`: the new deadline from now, and who moved it. */
export interface ExtendRequestOptions {
  /** Milliseconds from now: a positive whole number, at most a year (as `approval_timeout`). */
  readonly timeoutMs: number;
  readonly by?: string;
}

/** What `session.extendRequest` answers: the request and its new deadline (clock time). */
export interface ExtendReceipt {
  readonly requestId: string;
  readonly expiresAt: number;
  /** For an agent or a log: `request deploy:r1 now expires <ISO time>`. */
  readonly text: string;
}

/** The request id and `options`, checked: an object with `timeoutMs` (whole ms, 1 … a year) and a string `by`. */
function checkedOptions(requestId: unknown, options: unknown): ExtendRequestOptions {
  const { timeoutMs, by } = readRequestOptions(
    requestId,
    options,
    ['timeoutMs', 'by'],
    'extendRequest',
  );
  if (
    typeof timeoutMs !== 'number' ||
    !Number.isSafeInteger(timeoutMs) ||
    timeoutMs <= 0 ||
    timeoutMs > MAX_APPROVAL_TIMEOUT_MS
  )
    throw new RoleboxError(
      'invalid_argument',
      `extendRequest timeoutMs must be a positive whole number of milliseconds (at most a year), got ${describeValue(timeoutMs)}`,
      { timeoutMs },
    );
  return { timeoutMs, ...(by === undefined ? {} : { by: by as string }) };
}

/**
 * The host's move of an open request's deadline (SPEC §9), checked against the session's
 * live functions before anything is sent, so a refused one changes nothing.
 * Returns: the options, read. Throws: `invalid_argument` for a request id that is not a
 * string or bad options; `stale_answer` for a request that is not open in a live function
 * (unknown, answered, rejected or expired: a closed request never reopens).
 */
export function checkExtension(
  requestId: unknown,
  options: unknown,
  functions: readonly LiveFunction[],
): ExtendRequestOptions & { readonly requestId: string } {
  const read = checkedOptions(requestId, options);
  const id = requestId as string; // a non-empty string: checkedOptions read it
  if (!functions.some((fn) => openRequestById(fn.kv, id) !== undefined))
    throw new RoleboxError(
      'stale_answer',
      `request ${describeValue(requestId)} is unknown or already resolved, so its deadline cannot move; open requests: ${openIds(functions)}`,
      { requestId },
    );
  return { requestId: id, ...read };
}
