// The event log: every event an app reported, with its route (source → target). Newest first,
// or "follow" (oldest first, kept scrolled to the newest); each row opens to show its payload;
// filters by text, type, actor and session; a click on a row shows the snapshot after it
// (time-travel.js), and a journaled rolebox's events offer "fork here".
import { $, isShard, LOG_LIMIT, state } from './state.js';
import { forkAt, travelTo } from './time-travel.js';

function actorName(app, sessionId) {
  return state.actors.get(`${app}/${sessionId}`)?.name ?? sessionId ?? '';
}

/** The rolebox session an actor belongs to: the `session:S` it is, or that it sits under. */
function sessionOf(app, sessionId) {
  let actor = state.actors.get(`${app}/${sessionId}`);
  for (let depth = 0; actor && depth < 32; depth++) {
    const own = /^(?:session:|fn:)([^:]+)/.exec(actor.name ?? '');
    if (own) return own[1];
    actor = actor.parentId ? state.actors.get(`${app}/${actor.parentId}`) : undefined;
  }
  return '';
}

function cell(text, className) {
  const td = document.createElement('td');
  if (className) td.className = className;
  td.textContent = text;
  return td;
}

function logRow(entry) {
  const row = document.createElement('tr');
  row.className = 'event-row';
  const time = new Date(entry.at).toISOString().slice(11, 23);
  // What a session reports passes up through its shard: shown as reaching the root.
  const shown = (id) => {
    const actor = state.actors.get(`${entry.app}/${id}`);
    return actor && isShard(actor) ? 'rolebox' : actorName(entry.app, id);
  };
  const within = `${entry.sourceId ? shown(entry.sourceId) : 'host'} → ${shown(entry.sessionId)}`;
  // Several apps may use the same names: then each row says whose it is.
  const route = state.apps.size > 1 ? `app ${entry.app} · ${within}` : within;
  const toggle = document.createElement('button');
  toggle.type = 'button';
  toggle.className = 'payload-toggle';
  toggle.textContent = '▸';
  toggle.title = 'show the payload';
  toggle.addEventListener('click', (click) => {
    click.stopPropagation();
    togglePayload(row, entry);
  });
  const first = cell('');
  first.append(toggle);
  const actions = cell('', 'event-actions');
  row.append(
    first,
    cell(`#${entry.seq ?? ''}`),
    cell(time),
    cell(route),
    cell(entry.type),
    actions,
  );
  row.dataset.seq = String(entry.seq);
  row.dataset.type = entry.type.toLowerCase();
  row.dataset.actor = within.toLowerCase();
  row.dataset.session = sessionOf(entry.app, entry.sessionId).toLowerCase();
  row.dataset.text = `${route} ${entry.type}`.toLowerCase();
  row.dataset.app = String(entry.app);
  row.title = 'show the snapshot after this event';
  row.addEventListener('click', () => {
    // A replayed run's event: replay.js moves the replay there (it holds the steps).
    if (state.apps.get(entry.app)?.source === 'replay')
      document.dispatchEvent(new CustomEvent('replay-row', { detail: entry.seq }));
    else travelTo(entry);
  });
  decorate(row, entry);
  return row;
}

/** What a row shows besides its cells: viewed now, has a snapshot, offers "fork here". */
function decorate(row, entry) {
  row.classList.toggle('viewing', state.travel === entry.seq);
  row.dataset.hasSnapshot = String(entry.snapshot !== undefined);
  const actions = row.querySelector('.event-actions');
  if (!entry.fork || actions.querySelector('.fork-here')) return;
  const fork = document.createElement('button');
  fork.type = 'button';
  fork.className = 'fork-here';
  fork.textContent = 'fork here';
  fork.title = `a new session from ${entry.fork.sessionId} after its journal entry ${entry.fork.index}`;
  fork.addEventListener('click', (click) => {
    click.stopPropagation();
    forkAt(entry);
  });
  actions.append(fork);
}

