import { ERROR_CODES, type ErrorCode, RoleboxError } from '../errors.js';
import type { HostEvent } from '../rolebox/host-events.js';

/** An error inside a host event, as JSON. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  /** The RoleboxError code, for one. */
  readonly code?: string;
}

/** A host event as it crosses Restate: JSON, its `error` (if any) as {@link WireError}. */
export type WireHostEvent =
  | Exclude<HostEvent, { readonly type: 'error' }>
  | { readonly type: 'error'; readonly sessionId?: string; readonly error: WireError };

/** A host event made JSON (an `error` event's Error becomes its name, message and code). */
export function wireHostEvent(event: HostEvent): WireHostEvent {
  if (event.type !== 'error') return event;
  const { error } = event;
  return {
    ...event,
    error: {
      name: error.name,
      message: error.message,
      ...(error instanceof RoleboxError ? { code: error.code } : {}),
    },
  };
}

/** The metadata key of a Restate terminal error that carries the RoleboxError code. */
export const ERROR_CODE_METADATA = 'rolebox-code';

/** True when `code` is one of rolebox's error codes. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/**
 * The RoleboxError a failed ingress call stands for: the code its terminal error carried,
 * else `restate_failed` with the server's message and HTTP status.
 */
export function errorOfFailedCall(status: number, body: string, what: string): RoleboxError {
  let parsed: { message?: unknown; metadata?: Record<string, unknown> } | undefined;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const message = typeof parsed?.message === 'string' ? parsed.message : body.slice(0, 500);
  const code = parsed?.metadata?.[ERROR_CODE_METADATA];
  if (isErrorCode(code)) return new RoleboxError(code, message);
  return new RoleboxError('restate_failed', `${what} failed with HTTP ${status}: ${message}`, {
    status,
  });
}
