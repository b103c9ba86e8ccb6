// Pipeline runs as a picture: the runs an app reported (`rolebox.trace` frames, kept in
// `state.traces`) listed in the tree panel, and the chosen one drawn left to right by ELK
// (the global /vendor/elk.bundled.js defines): source → signals → actions → results, each
// node with its status and duration. A click on a node selects the actor whose events fed
// it (its function, loop or session) and filters the event log to that actor.
import { $, queueRender, state } from './state.js';
import { select } from './tree.js';

const SVG = 'http://www.w3.org/2000/svg';
/** Runs the page keeps, as the server does. */
export const TRACE_LIMIT = 200;
const RESULT_TYPES = new Set([
  'signal.action.applied',
  'signal.action.skipped',
  'signal.action.failed',
]);
const FONT = '12px ui-sans-serif, system-ui, sans-serif';
const NODE_HEIGHT = 44;

/** The run shown (`<app>/<runId>`), and the one whose graph is drawn (or being laid out). */
let shownKey = null;
let drawnKey = null;

const keyOf = (entry) => `${entry.app}/${entry.runId}`;
/** A run no handler took part in (a session's phase change nobody listens to): listed apart. */
const isEmpty = (entry) => entry.trace.signals.length + entry.trace.actions.length === 0;

/** Keeps a run the server sent (in `init` or on its own). */
export function addTrace(entry) {
  state.traces.push(entry);
  if (state.traces.length > TRACE_LIMIT) state.traces.splice(0, state.traces.length - TRACE_LIMIT);
}

/** Shows a run's graph (by its `<app>/<runId>`), or none. */
export function showRun(key) {
  shownKey = key;
  queueRender();
}

/** The list of runs and the shown run's graph. */
export function renderPipeline() {
  renderRunList();
  const view = $('pipeline-view');
  const entry = state.traces.find((candidate) => keyOf(candidate) === shownKey);
  view.hidden = !entry;
  // The first view's hint (still there while no actor is chosen) gives way to the graph.
  const hint = $('chart-hint');
  if (hint) hint.hidden = !!entry;
  if (!entry) {
    drawnKey = null;
    return;
  }
  if (drawnKey !== shownKey) {
    drawnKey = shownKey;
    void drawRun(entry);
  }
}

const formatMs = (ms) => (typeof ms === 'number' && Number.isFinite(ms) ? `${ms} ms` : '');

function renderRunList() {
  const list = $('pipeline-runs');
  const shown = state.traces.filter((entry) => !isEmpty(entry)).reverse();
  const hidden = state.traces.length - shown.length;
  const items = shown.map((entry) => {
    const { trace } = entry;
    const item = document.createElement('li');
    const label = document.createElement('span');
    label.className = `run status-${statusClass(trace.metadata.status)}${keyOf(entry) === shownKey ? ' selected' : ''}`;
    label.dataset.runId = entry.runId;
    label.dataset.key = keyOf(entry);
    label.title = `${entry.runId} · ${trace.metadata.scopeKey ?? ''}`;
    label.textContent = trace.source.sourceType;
    const detail = document.createElement('span');
    detail.className = 'state';
    const time = new Date(entry.at).toISOString().slice(11, 19);
    detail.textContent = `${time} · ${trace.metadata.scopeKey ?? ''} · ${trace.metadata.status} · ${formatMs(trace.metadata.durationMs)}`;
    label.append(detail);
    label.addEventListener('click', () => showRun(keyOf(entry)));
    item.append(label);
    return item;
  });
  if (shown.length === 0 && hidden === 0) {
    const item = document.createElement('li');
    item.className = 'muted';
    item.textContent = 'none yet';
    items.push(item);
  }
  if (hidden > 0) {
    const item = document.createElement('li');
    item.className = 'muted';
    item.dataset.unlisted = String(hidden);
    item.textContent = `and ${hidden} run(s) not listed: no signal or action took part in them`;
    items.push(item);
  }
  list.replaceChildren(...items);
}

