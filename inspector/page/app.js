// The rolebox inspector page. It receives what the server knows (actors with their charts,
// snapshots, events) over /ui, draws the selected actor's statechart with ELK, highlights
// its active states as snapshots arrive, and sends commands back to rolebox actors.
// Plain JavaScript served as is: no build step, nothing from the internet.
// Actors are keyed by the server's `<app>/<sessionId>` id: two apps never collide, and a
// command names the actor of one app.

// What the controls offer; the server sends rolebox's catalogues in its first message.
let catalogue = { signals: [], runtimeEvents: [] };
const LOG_LIMIT = 400;
const SVG = 'http://www.w3.org/2000/svg';

/** @type {Map<string, any>} actors by the server's id (`<app>/<sessionId>`) */
const actors = new Map();
/** @type {Map<number, any>} app connections by the server's number */
const apps = new Map();
// The server lets a page in only with its per-run token, given in the URL it printed.
const token = new URLSearchParams(location.search).get('token');
/** @type {any[]} */
const events = [];
let selected = null;
let socket = null;
let requestSeq = 0;
let renderQueued = false;
let chartFor = null;

const $ = (id) => document.getElementById(id);

function connect() {
  if (!token) {
    setConnection('closed', 'no token: open the URL the inspector printed (…/?token=…)');
    return;
  }
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  socket = new WebSocket(`${scheme}://${location.host}/ui?token=${encodeURIComponent(token)}`);
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

function setConnection(state, text) {
  $('connection').dataset.connection = state;
  $('connection').textContent = text;
}

function receive(message) {
  switch (message.type) {
    case 'init':
      catalogue = message.catalogue;
      apps.clear();
      for (const app of message.apps) apps.set(app.id, app);
      actors.clear();
      for (const actor of message.actors) actors.set(actor.id, actor);
      events.length = 0;
      events.push(...message.events);
      queueRender();
      renderLog();
      break;
    case 'app':
      apps.set(message.app.id, message.app);
      queueRender();
      break;
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
      events.push(message.entry);
      if (events.length > LOG_LIMIT * 4) events.splice(0, events.length - LOG_LIMIT * 4);
      appendLogRow(message.entry);
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

function queueRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderTree();
    renderSelected();
  });
}

// ---- The actor tree ----

/** A short text for a state value: `waiting_user.input`, `awaiting_worker`. */
function describeValue(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => {
      const inner = describeValue(child);
      return inner ? `${key}.${inner}` : key;
    })
    .join(', ');
}

/** The server's id of an actor's parent (parents are in the same app). */
const parentKey = (actor) => (actor.parentId ? `${actor.app}/${actor.parentId}` : undefined);

/** An actor's app has disconnected: it is shown greyed, and takes no commands. */
const isGone = (actor) => apps.get(actor.app)?.connected === false;

function appLabel(app) {
  const name = app?.name ? ` · ${app.name}` : '';
  const pid = app?.pid ? ` (pid ${app.pid})` : '';
  return `app ${app?.id}${name}${pid}${app?.connected === false ? ' · disconnected' : ''}`;
}

/** A shard (`shard:<k>`) only holds sessions by a hash of their id: bookkeeping, not shown. */
const isShard = (actor) => typeof actor.name === 'string' && /^shard:\d+$/.test(actor.name);

