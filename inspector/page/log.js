// The event log: every event an app reported, with its route (source → target).
import { $, isShard, LOG_LIMIT, state } from './state.js';

function actorName(app, sessionId) {
  return state.actors.get(`${app}/${sessionId}`)?.name ?? sessionId ?? '';
}

function logRow(entry) {
  const row = document.createElement('tr');
  const time = new Date(entry.at).toISOString().slice(11, 23);
  // What a session reports passes up through its shard: shown as reaching the root.
  const shown = (id) => {
    const actor = state.actors.get(`${entry.app}/${id}`);
    return actor && isShard(actor) ? 'rolebox' : actorName(entry.app, id);
  };
  const within = `${entry.sourceId ? shown(entry.sourceId) : 'host'} → ${shown(entry.sessionId)}`;
  // Several apps may use the same names: then each row says whose it is.
  const route = state.apps.size > 1 ? `app ${entry.app} · ${within}` : within;
  for (const text of [time, route, entry.type]) {
    const cell = document.createElement('td');
    cell.textContent = text;
    row.append(cell);
  }
  row.dataset.text = `${route} ${entry.type}`.toLowerCase();
  return row;
}

function matchesFilter(row) {
  const filter = $('log-filter').value.trim().toLowerCase();
  return !filter || row.dataset.text.includes(filter);
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

export function appendLogRow(entry) {
  if (isShardRouting(entry)) return;
  const body = $('log').tBodies[0];
  const row = logRow(entry);
  row.hidden = !matchesFilter(row);
  body.append(row);
  while (body.rows.length > LOG_LIMIT) body.deleteRow(0);
}

export function renderLog() {
  const body = $('log').tBodies[0];
  body.replaceChildren();
  for (const entry of state.events.slice(-LOG_LIMIT)) appendLogRow(entry);
}

$('log-filter').addEventListener('input', () => {
  for (const row of $('log').tBodies[0].rows) row.hidden = !matchesFilter(row);
});