/** A status as a colour class: ok (green), skipped (grey), failed (red), waiting (amber). */
function statusClass(status) {
  switch (status) {
    case 'completed':
    case 'applied':
    case 'ok':
      return 'ok';
    case 'failed':
      return 'failed';
    case 'skipped':
    case 'unhandled':
      return 'skipped';
    default:
      return 'waiting';
  }
}

/** The run's nodes (source, signals, actions, results) with status and duration, and its edges. */
export function graphOf(trace) {
  const calls = trace.handlerCalls ?? [];
  const callsOn = (nodeId) => calls.filter((call) => call.nodeId === nodeId);
  const sumMs = (list) => list.reduce((total, call) => total + (call.durationMs ?? 0), 0);
  const resultOf = (actionId) => trace.results.find((record) => record.actionId === actionId);
  const nodes = [
    {
      id: trace.source.sourceId,
      kind: 'source',
      type: trace.source.sourceType,
      status: trace.metadata.status,
      durationMs: trace.metadata.durationMs,
      payload: trace.source.payload,
    },
  ];
  for (const signal of trace.signals) {
    const isResult = RESULT_TYPES.has(signal.signalType) && signal.chain?.parentActionId;
    if (isResult) {
      const record = resultOf(signal.payload?.actionId);
      nodes.push({
        id: signal.signalId,
        kind: 'result',
        type: signal.signalType,
        status: signal.signalType.split('.').at(-1),
        durationMs: record?.durationMs,
        payload: signal.payload,
      });
      continue;
    }
    const on = callsOn(signal.signalId);
    const failed = on.some((call) => call.outcome === 'threw' || call.outcome === 'invalid');
    nodes.push({
      id: signal.signalId,
      kind: 'signal',
      type: signal.signalType,
      status: failed ? 'failed' : on.length === 0 ? 'unhandled' : 'ok',
      durationMs: sumMs(on),
      payload: signal.payload,
    });
  }
  for (const action of trace.actions) {
    const record = resultOf(action.actionId);
    nodes.push({
      id: action.actionId,
      kind: 'action',
      type: action.actionType,
      status: record?.result?.status ?? 'not run',
      durationMs: record?.durationMs ?? sumMs(callsOn(action.actionId)),
      payload: action.payload,
    });
  }
  const ids = new Set(nodes.map((node) => node.id));
  const edges = trace.edges.filter((edge) => ids.has(edge.from) && ids.has(edge.to));
  return { nodes, edges };
}

let measure;
/** A label's width in the font the graph is drawn with. */
function textWidth(text) {
  measure ??= document.createElement('canvas').getContext('2d');
  measure.font = FONT;
  return Math.ceil(measure.measureText(text).width);
}

