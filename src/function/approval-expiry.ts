import type { ApprovalRequest } from '../signal/approval-requests.js';
import { DEFAULT_ON_TIMEOUT } from '../signal/approval-timeout.js';
import type { SignalArgs } from '../signal/schema.js';

/** The `reason` an expiry's signal carries (and the note an expired request keeps). */
export const EXPIRED_REASON = 'expired';

/**
 * The signal an open request becomes when its deadline passes (SPEC §9), by its `onTimeout`:
 * `escalate` with the request in its payload (a higher authority must take it), or a
 * rejection (`revise_needed` naming it, as `session.reject` sends) with reason `expired`.
 * Neither approves: the request ends `expired` and a gate on `signal_observed(answer)` stays
 * closed until a new request is answered.
 */
export function expirySignal(request: ApprovalRequest): SignalArgs {
  if ((request.onTimeout ?? DEFAULT_ON_TIMEOUT) === 'reject')
    return { type: 'revise_needed', payload: { requestId: request.id, reason: EXPIRED_REASON } };
  return {
    type: 'escalate',
    payload: {
      requestId: request.id,
      reason: EXPIRED_REASON,
      request: JSON.parse(JSON.stringify(request)) as Record<string, unknown>,
    },
  };
}
