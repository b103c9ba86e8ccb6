import { copyOwn, withOwn } from '../base/own-keys.js';
import type { OnTimeout } from './approval-timeout.js';
import { type FunctionKv, hasSignal } from './ledger.js';

/** Where a function's approval requests live in its kv, beside the signal ledger (SPEC §9). */
export const REQUESTS_KEY = '__approval_requests';

/**
 * How a request stands: `open` until an answer approves it (`answered`), a rejection
 * refuses it (`rejected`) or its deadline passes first (`expired`, never an approval).
 */
export type ApprovalStatus = 'open' | 'answered' | 'rejected' | 'expired';

/** Every {@link ApprovalStatus}, in the order a request may take them. */
export const APPROVAL_STATUSES = [
  'open',
  'answered',
  'rejected',
  'expired',
] as const satisfies readonly ApprovalStatus[];

/**
 * One approval request: what a pausing signal opened in a function's ledger, and how it
 * ended. Plain JSON. The `answered…` fields are set once, when the request is resolved.
 */
export interface ApprovalRequest {
  /** `<function>:r<n>`, n counting the function's requests from 1. */
  readonly id: string;
  /** The function whose ledger holds it. */
  readonly function: string;
  /** The pausing signal that opened it (`need_approval`, `blocked`, `need_clarification`). */
  readonly type: string;
  /** That signal's payload (null when it had none). */
  readonly payload: unknown;
  readonly openedAt: number;
  /** The function's version when it opened: what a reviewer approving it saw. */
  readonly version: number;
  readonly status: ApprovalStatus;
  readonly answeredAt?: number;
  /** Who answered or rejected it, when the answer said (`payload.by`). */
  readonly answeredBy?: string;
  /** The answer's note, or the rejection's reason. */
  readonly note?: string;
  /** The version the answer said its author saw (`payload.seenVersion`). */
  readonly seenVersion?: number;
  /**
   * When it expires unanswered (clock time): opened at `openedAt` plus the function's
   * `approval_timeout` or the pausing signal's `payload.timeoutMs`; absent: never.
   */
  readonly expiresAt?: number;
  /**
   * With `expiresAt`: what its expiry becomes (the function's `on_timeout` when it opened):
   * an `escalate` signal, or a rejection (`revise_needed`).
   */
  readonly onTimeout?: OnTimeout;
  /**
   * Set on a request the host opened (a tool call `requireApproval` holds, SPEC §9): only
   * the host answers it (`approve` / `reject`), never an agent's own `answer` signal, so
   * an agent cannot approve its own tool call (fail closed).
   */
  readonly hostOnly?: true;
  /** When the host last moved its deadline (`session.extendRequest`), clock time. */
  readonly extendedAt?: number;
  /** Who moved it, when the host said (`by`). */
  readonly extendedBy?: string;
  /**
   * Set when the host resolved it (`session.approve` / `session.reject`, the inspector's
   * buttons, a policy answering through the host): the trail then tells a host's approval
   * from an agent's own `answer` signal, which resolves without it. Absent on a request
   * resolved before this field existed (its origin was not recorded).
   */
  readonly answeredByHost?: true;
}

/** How an answer or a rejection resolves a request. */
export interface ApprovalResolution {
  readonly status: 'answered' | 'rejected';
  readonly at: number;
  readonly by?: string;
  readonly note?: string;
  readonly seenVersion?: number;
  /** The host sent the answer or rejection (recorded as `answeredByHost`). */
  readonly byHost?: boolean;
}

/** The requests of a function's kv, oldest first (an empty list when it has none). */
export function readRequests(kv: FunctionKv): readonly ApprovalRequest[] {
  const raw = kv[REQUESTS_KEY];
  return Array.isArray(raw) ? (raw as ApprovalRequest[]) : [];
}

/** The id the next request of function `name` gets. */
export function nextRequestId(kv: FunctionKv, name: string): string {
  return `${name}:r${readRequests(kv).length + 1}`;
}

/** The function a request id names (the part before its last `:r`), else undefined. */
export function functionOfRequestId(id: string): string | undefined {
  const match = /^(.+):r[1-9]\d*$/.exec(id);
  return match?.[1];
}

/** Opens a request. Returns a new kv; `kv` is not changed. */
export function openRequest(
  kv: FunctionKv,
  opening: Pick<
    ApprovalRequest,
    | 'function'
    | 'type'
    | 'payload'
    | 'openedAt'
    | 'version'
    | 'expiresAt'
    | 'onTimeout'
    | 'hostOnly'
  >,
): FunctionKv {
  const request: ApprovalRequest = {
    id: nextRequestId(kv, opening.function),
    ...opening,
    status: 'open',
  };
  return withOwn<unknown>(kv, REQUESTS_KEY, [...readRequests(kv), request]);
}