function renderTree() {
  const children = new Map();
  const roots = [];
  for (const actor of actors.values()) {
    if (isShard(actor)) continue;
    let parent = parentKey(actor);
    // A session's parent is its shard; it is shown under the root instead.
    const shard = parent ? actors.get(parent) : undefined;
    if (shard && isShard(shard)) parent = parentKey(shard);
    if (parent && actors.has(parent)) {
      const list = children.get(parent) ?? [];
      list.push(actor);
      children.set(parent, list);
    } else roots.push(actor);
  }
  const build = (actor) => {
    const item = document.createElement('li');
    const label = document.createElement('span');
    label.className = `actor${selected === actor.id ? ' selected' : ''}${isGone(actor) ? ' gone' : ''}`;
    label.dataset.actor = actor.name;
    label.dataset.id = actor.id;
    label.dataset.app = String(actor.app);
    label.dataset.sessionId = actor.sessionId;
    label.textContent = actor.name;
    const state = document.createElement('span');
    state.className = 'state';
    state.textContent = describeValue(actor.snapshot?.value) || actor.snapshot?.status || '';
    label.append(state);
    label.addEventListener('click', () => select(actor.id));
    item.append(label);
    const kids = children.get(actor.id);
    if (kids) {
      const list = document.createElement('ul');
      for (const kid of kids) list.append(build(kid));
      item.append(list);
    }
    return item;
  };
  const tree = $('tree');
  const appIds = [...new Set(roots.map((actor) => actor.app))];
  // One app: its actors as they are. Several: a heading for each, so same names read apart.
  if (appIds.length <= 1) {
    tree.replaceChildren(...roots.map(build));
    return;
  }
  tree.replaceChildren(
    ...appIds.map((appId) => {
      const item = document.createElement('li');
      const heading = document.createElement('span');
      heading.className = `app${apps.get(appId)?.connected === false ? ' gone' : ''}`;
      heading.dataset.app = String(appId);
      heading.textContent = appLabel(apps.get(appId) ?? { id: appId });
      const list = document.createElement('ul');
      for (const actor of roots) if (actor.app === appId) list.append(build(actor));
      item.append(heading, list);
      return item;
    }),
  );
}

function select(id) {
  selected = id;
  $('command-status').textContent = '';
  queueRender();
}

// ---- The selected actor ----

function renderSelected() {
  const actor = actors.get(selected);
  if (!actor) return;
  $('chart-title').textContent =
    `${actor.name}  ·  ${describeValue(actor.snapshot?.value) || actor.snapshot?.status || ''}`;
  if (chartFor !== actor.id) {
    chartFor = actor.id;
    void drawChart(actor);
  } else highlight(actor);
  renderContext(actor.snapshot?.context);
  renderControls(actor);
}

/** The ids of the active state nodes for a snapshot value. */
function activeIds(chart, value) {
  const active = new Set();
  const visit = (node, value) => {
    // The root is always active: marking it would only colour the whole chart.
    if (node !== chart.root) active.add(node.id);
    if (value === undefined || value === null) return;
    if (typeof value === 'string') {
      const child = node.children.find((candidate) => candidate.key === value);
      if (child) active.add(child.id);
      return;
    }
    for (const [key, inner] of Object.entries(value)) {
      const child = node.children.find((candidate) => candidate.key === key);
      if (child) visit(child, inner);
    }
  };
  visit(chart.root, value);
  return active;
}

function highlight(actor) {
  if (!actor.chart) return;
  const active = activeIds(actor.chart, actor.snapshot?.value);
  for (const element of document.querySelectorAll('#chart .state-node')) {
    const on = active.has(element.dataset.stateId);
    element.classList.toggle('active', on);
    element.dataset.active = String(on);
  }
}

function edgeLabel(edge) {
  const event =
    edge.event === ''
      ? 'always'
      : edge.event
          .replace(/^xstate\.done\.actor\./, 'done: ')
          .replace(/^xstate\.error\.actor\./, 'error: ');
  return edge.guard ? `${event} [${edge.guard}]` : event;
}

