/**
 * How long an approval request of a function may stay open (`approval_timeout`, SPEC §9), and
 * what happens when nobody answered it by then (`on_timeout`).
 */

/** What an expired request becomes: an `escalate` signal (the default) or a rejection. */
export const ON_TIMEOUT_ACTIONS = ['escalate', 'reject'] as const;

/** One of {@link ON_TIMEOUT_ACTIONS}. */
export type OnTimeout = (typeof ON_TIMEOUT_ACTIONS)[number];

/** The `on_timeout` of a definition that does not say. */
export const DEFAULT_ON_TIMEOUT: OnTimeout = 'escalate';

/** The longest deadline accepted (a year): a longer one is a mistake, not a policy. */
export const MAX_APPROVAL_TIMEOUT_MS = 365 * 24 * 3_600_000;

/** Milliseconds per unit of a written duration (`15 min`, `15m`, `2h`, `30s`, `500ms`, `1d`). */
const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** `15m`, `15 min`, `2h`, `500ms`, `1.5h`: a number and a unit, with an optional space. */
const DURATION = /^(\d+(?:\.\d+)?)\s?(ms|s|m|min|h|d)$/;

/** What an `approval_timeout` must be, for messages. */
export const APPROVAL_TIMEOUT_RULE =
  'a positive whole number of milliseconds, or a duration like 30s, 15m, 15 min, 2h or 1d (at most a year)';

/**
 * A written duration in milliseconds: a positive whole number of ms, or a string of a number
 * and a unit ({@link UNIT_MS}). Undefined when `value` is neither, is not a whole number of
 * ms, or exceeds {@link MAX_APPROVAL_TIMEOUT_MS}.
 */
export function durationMs(value: unknown): number | undefined {
  let ms: number | undefined;
  if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') {
    const match = DURATION.exec(value.trim());
    if (match) ms = Number(match[1]) * (UNIT_MS[match[2] as string] as number);
  }
  if (ms === undefined || !Number.isSafeInteger(ms) || ms <= 0) return undefined;
  return ms <= MAX_APPROVAL_TIMEOUT_MS ? ms : undefined;
}
