// The page's socket to the inspector server (/ui with the per-run token), reconnected
// every second when lost, and what each server message changes in `state`.
import { appendLogRow, renderLog, updateEntry } from './log.js';
import { addTrace } from './pipeline.js';
import { $, LOG_LIMIT, queueRender, state } from './state.js';

// The server lets a page in only with its per-run token, given in the URL it printed.
const token = new URLSearchParams(location.search).get('token');

/** Connects to the server (and again whenever the connection is lost). */
export function connect() {
  if (!token) {
    setConnection('closed', 'no token: open the URL the inspector printed (…/?token=…)');
    return;
  }
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const socket = new WebSocket(
    `${scheme}://${location.host}/ui?token=${encodeURIComponent(token)}`,
  );
  state.socket = socket;
  let opened = false;
  socket.addEventListener('open', () => {
    opened = true;
    setConnection('open', 'connected');
  });
  socket.addEventListener('close', () => {
    setConnection(
      'closed',
      opened
        ? 'disconnected; retrying…'
        : 'refused or not running (is the token the one printed?); retrying…',
    );
    setTimeout(connect, 1000);
  });
  socket.addEventListener('message', (message) => receive(JSON.parse(message.data)));
}

function setConnection(connection, text) {
  $('connection').dataset.connection = connection;
  $('connection').textContent = text;
}

const listeners = [];

/** Also hands every server message to `listener` (for the page's own parts, e.g. replay.js). */
export function onServerMessage(listener) {
  listeners.push(listener);
}

/** Events the page keeps per app (time travel finds an event's snapshot among them). */
const EVENTS_PER_APP = LOG_LIMIT * 4;

/** Keeps an event; its app's oldest goes when the app has more than EVENTS_PER_APP. */
function keepEvent(entry) {
  const { events } = state;
  events.push(entry);
  let count = 0;
  for (const event of events) if (event.app === entry.app) count++;
  if (count <= EVENTS_PER_APP) return;
  events.splice(
    events.findIndex((event) => event.app === entry.app),
    1,
  );
}

function receive(message) {
  for (const listener of listeners) listener(message);
  const { actors, apps, events } = state;
  switch (message.type) {
    case 'init':
      state.catalogue = message.catalogue;
      apps.clear();
      for (const app of message.apps) apps.set(app.id, app);
      actors.clear();
      for (const actor of message.actors) actors.set(actor.id, actor);
      events.length = 0;
      events.push(...message.events);
      state.traces.length = 0;
      for (const entry of message.traces ?? []) addTrace(entry);
      queueRender();
      renderLog();
      break;
    case 'app': {
      const known = apps.has(message.app.id);
      apps.set(message.app.id, message.app);
      // A second app: every row now says whose it is (log.js), the earlier ones too.
      if (!known && apps.size === 2) renderLog();
      queueRender();
      break;
    }
    case 'actor':
      actors.set(message.actor.id, message.actor);
      queueRender();
      break;
    case 'forget':
      for (const id of message.actors) actors.delete(id);
      queueRender();
      break;
    case 'snapshot': {
      const actor = actors.get(message.id);
      if (!actor) return;
      actor.snapshot = message.snapshot;
      queueRender();
      break;
    }
    case 'event':
      keepEvent(message.entry);
      appendLogRow(message.entry);
      break;
    case 'event_snapshot':
    case 'event_mark':
      updateEntry(message);
      break;
    case 'trace':
      addTrace(message.entry);
      queueRender();
      break;
    case 'command_result': {
      const status = $('command-status');
      status.className = message.ok ? 'ok' : 'error';
      status.textContent = message.ok
        ? 'sent'
        : `${message.expired ? 'expired' : 'refused'}: ${message.error}`;
      break;
    }
  }
}