function togglePayload(row, entry) {
  const open = row.nextElementSibling?.classList.contains('payload-row');
  row.querySelector('.payload-toggle').textContent = open ? '▸' : '▾';
  if (open) {
    row.nextElementSibling.remove();
    return;
  }
  const detail = document.createElement('tr');
  detail.className = 'payload-row';
  const td = document.createElement('td');
  td.colSpan = 6;
  const pre = document.createElement('pre');
  pre.textContent = JSON.stringify(entry.event, null, 2);
  td.append(pre);
  detail.append(td);
  row.after(detail);
  // Opened on the last rows, it would be below the visible part of the log.
  detail.scrollIntoView({ block: 'nearest' });
}

function matchesFilter(row) {
  const wanted = (id) => $(id).value.trim().toLowerCase();
  const text = wanted('log-filter');
  const type = wanted('log-type');
  const actor = wanted('log-actor');
  const session = wanted('log-session');
  return (
    (!text || row.dataset.text.includes(text)) &&
    (!type || row.dataset.type.includes(type)) &&
    (!actor || row.dataset.actor.includes(actor)) &&
    (!session || row.dataset.session === session)
  );
}

/**
 * Routing through a shard is not the app's story: the root handing a shard a command (and
 * its start), and a shard passing a session's report up to the root, are left out; the
 * session → shard and shard → session legs are shown as reaching the root and coming from it.
 */
function isShardRouting(entry) {
  const target = state.actors.get(`${entry.app}/${entry.sessionId}`);
  const source = entry.sourceId ? state.actors.get(`${entry.app}/${entry.sourceId}`) : undefined;
  if (source && isShard(source)) return target !== undefined && target.parentId === undefined;
  return target !== undefined && isShard(target) && !/^session:/.test(source?.name ?? '');
}

const following = () => $('log-follow').checked;

/**
 * Shows an event as a row. Each app keeps its newest LOG_LIMIT rows: a second app's burst
 * does not push the first one's history out of the log.
 */
export function appendLogRow(entry) {
  if (isShardRouting(entry)) return;
  const body = $('log').tBodies[0];
  const row = logRow(entry);
  row.hidden = !matchesFilter(row);
  if (following()) body.append(row);
  else body.prepend(row);
  const rows = body.querySelectorAll(`tr.event-row[data-app="${Number(entry.app)}"]`);
  if (rows.length > LOG_LIMIT) {
    const oldest = following() ? rows[0] : rows[rows.length - 1];
    if (oldest.nextElementSibling?.classList.contains('payload-row'))
      oldest.nextElementSibling.remove();
    oldest.remove();
  }
  if (following()) $('log-panel').scrollTop = $('log-panel').scrollHeight;
}

/** Draws the log again: each app's newest LOG_LIMIT events, shard routing left out first. */
export function renderLog() {
  const body = $('log').tBodies[0];
  body.replaceChildren();
  const perApp = new Map();
  const shown = [];
  for (let at = state.events.length - 1; at >= 0; at--) {
    const entry = state.events[at];
    if (isShardRouting(entry) || (perApp.get(entry.app) ?? 0) >= LOG_LIMIT) continue;
    perApp.set(entry.app, (perApp.get(entry.app) ?? 0) + 1);
    shown.push(entry);
  }
  for (const entry of shown.reverse()) appendLogRow(entry);
}

/** A server message that completed an entry: its snapshot after (`event_snapshot`) or its mark. */
export function updateEntry(message) {
  const entry = state.events.findLast((candidate) => candidate.seq === message.seq);
  if (!entry) return;
  if (message.type === 'event_snapshot') entry.snapshot = message.snapshot;
  if (message.type === 'event_mark') entry.fork = message.fork;
  const row = $('log').querySelector(`tr.event-row[data-seq="${Number(message.seq)}"]`);
  if (row) decorate(row, entry);
}

/** Marks the row being viewed (or none, back to live). */
export function markViewing() {
  for (const row of $('log').tBodies[0].querySelectorAll('tr.event-row'))
    row.classList.toggle('viewing', row.dataset.seq === String(state.travel));
}

for (const id of ['log-filter', 'log-type', 'log-actor', 'log-session'])
  $(id).addEventListener('input', () => {
    for (const row of $('log').tBodies[0].querySelectorAll('tr.event-row')) {
      row.hidden = !matchesFilter(row);
      const detail = row.nextElementSibling;
      if (detail?.classList.contains('payload-row')) detail.hidden = row.hidden;
    }
  });
$('log-follow').addEventListener('change', renderLog);
