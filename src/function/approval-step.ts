import {
  type ApprovalResolution,
  expireRequest,
  nextRequestId,
  oldestOpenRequest,
  openRequest,
  openRequestById,
  resolveRequest,
} from '../signal/approval-requests.js';
import { DEFAULT_ON_TIMEOUT, durationMs, type OnTimeout } from '../signal/approval-timeout.js';
import { isPausingSignal } from '../signal/catalogue.js';
import type { FunctionKv } from '../signal/ledger.js';
import type { SignalArgs } from '../signal/schema.js';

/** What a signal does to a function's approval requests and version (SPEC §9). */
export interface ApprovalStep {
  readonly kv: FunctionKv;
  readonly version: number;
}

/**
 * The request a signal names as the one it answers or rejects (`payload.requestId`), for an
 * `answer` or a `revise_needed` (a rejection); undefined for any other signal.
 */
export function namedRequestId(signal: SignalArgs): string | undefined {
  if (signal.type !== 'answer' && signal.type !== 'revise_needed') return undefined;
  const id = signal.payload?.requestId;
  return typeof id === 'string' ? id : undefined;
}

/** `payload.seenVersion` when it is a whole number, else undefined. */
export function seenVersionOf(signal: SignalArgs): number | undefined {
  const seen = signal.payload?.seenVersion;
  return typeof seen === 'number' && Number.isInteger(seen) && seen >= 0 ? seen : undefined;
}

/** A pausing signal's own deadline (`payload.timeoutMs`) when it is a valid one, else undefined. */
export function timeoutOf(signal: SignalArgs): number | undefined {
  const timeout = signal.payload?.timeoutMs;
  return typeof timeout === 'number' ? durationMs(timeout) : undefined;
}

/**
 * The deadline of the request a pausing signal opens at `at`: its `payload.timeoutMs`, else
 * the function's `approval_timeout` (`approvalTimeoutMs`), after `at`; undefined when neither
 * gives one (the request never expires).
 */
export function requestDeadline(
  signal: SignalArgs,
  approvalTimeoutMs: number | undefined,
  at: number,
): number | undefined {
  const timeout = timeoutOf(signal) ?? approvalTimeoutMs;
  return timeout === undefined ? undefined : at + timeout;
}

/** A payload's text field `key`, when it is a string. */
function textOf(signal: SignalArgs, key: string): string | undefined {
  const value = signal.payload?.[key];
  return typeof value === 'string' ? value : undefined;
}

/** How an answer or a rejection resolves a request, from its payload and who sent it. */
function resolutionOf(signal: SignalArgs, at: number, byHost: boolean): ApprovalResolution {
  const rejection = signal.type === 'revise_needed';
  const by = textOf(signal, 'by');
  const note = textOf(signal, rejection ? 'reason' : 'note');
  const seenVersion = seenVersionOf(signal);
  return {
    status: rejection ? 'rejected' : 'answered',
    at,
    ...(by === undefined ? {} : { by }),
    ...(note === undefined ? {} : { note }),
    ...(seenVersion === undefined ? {} : { seenVersion }),
    ...(byHost ? { byHost } : {}),
  };
}

/**
 * The request of this function a signal resolves (exported for the receipt, which names it): the open one it names, else (an unnamed
 * `answer`) the oldest open one; none when the answer says it saw an older version than the
 * function's (fail closed: `stale_approval`) or the signal resolves nothing.
 */
export function requestResolvedBy(
  kv: FunctionKv,
  version: number,
  signal: SignalArgs,
  byHost: boolean,
): string | undefined {
  // Only an approval can be stale: a rejection is always let through (fail closed).
  const seen = signal.type === 'answer' ? seenVersionOf(signal) : undefined;
  if (seen !== undefined && seen < version) return undefined;
  const named = namedRequestId(signal);
  if (named !== undefined) {
    const request = openRequestById(kv, named);
    // A host-only request is the host's to answer: an agent's answer never reaches it.
    return request && (byHost || request.hostOnly !== true) ? request.id : undefined;
  }
  return signal.type === 'answer' ? oldestOpenRequest(kv, byHost)?.id : undefined;
}

/** How a function takes a signal's step: its `approval_timeout`, and the expiry it carries. */
export interface ApprovalStepOptions {
  /** The function's `approval_timeout` in ms, for the deadline of a request it opens. */
  readonly approvalTimeoutMs?: number;
  /** The function's `on_timeout`, recorded on a request that opens with a deadline. */
  readonly onTimeout?: OnTimeout;
  /** The request whose deadline came, when the signal is that expiry (sent by the runtime). */
  readonly expires?: string;
  /** The host sent the signal (`approve`, `reject`, a tool call held for approval), not an agent. */
  readonly byHost?: boolean;
}

/**
 * A signal's step on a function's requests and version. A pausing signal is a change (the
 * version counts it) and opens a request carrying the new version, its deadline, and
 * `hostOnly` when the host sent it (a tool call held for approval). An answer, or a
 * rejection naming a request, resolves the request it reaches and is not a change: it is the
 * reviewer's act, not the agent's, so answering one request does not make the next stale.
 * The expiry of a request (`options.expires`: an `escalate` or a rejection) marks it
 * `expired` and is not a change either. Any other signal is a change.
 *
 * Use when: a function records a signal (machines/function.machine.ts).
 */
export function approvalStep(
  name: string,
  kv: FunctionKv,
  version: number,
  signal: SignalArgs,
  at: number,
  options: ApprovalStepOptions = {},
): ApprovalStep {
  if (options.expires !== undefined) return { kv: expireRequest(kv, options.expires, at), version };
  if (isPausingSignal(signal.type)) {
    const opened = version + 1;
    const expiresAt = requestDeadline(signal, options.approvalTimeoutMs, at);
    return {
      kv: openRequest(kv, {
        function: name,
        type: signal.type,
        payload: signal.payload ?? null,
        openedAt: at,
        version: opened,
        ...(expiresAt === undefined
          ? {}
          : { expiresAt, onTimeout: options.onTimeout ?? DEFAULT_ON_TIMEOUT }),
        ...(options.byHost ? { hostOnly: true as const } : {}),
      }),
      version: opened,
    };
  }
  const isAnswer = signal.type === 'answer' || namedRequestId(signal) !== undefined;
  if (!isAnswer) return { kv, version: version + 1 };
  const byHost = options.byHost === true;
  const resolved = requestResolvedBy(kv, version, signal, byHost);
  return {
    kv:
      resolved === undefined ? kv : resolveRequest(kv, resolved, resolutionOf(signal, at, byHost)),
    version,
  };
}

/**
 * The request a signal opens (a pausing one) or resolves in a function, as the receipt names
 * it; undefined when it does neither. Decided exactly as {@link approvalStep} will.
 */
export function requestTouchedBy(
  name: string,
  kv: FunctionKv,
  version: number,
  signal: SignalArgs,
  byHost: boolean,
): string | undefined {
  if (isPausingSignal(signal.type)) return nextRequestId(kv, name);
  if (signal.type !== 'answer' && namedRequestId(signal) === undefined) return undefined;
  return requestResolvedBy(kv, version, signal, byHost);
}