/** The request `id` when it is open, else undefined. */
export function openRequestById(kv: FunctionKv, id: string): ApprovalRequest | undefined {
  return readRequests(kv).find((request) => request.id === id && request.status === 'open');
}

/**
 * The oldest open request an answer from this source may resolve, else undefined: an agent's
 * answer (`byHost` false) passes over the requests only the host answers.
 */
export function oldestOpenRequest(kv: FunctionKv, byHost: boolean): ApprovalRequest | undefined {
  return readRequests(kv).find(
    (request) => request.status === 'open' && (byHost || request.hostOnly !== true),
  );
}

/**
 * Resolves the open request `id`. Returns a new kv; `kv` is returned as is when `id` is not
 * open (a resolved request never changes again).
 */
export function resolveRequest(
  kv: FunctionKv,
  id: string,
  resolution: ApprovalResolution,
): FunctionKv {
  if (!openRequestById(kv, id)) return kv;
  const requests = readRequests(kv).map(
    (request): ApprovalRequest =>
      request.id === id
        ? Object.assign(copyOwn(request), {
            status: resolution.status,
            answeredAt: resolution.at,
            ...(resolution.by === undefined ? {} : { answeredBy: resolution.by }),
            ...(resolution.note === undefined ? {} : { note: resolution.note }),
            ...(resolution.seenVersion === undefined
              ? {}
              : { seenVersion: resolution.seenVersion }),
            ...(resolution.byHost === true ? { answeredByHost: true as const } : {}),
          })
        : request,
  );
  return withOwn<unknown>(kv, REQUESTS_KEY, requests);
}

/**
 * Expires the open request `id` at `at` (its deadline came, SPEC §9): `expired`, noted so.
 * Returns a new kv; `kv` is returned as is when `id` is not open.
 */
export function expireRequest(kv: FunctionKv, id: string, at: number): FunctionKv {
  if (!openRequestById(kv, id)) return kv;
  const requests = readRequests(kv).map(
    (request): ApprovalRequest =>
      request.id === id
        ? Object.assign(copyOwn(request), {
            status: 'expired' as const,
            answeredAt: at,
            note: 'expired',
          })
        : request,
  );
  return withOwn<unknown>(kv, REQUESTS_KEY, requests);
}

/** How the host moves an open request's deadline (`session.extendRequest`, SPEC §9). */
export interface RequestExtension {
  /** The new deadline (clock time). */
  readonly expiresAt: number;
  /** What its expiry becomes: kept from the request when it had a deadline already. */
  readonly onTimeout: OnTimeout;
  /** When the host moved it. */
  readonly at: number;
  readonly by?: string;
}

/**
 * Sets the open request `id`'s deadline to `extension.expiresAt`, noting when and by whom.
 * Returns a new kv; `kv` is returned as is when `id` is not open.
 */
export function extendRequest(kv: FunctionKv, id: string, extension: RequestExtension): FunctionKv {
  if (!openRequestById(kv, id)) return kv;
  const { expiresAt, onTimeout, at, by } = extension;
  const requests = readRequests(kv).map(
    (request): ApprovalRequest =>
      request.id === id
        ? Object.assign(copyOwn(request), {
            expiresAt,
            onTimeout: request.onTimeout ?? onTimeout,
            extendedAt: at,
            ...(by === undefined ? {} : { extendedBy: by }),
          })
        : request,
  );
  return withOwn<unknown>(kv, REQUESTS_KEY, requests);
}

/** The earliest deadline of the open requests in `kv`, else undefined. */
export function nextRequestDeadline(kv: FunctionKv): number | undefined {
  let next: number | undefined;
  for (const request of readRequests(kv))
    if (request.status === 'open' && request.expiresAt !== undefined)
      next = next === undefined ? request.expiresAt : Math.min(next, request.expiresAt);
  return next;
}

/** The open requests in `kv` whose deadline has come by `at`, oldest first. */
export function dueRequests(kv: FunctionKv, at: number): readonly ApprovalRequest[] {
  return readRequests(kv).filter(
    (request) =>
      request.status === 'open' && request.expiresAt !== undefined && request.expiresAt <= at,
  );
}

/**
 * Whether `signal_observed(answer)` holds (SPEC §9). Before any request, the seeds' level
 * semantics: the ledger holds an answer. Once a request was opened, only while none is open
 * and the last one was answered: an answer approves the requests made before it and never
 * one made after it, and a rejected request stays unapproved until a new one is answered.
 */
export function answerHolds(kv: FunctionKv): boolean {
  const requests = readRequests(kv);
  const last = requests.at(-1);
  if (last === undefined) return hasSignal(kv, 'answer');
  return last.status === 'answered' && requests.every((request) => request.status !== 'open');
}
