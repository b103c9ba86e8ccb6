import type { ApprovalRequest } from '../signal/approval-requests.js';
import { formatTable } from './commands/status.js';

/** How long the `ASKED` and `NOTE` cells of `rolebox show` may be before they are cut. */
const CELL_CHARS = 60;

/** A text cell on one line and at most {@link CELL_CHARS} long, marked `…` when cut. */
function cell(text: string): string {
  const [first = ''] = text.split('\n');
  const cut = first.length > CELL_CHARS ? `${first.slice(0, CELL_CHARS - 1)}…` : first;
  return cut.length < text.length && !cut.endsWith('…') ? `${cut} …` : cut;
}

/** What a request asked: its payload's `reason` (what pausing signals carry), else its JSON. */
function askedText(payload: unknown): string {
  const reason = (payload as { reason?: unknown } | null)?.reason;
  if (typeof reason === 'string') return reason;
  return payload === null || payload === undefined ? '-' : JSON.stringify(payload);
}

/** A clock time as ISO text, `-` when there is none. */
function timeText(at: number | undefined): string {
  return at === undefined ? '-' : new Date(at).toISOString();
}

/**
 * The approvals part of `rolebox show` (SPEC §9): a table of the session's approval
 * requests, open ones first, each with what it asked, when, how it ended (and whether the
 * host ended it), who resolved it with which note, and the function version the answer saw. Nothing when it has none.
 */
export function approvalLines(approvals: readonly ApprovalRequest[]): string[] {
  if (approvals.length === 0) return [];
  const open = approvals.filter((request) => request.status === 'open').length;
  const table = formatTable(
    ['ID', 'STATUS', 'TYPE', 'OPENED AT', 'VERSION', 'RESOLVED AT', 'BY', 'SEEN', 'ASKED', 'NOTE'],
    approvals.map((request) => [
      request.id,
      // The origin beside the status: `answered (host)` is the host's approval, a bare
      // `answered` an agent's own answer signal (or a record from before origins were kept).
      request.answeredByHost === true ? `${request.status} (host)` : request.status,
      request.type,
      timeText(request.openedAt),
      String(request.version),
      timeText(request.answeredAt),
      request.answeredBy ?? '-',
      request.seenVersion === undefined ? '-' : String(request.seenVersion),
      cell(askedText(request.payload)),
      request.note === undefined ? '-' : cell(request.note),
    ]),
  );
  return [
    '',
    `approvals: ${open} open, ${approvals.length - open} resolved`,
    ...table.split('\n').map((line) => `  ${line}`),
  ];
}