async function drawRun(entry) {
  const key = keyOf(entry);
  const { trace } = entry;
  const { nodes, edges } = graphOf(trace);
  $('pipeline-title').textContent =
    `${trace.source.sourceType} · ${trace.metadata.status} · ${formatMs(trace.metadata.durationMs)} · ${trace.metadata.scopeKey ?? ''}`;
  const detailOf = (node) => `${node.kind} · ${node.status} · ${formatMs(node.durationMs)}`;
  const graph = {
    id: '__pipeline',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'RIGHT',
      'elk.spacing.nodeNode': '20',
      // Tight enough that a four-node chain fits a 1280 px wide window at ≥ 10 px text.
      'elk.layered.spacing.nodeNodeBetweenLayers': '30',
    },
    children: nodes.map((node) => ({
      id: node.id,
      width: Math.max(textWidth(node.type), textWidth(detailOf(node))) + 22,
      height: NODE_HEIGHT,
    })),
    edges: edges.map((edge, index) => ({
      id: `e${index}`,
      sources: [edge.from],
      targets: [edge.to],
    })),
  };
  const layout = await new globalThis.ELK().layout(graph);
  if (drawnKey !== key) return; // another run was chosen meanwhile
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('width', String(layout.width + 20));
  svg.setAttribute('height', String(layout.height + 20));
  svg.setAttribute('viewBox', `0 0 ${layout.width + 20} ${layout.height + 20}`);
  // A wide chain shrinks to the panel, but never below 10 px text (then the panel scrolls).
  svg.style.maxWidth = '100%';
  svg.style.height = 'auto';
  svg.style.minWidth = `${Math.ceil(((layout.width + 20) * 10) / 12)}px`;
  svg.innerHTML =
    '<defs><marker id="pipeline-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#56677a"/></marker></defs>';
  for (const edge of layout.edges ?? []) {
    for (const section of edge.sections ?? []) {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      const path = document.createElementNS(SVG, 'path');
      path.classList.add('pipeline-edge');
      path.setAttribute(
        'd',
        points.map((point, i) => `${i ? 'L' : 'M'} ${point.x + 10} ${point.y + 10}`).join(' '),
      );
      svg.append(path);
    }
  }
  for (const placed of layout.children ?? []) {
    const node = byId.get(placed.id);
    const x = placed.x + 10;
    const y = placed.y + 10;
    const group = document.createElementNS(SVG, 'g');
    group.classList.add('pipeline-node', `kind-${node.kind}`, `status-${statusClass(node.status)}`);
    group.dataset.nodeId = node.id;
    group.dataset.kind = node.kind;
    group.dataset.type = node.type;
    group.dataset.status = node.status;
    group.dataset.durationMs = String(node.durationMs ?? '');
    const rect = document.createElementNS(SVG, 'rect');
    rect.setAttribute('x', String(x));
    rect.setAttribute('y', String(y));
    rect.setAttribute('width', String(placed.width));
    rect.setAttribute('height', String(placed.height));
    const title = document.createElementNS(SVG, 'text');
    title.classList.add('type');
    title.setAttribute('x', String(x + 11));
    title.setAttribute('y', String(y + 18));
    title.textContent = node.type;
    const detail = document.createElementNS(SVG, 'text');
    detail.classList.add('detail');
    detail.setAttribute('x', String(x + 11));
    detail.setAttribute('y', String(y + 35));
    detail.textContent = detailOf(node);
    const tip = document.createElementNS(SVG, 'title');
    tip.textContent = `${node.id}\n${JSON.stringify(node.payload ?? null, null, 2)}`;
    group.append(rect, title, detail, tip);
    group.addEventListener('click', () => linkToActor(entry, node, group));
    svg.append(group);
  }
  $('pipeline-graph').replaceChildren(svg);
}

/** The names of the actors whose events fed a node, most specific first. */
export function actorNamesFor(trace, node) {
  const payload = node.payload ?? {};
  const source = trace.source.payload ?? {};
  const scope = /^session:(.+)$/.exec(trace.metadata.scopeKey ?? '')?.[1];
  const sessionId = payload.sessionId ?? source.sessionId ?? scope;
  const names = [];
  const fn = payload.function ?? source.function;
  if (sessionId && typeof fn === 'string') names.push(`fn:${sessionId}:${fn}`);
  const loopId = payload.loopId ?? source.loopId;
  if (typeof loopId === 'string') names.push(`loop:${loopId}`);
  if (sessionId) names.push(`session:${sessionId}`);
  return names;
}

/** Selects the actor a node concerns and filters the event log to its events. */
function linkToActor(entry, node, group) {
  for (const other of document.querySelectorAll('#pipeline-graph .pipeline-node.linked'))
    other.classList.remove('linked');
  group.classList.add('linked');
  const actors = [...state.actors.values()].filter((actor) => actor.app === entry.app);
  const names = actorNamesFor(entry.trace, node);
  const actor = names
    .map((name) => actors.find((candidate) => candidate.name === name))
    .find(Boolean);
  const status = $('pipeline-link');
  if (!actor) {
    status.textContent = `no live actor for ${names.join(' / ') || node.id}`;
    return;
  }
  status.textContent = `events of ${actor.name}`;
  select(actor.id);
  // The log's own filter does the rest (its rows carry data-text with the actors' names).
  const filter = $('log-filter');
  if (filter) {
    filter.value = actor.name;
    filter.dispatchEvent(new Event('input'));
  }
}

$('pipeline-close').addEventListener('click', () => showRun(null));