async function drawChart(actor) {
  const container = $('chart');
  if (!actor.chart) {
    container.textContent = 'This actor is not a state machine.';
    return;
  }
  const textWidth = (text) => text.length * 7 + 20;
  const toElk = (node) => {
    const label = node.key || node.id;
    if (node.children.length === 0)
      return { id: node.id, width: Math.max(90, textWidth(label)), height: 34 };
    return {
      id: node.id,
      layoutOptions: { 'elk.padding': '[top=30,left=14,bottom=14,right=14]' },
      children: node.children.map(toElk),
    };
  };
  const graph = {
    id: '__graph',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'RIGHT',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.spacing.nodeNode': '28',
      'elk.layered.spacing.nodeNodeBetweenLayers': '56',
      'elk.edgeLabels.placement': 'CENTER',
    },
    children: [toElk(actor.chart.root)],
    edges: actor.chart.edges.map((edge) => ({
      id: edge.id,
      sources: [edge.source],
      targets: [edge.target],
      labels: [{ text: edgeLabel(edge), width: textWidth(edgeLabel(edge)) * 0.75, height: 14 }],
    })),
  };
  // ELK is the global that /vendor/elk.bundled.js defines.
  const layout = await new globalThis.ELK().layout(graph);
  if (chartFor !== actor.id) return; // another actor was selected meanwhile
  const nodes = new Map();
  const index = (node) => {
    nodes.set(node.id, node);
    for (const child of node.children) index(child);
  };
  index(actor.chart.root);

  const svg = document.createElementNS(SVG, 'svg');
  // Drawn at its natural size so labels stay readable; the panel scrolls around a big one.
  svg.setAttribute('viewBox', `0 0 ${layout.width + 20} ${layout.height + 20}`);
  svg.setAttribute('width', String(layout.width + 20));
  svg.setAttribute('height', String(layout.height + 20));
  svg.innerHTML =
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#56677a"/></marker></defs>';
  const origin = new Map([['__graph', { x: 10, y: 10 }]]);
  const drawNode = (elkNode, offsetX, offsetY) => {
    const node = nodes.get(elkNode.id);
    const x = offsetX + elkNode.x;
    const y = offsetY + elkNode.y;
    origin.set(elkNode.id, { x, y });
    const group = document.createElementNS(SVG, 'g');
    group.classList.add('state-node', node.children.length ? 'compound' : 'atomic');
    if (node.type === 'final') group.classList.add('final');
    group.dataset.stateId = node.id;
    group.dataset.stateKey = node.key;
    const rect = document.createElementNS(SVG, 'rect');
    rect.setAttribute('x', String(x));
    rect.setAttribute('y', String(y));
    rect.setAttribute('width', String(elkNode.width));
    rect.setAttribute('height', String(elkNode.height));
    const text = document.createElementNS(SVG, 'text');
    text.setAttribute('x', String(x + 10));
    text.setAttribute('y', String(y + (node.children.length ? 19 : elkNode.height / 2 + 4)));
    text.textContent = node.key || node.id;
    group.append(rect, text);
    svg.append(group);
    for (const child of elkNode.children ?? []) drawNode(child, x, y);
  };
  drawNode(layout.children[0], 10, 10);
  // ELK gives an edge's points relative to its container (the nearest common ancestor).
  for (const edge of layout.edges ?? []) {
    const at = origin.get(edge.container) ?? { x: 10, y: 10 };
    const group = document.createElementNS(SVG, 'g');
    group.classList.add('edge');
    group.dataset.event = edge.labels?.[0]?.text ?? '';
    for (const section of edge.sections ?? []) {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      const path = document.createElementNS(SVG, 'path');
      path.setAttribute(
        'd',
        points.map((point, i) => `${i ? 'L' : 'M'} ${point.x + at.x} ${point.y + at.y}`).join(' '),
      );
      group.append(path);
    }
    for (const label of edge.labels ?? []) {
      const text = document.createElementNS(SVG, 'text');
      text.setAttribute('x', String(label.x + at.x));
      text.setAttribute('y', String(label.y + at.y + 10));
      text.textContent = label.text;
      group.append(text);
    }
    svg.append(group);
  }
  container.replaceChildren(svg);
  highlight(actor);
  // Start where the actor is: its active state in view.
  const active = [...container.querySelectorAll('.state-node.active.atomic')].at(-1);
  active?.scrollIntoView({ block: 'nearest', inline: 'center' });
}

$('chart-fit').addEventListener('change', (event) => {
  $('chart').classList.toggle('fit', event.target.checked);
});

// ---- Context as collapsible JSON ----

function jsonTree(key, value, depth) {
  if (value !== null && typeof value === 'object') {
    const details = document.createElement('details');
    if (depth < 1) details.open = true;
    const summary = document.createElement('summary');
    const size = Array.isArray(value) ? `[${value.length}]` : `{${Object.keys(value).length}}`;
    summary.innerHTML = `<span class="key"></span> ${size}`;
    summary.firstChild.textContent = key;
    details.append(summary);
    for (const [childKey, child] of Object.entries(value))
      details.append(jsonTree(childKey, child, depth + 1));
    return details;
  }
  const leaf = document.createElement('div');
  leaf.className = 'leaf';
  leaf.innerHTML = '<span class="key"></span>: ';
  leaf.firstChild.textContent = key;
  leaf.append(document.createTextNode(JSON.stringify(value)));
  return leaf;
}

