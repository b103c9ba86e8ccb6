import { SIGNAL_CATEGORY_OF, type SignalCategory, type SignalType } from './catalogue.js';
import type { SignalPayload } from './schema.js';

/** What the session answers when a signal is delivered; `text` is what the agent reads. */
export interface SignalReceipt {
  /** The signal type. */
  readonly type: SignalType;
  /** Its category. */
  readonly category: SignalCategory;
  /** On how many live functions it was recorded. */
  readonly recordedOn: number;
  /** The tool's reply text, exactly as the agent sees it. */
  readonly text: string;
  /**
   * The approval requests the signal opened (a pausing one) or resolved (an answer, a
   * rejection), one per function, as `<function>:r<n>` (SPEC §9); absent when none.
   */
  readonly requests?: readonly string[];
  /**
   * The deadline (clock time) of each request it opened that has one (`approval_timeout`,
   * `payload.timeoutMs`), by request id; absent when none has.
   */
  readonly deadlines?: Readonly<Record<string, number>>;
  /** True for the signal a request's expiry became (sent by the runtime, not an agent). */
  readonly expired?: true;
}

/** The handoff target named by a payload: `target`, else `subagent`, else `(unspecified)`. */
export function handoffTarget(payload: SignalPayload | undefined): string {
  const target = payload?.target ?? payload?.subagent;
  if (target === undefined || target === null) return '(unspecified)';
  return typeof target === 'string' ? target : JSON.stringify(target);
}

/** The `→ …` effect phrase of a reply. */
export function signalEffectText(type: SignalType, payload?: SignalPayload): string {
  switch (SIGNAL_CATEGORY_OF[type]) {
    case 'terminating':
      return 'satisfies continue_until condition';
    case 'pausing':
      return 'paused (gated)';
    case 'handoff':
      return `handoff to ${handoffTarget(payload)}`;
    case 'info':
      return 'informational (no state transition)';
  }
}

/**
 * The exact reply text of the `|signal|` tool:
 * `signal: <type> acknowledged | recorded on <N> function(s) | → <effect>`, or
 * `signal: <type> acknowledged (no active functions)` when no function recorded it.
 */
export function formatSignalReply(
  type: SignalType,
  recordedOn: number,
  payload?: SignalPayload,
): string {
  if (recordedOn === 0) return `signal: ${type} acknowledged (no active functions)`;
  return `signal: ${type} acknowledged | recorded on ${recordedOn} function(s) | → ${signalEffectText(type, payload)}`;
}

/** How a receipt names what its signal did to requests: their deadlines, or that it expired them. */
export interface ReceiptRequests {
  /** The deadline of each request opened with one, by id. */
  readonly deadlines?: Readonly<Record<string, number>>;
  /** The signal is a request's expiry (`, expired deploy:r1`). */
  readonly expired?: boolean;
}

/**
 * What the receipt's text adds for the requests a signal touched, so the agent reading it
 * learns the id to name (`→ paused (gated), request deploy:r2`, with its deadline when it
 * has one: `request deploy:r2 (expires 2026-01-01T00:15:00.000Z)`; an answer: `, answered
 * deploy:r1`; a rejection: `, rejected deploy:r1`; an expiry: `, expired deploy:r1`).
 * Empty when it touched none.
 */
function requestsText(
  type: SignalType,
  requests: readonly string[],
  more: ReceiptRequests,
): string {
  if (requests.length === 0) return '';
  const plural = requests.length === 1 ? 'request' : 'requests';
  const verb = more.expired
    ? 'expired'
    : type === 'answer'
      ? 'answered'
      : type === 'revise_needed'
        ? 'rejected'
        : plural;
  const named = requests.map((id) => {
    const at = more.deadlines?.[id];
    return at === undefined ? id : `${id} (expires ${new Date(at).toISOString()})`;
  });
  return `, ${verb} ${named.join(', ')}`;
}

/** Builds the full receipt for a delivered signal, naming the requests it opened or resolved. */
export function makeSignalReceipt(
  type: SignalType,
  recordedOn: number,
  payload?: SignalPayload,
  requests: readonly string[] = [],
  more: ReceiptRequests = {},
): SignalReceipt {
  const deadlines = Object.entries(more.deadlines ?? {}).filter(([id]) => requests.includes(id));
  return {
    type,
    category: SIGNAL_CATEGORY_OF[type],
    recordedOn,
    text: formatSignalReply(type, recordedOn, payload) + requestsText(type, requests, more),
    ...(requests.length > 0 ? { requests: [...requests] } : {}),
    ...(deadlines.length > 0 ? { deadlines: Object.fromEntries(deadlines) } : {}),
    ...(more.expired ? { expired: true as const } : {}),
  };
}
