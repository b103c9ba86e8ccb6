// The approval requests of the selected session or function (issue 25 item 5, SPEC §9): the
// open ones first, each with Approve / Reject buttons, then the resolved ones with who
// resolved them, when, and the note or reason. The buttons send `approve` / `reject` over the
// page's socket, which the server let in only with the run's token and from its own origin;
// rolebox runs them through `session.approve` / `session.reject`, so a stale or bad one is
// refused there and the status line says why.
import { send } from './controls.js';
import { $, isFinished, isGone, state } from './state.js';

/** Where a function's requests live in its kv (src/signal/approval-requests.ts). */
const REQUESTS_KEY = '__approval_requests';

/** The requests of a function context, read defensively (an odd snapshot shows none). */
function requestsOf(context) {
  const requests = context?.kv?.[REQUESTS_KEY];
  return Array.isArray(requests) ? requests.filter((r) => typeof r?.id === 'string') : [];
}

/**
 * A live function actor's requests, each with the function's version as the page sees it
 * now (sent as `seenVersion`: an approval of what the reviewer looked at) and the actor a
 * command goes to; a finished actor's requests take no commands.
 */
function liveRows(actor) {
  const context = actor.snapshot?.context;
  // Only a connected rolebox app takes commands (a store browsed or a run replayed does not).
  const rolebox = state.apps.get(actor.app)?.rolebox === true;
  const live = rolebox && !isFinished(actor) && !isGone(actor);
  return requestsOf(context).map((request) => ({
    request,
    target: live ? actor.id : undefined,
    version: Number.isInteger(context?.version) ? context.version : undefined,
  }));
}

/**
 * The rows of the approvals panel for the selected actor: a session's requests (its live
 * functions' and its retired ones'), or one function's; `undefined` for any other actor,
 * so the panel hides. Open ones first, oldest first; then the resolved ones in the order
 * they were resolved.
 */
export function approvalRows(actor) {
  const name = actor?.name ?? '';
  let rows;
  if (name.startsWith('fn:')) rows = liveRows(actor);
  else if (name.startsWith('session:')) {
    const prefix = `fn:${name.slice('session:'.length)}:`;
    rows = [...state.actors.values()]
      .filter((fn) => fn.app === actor.app && fn.name?.startsWith(prefix) && !isFinished(fn))
      .flatMap(liveRows);
    const retired = actor.snapshot?.context?.retiredFunctions ?? {};
    for (const entry of Object.values(retired))
      rows.push(...requestsOf(entry?.context).map((request) => ({ request })));
  } else return undefined;
  const open = rows.filter((row) => row.request.status === 'open');
  const resolved = rows.filter((row) => row.request.status !== 'open');
  open.sort((a, b) => a.request.openedAt - b.request.openedAt);
  resolved.sort((a, b) => (a.request.answeredAt ?? 0) - (b.request.answeredAt ?? 0));
  return [...open, ...resolved];
}

/** What a request asked, as text: its payload's `reason`, else its JSON. */
function askedText(payload) {
  if (typeof payload?.reason === 'string') return payload.reason;
  return payload === null || payload === undefined ? '' : JSON.stringify(payload);
}

/** A clock time as the page shows times, or nothing. */
const timeText = (at) => (Number.isFinite(at) ? new Date(at).toISOString() : '');

/** Refuses a click with `text` in the status line, sending nothing. */
function refuse(text) {
  $('command-status').className = 'error';
  $('command-status').textContent = text;
}

/** Approves or rejects a request, as the reviewer named in the panel. */
function answer(row, kind) {
  const by = $('approval-by').value.trim() || 'inspector';
  const text = $('approval-note').value.trim();
  if (kind === 'reject') {
    // A rejection says why (session.reject refuses one without a reason): asked here first.
    if (text === '') return refuse('type a reason first: a rejection needs one');
    return send(row.target, { kind: 'reject', requestId: row.request.id, by, reason: text });
  }
  send(row.target, {
    kind: 'approve',
    requestId: row.request.id,
    by,
    ...(text === '' ? {} : { note: text }),
    ...(row.version === undefined ? {} : { seenVersion: row.version }),
  });
}

function button(label, row, kind) {
  const element = document.createElement('button');
  element.type = 'button';
  element.textContent = label;
  element.dataset.approval = kind;
  element.addEventListener('click', () => answer(row, kind));
  return element;
}

/** A part of a request's entry: text only (a payload is shown as text, never as markup). */
function part(className, text) {
  const element = document.createElement('span');
  element.className = className;
  element.textContent = text;
  return element;
}

/**
 * One request as an entry of the list: id, status and the buttons on its first line, what it
 * asked on the second, when it opened and how it was resolved (when, by whom, the note) on
 * the third. A list, not a table: the side panel is narrow.
 */
function entry(row, travelling) {
  const { request } = row;
  const element = document.createElement('li');
  element.dataset.request = request.id;
  element.dataset.status = String(request.status);
  const head = document.createElement('div');
  head.append(part('id', request.id), part('status', String(request.status)));
  // No buttons on a past view (time travel): an answer is to what is open now.
  if (request.status === 'open' && row.target && !travelling) {
    const actions = document.createElement('span');
    actions.className = 'actions';
    actions.append(button('Approve', row, 'approve'), button('Reject', row, 'reject'));
    head.append(actions);
  }
  const when = document.createElement('div');
  when.append(part('opened', `opened ${timeText(request.openedAt)}`));
  if (request.status !== 'open') {
    const who = [request.answeredBy, request.note].filter((text) => typeof text === 'string');
    // Who resolved it: the host (approve / reject) or the agent's own answer signal.
    const origin = request.answeredByHost === true ? ' by host' : '';
    when.append(part('resolved', ` · ${request.status}${origin} ${timeText(request.answeredAt)}`));
    if (who.length > 0) when.append(part('who', ` · ${who.join(': ')}`));
  }
  element.append(head, part('asked', askedText(request.payload)), when);
  return element;
}

/** Draws the approvals panel for the selected actor, or hides it for one with no requests. */
export function renderApprovals(actor) {
  const rows = approvalRows(actor);
  $('approvals-panel').hidden = rows === undefined || rows.length === 0;
  const list = $('approvals');
  if (rows === undefined) return list.replaceChildren();
  const travelling = state.travel !== null && state.travel !== undefined;
  list.replaceChildren(...rows.map((row) => entry(row, travelling)));
  const open = rows.filter((row) => row.request.status === 'open').length;
  $('approvals-summary').textContent = `${open} open, ${rows.length - open} resolved`;
}