function renderContext(context) {
  $('context').replaceChildren(
    context === undefined
      ? document.createTextNode('(no context)')
      : jsonTree('context', context, 0),
  );
}

// ---- Commands to rolebox actors ----

function renderControls(actor) {
  const name = actor.name ?? '';
  // Only a rolebox app takes commands, and only while it is connected.
  const rolebox = /^(session|fn|loop):/.test(name) && apps.get(actor.app)?.rolebox === true;
  $('controls').hidden = !rolebox || isGone(actor);
  if ($('controls').hidden) return;
  const buttons = $('signal-buttons');
  if (buttons.dataset.for === actor.id) return;
  buttons.dataset.for = actor.id;
  const make = (label, command) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.send = label;
    button.textContent = label;
    button.addEventListener('click', () => send(actor.id, command));
    return button;
  };
  const list = [
    ...catalogue.signals.map((type) => make(type, { kind: 'signal', type })),
    make('idle', { kind: 'idle' }),
  ];
  if (name.startsWith('loop:')) list.push(make('stop loop', { kind: 'stop_loop' }));
  buttons.replaceChildren(...list);
  const select = $('runtime-type');
  if (select.options.length === 0)
    select.append(...catalogue.runtimeEvents.map((type) => new Option(type, type)));
}

function send(actor, command) {
  const requestId = `r${++requestSeq}`;
  $('command-status').className = '';
  $('command-status').textContent = 'sending…';
  socket?.send(JSON.stringify({ type: 'command', requestId, actor, command }));
}

$('send-message').addEventListener('click', () => {
  const actor = actors.get(selected);
  if (actor) send(actor.id, { kind: 'message', text: $('message-text').value });
});

$('send-runtime').addEventListener('click', () => {
  const actor = actors.get(selected);
  if (!actor) return;
  let payload = {};
  try {
    payload = $('runtime-payload').value.trim() ? JSON.parse($('runtime-payload').value) : {};
  } catch (error) {
    $('command-status').className = 'error';
    $('command-status').textContent = `payload is not JSON: ${error.message}`;
    return;
  }
  send(actor.id, { kind: 'runtime', event: { type: $('runtime-type').value, ...payload } });
});

// ---- The event log ----

function actorName(app, sessionId) {
  return actors.get(`${app}/${sessionId}`)?.name ?? sessionId ?? '';
}

function logRow(entry) {
  const row = document.createElement('tr');
  const time = new Date(entry.at).toISOString().slice(11, 23);
  // What a session reports passes up through its shard: shown as reaching the root.
  const shown = (id) => {
    const actor = actors.get(`${entry.app}/${id}`);
    return actor && isShard(actor) ? 'rolebox' : actorName(entry.app, id);
  };
  const within = `${entry.sourceId ? shown(entry.sourceId) : 'host'} → ${shown(entry.sessionId)}`;
  // Several apps may use the same names: then each row says whose it is.
  const route = apps.size > 1 ? `app ${entry.app} · ${within}` : within;
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
  const target = actors.get(`${entry.app}/${entry.sessionId}`);
  const source = entry.sourceId ? actors.get(`${entry.app}/${entry.sourceId}`) : undefined;
  if (source && isShard(source)) return target !== undefined && target.parentId === undefined;
  return target !== undefined && isShard(target) && !/^session:/.test(source?.name ?? '');
}

function appendLogRow(entry) {
  if (isShardRouting(entry)) return;
  const body = $('log').tBodies[0];
  const row = logRow(entry);
  row.hidden = !matchesFilter(row);
  body.append(row);
  while (body.rows.length > LOG_LIMIT) body.deleteRow(0);
}

function renderLog() {
  const body = $('log').tBodies[0];
  body.replaceChildren();
  for (const entry of events.slice(-LOG_LIMIT)) appendLogRow(entry);
}

$('log-filter').addEventListener('input', () => {
  for (const row of $('log').tBodies[0].rows) row.hidden = !matchesFilter(row);
});

connect();
