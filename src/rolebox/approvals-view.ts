import type { ApprovalRequest } from '../signal/approval-requests.js';

/**
 * The session's approval audit trail (`view().approvals`, SPEC §9): every request of every
 * function, live or retired, as its ledger recorded it. Open requests come first, oldest
 * first (what is waiting on a reviewer); then the resolved ones in the order they were
 * resolved, so the list reads as the history of who approved or refused what, and when.
 *
 * Use when: building a session's view (views.ts), from its functions' requests.
 */
export function approvalTrail(
  functions: readonly { readonly requests: readonly ApprovalRequest[] }[],
): ApprovalRequest[] {
  const all = functions.flatMap((fn) => fn.requests);
  const open = all.filter((request) => request.status === 'open');
  const resolved = all.filter((request) => request.status !== 'open');
  // Array.prototype.sort is stable: ties keep the functions' order (live first).
  open.sort((a, b) => a.openedAt - b.openedAt);
  resolved.sort((a, b) => (a.answeredAt ?? a.openedAt) - (b.answeredAt ?? b.openedAt));
  return structuredClone([...open, ...resolved]);
}
