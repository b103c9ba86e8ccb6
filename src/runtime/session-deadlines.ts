import { nextRequestDeadline } from '../signal/approval-requests.js';
import type { SystemAccess } from './system-access.js';

/** The deadlines of one live session (clock times; undefined: none). */
export interface SessionDeadlines {
  /** Its wait for the user's (`waitExpiresAt`, `limits.waitUserTimeoutMs`). */
  readonly wait: number | undefined;
  /** The earliest of its live functions' open approval requests (`expiresAt`, SPEC §9). */
  readonly requests: number | undefined;
  /** The earliest of both: when its timer fires, and its wake-up when it is passivated. */
  readonly next: number | undefined;
}

/**
 * The deadlines of session `sessionId` as its live state holds them; all undefined when it is
 * not live here. Read from the context (saved with it), never kept apart: what fires is what
 * a restore would find.
 */
export function sessionDeadlines(
  access: Pick<SystemAccess, 'isLive' | 'sessionActor' | 'readFunction'>,
  sessionId: string,
): SessionDeadlines {
  const context = access.isLive(sessionId)
    ? access.sessionActor(sessionId)?.getSnapshot().context
    : undefined;
  if (!context) return { wait: undefined, requests: undefined, next: undefined };
  const wait = context.waitExpiresAt ?? undefined;
  let requests: number | undefined;
  for (const name of context.liveFunctions as readonly string[]) {
    const kv = access.readFunction(sessionId, name)?.context.kv;
    const at = kv && nextRequestDeadline(kv);
    if (at !== undefined) requests = requests === undefined ? at : Math.min(requests, at);
  }
  const times = [wait, requests].filter((at) => at !== undefined);
  return { wait, requests, next: times.length === 0 ? undefined : Math.min(...times) };
}
