// The selected actor's statechart: laid out by ELK (the global /vendor/elk.bundled.js
// defines), drawn as SVG, its active states highlighted as snapshots arrive.
import { activeStateIds, chartToMermaid, edgeLabel } from './export.js';
import { $, state } from './state.js';

const SVG = 'http://www.w3.org/2000/svg';
/** State labels are drawn this big (px) at scale 1; fit keeps them at least MIN_TEXT_PX. */
const LABEL_PX = 12;
const MIN_TEXT_PX = 10;
const MIN_SCALE = MIN_TEXT_PX / LABEL_PX;
const MAX_FIT_SCALE = 1.25;
/**
 * The view: screen = translate + scale × chart coordinates, applied to the chart's <g>.
 * `follow` keeps the active states in view after every snapshot; a manual move turns it off.
 */
const view = { x: 0, y: 0, scale: 1, follow: true };
/** Each drawn state's box in chart coordinates, by state id. */
let boxes = new Map();
/** The whole chart's size in chart coordinates. */
let extent = { width: 0, height: 0 };
/** The actor whose chart is drawn (or being laid out). */
let chartFor = null;
/**
 * What the last `fit` showed ('readable' or 'whole'), or null once the user zoomed or panned
 * by hand; follow's moves keep it. `fit` after a readable fit shows the whole chart.
 */
let fitKind = null;

/** Draws the actor's chart if it is not the one shown; else updates its highlight. */
export function showChart(actor) {
  if (chartFor !== actor.id) {
    chartFor = actor.id;
    previousActive = null;
    fitKind = null;
    void drawChart(actor);
  } else highlight(actor);
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

/** The edge elements on the shortest path from a state active before to one entered now. */
function lastPath(before, now) {
  const edges = [...document.querySelectorAll('#chart .edge')];
  const entered = (id) => now.has(id) && !before.has(id);
  let frontier = [...before].map((id) => ({ id, path: [] }));
  const seen = new Set(before);
  for (let depth = 0; depth < 4 && frontier.length; depth++) {
    const next = [];
    for (const { id, path } of frontier)
      for (const edge of edges) {
        if (edge.dataset.source !== id) continue;
        const target = edge.dataset.target;
        if (entered(target)) return new Set([...path, edge]);
        if (!seen.has(target)) {
          seen.add(target);
          next.push({ id: target, path: [...path, edge] });
        }
      }
    frontier = next;
  }
  return new Set();
}

/** The active ids of the last highlight, to find the edge the last transition took. */
let previousActive = null;

function highlight(actor) {
  if (!actor.chart) return;
  const active = activeIds(actor.chart, actor.snapshot?.value);
  for (const element of document.querySelectorAll('#chart .state-node')) {
    const on = active.has(element.dataset.stateId);
    element.classList.toggle('active', on);
    element.dataset.active = String(on);
  }
  // The last transition: the edges from a state that was active to one just entered. One
  // snapshot may cover a chain (gated → active → complete, the middle one left at once), so
  // the shortest such path is marked, not only a direct edge.
  if (previousActive && [...active].some((id) => !previousActive.has(id))) {
    const taken = lastPath(previousActive, active);
    for (const element of document.querySelectorAll('#chart .edge'))
      element.classList.toggle('last-edge', taken.has(element));
  }
  previousActive = active;
  if (view.follow) followActive();
}

/** A label's width in px as the page's font draws it (so no state name is clipped). */
const measureCanvas = document.createElement('canvas').getContext('2d');
function textWidth(text, px, weight = 400) {
  measureCanvas.font = `${weight} ${px}px ${getComputedStyle(document.body).fontFamily}`;
  return Math.ceil(measureCanvas.measureText(text).width);
}
/** The height of one line of an edge's label (drawn at 11 px). */
const EDGE_LINE_PX = 13;

/**
 * An edge's label as drawn: the event, and its guard on a second line. Half as wide as on
 * one line, which keeps the layers of a chart close enough to fit a laptop's screen.
 */
function labelLines(edge) {
  const label = edgeLabel(edge);
  const guard = label.indexOf(' [');
  return guard < 0 ? [label] : [label.slice(0, guard), label.slice(guard + 1)];
}

/** Room around a state's label: 10 px before it (where it is drawn), at least as much after. */
const LABEL_PAD = 24;

async function drawChart(actor) {
  const container = $('chart');
  if (!actor.chart) {
    container.textContent = 'This actor is not a state machine.';
    return;
  }
  const toElk = (node) => {
    const label = node.key || node.id;
    // An active leaf's label is drawn bold (app.css): its box is sized for that, so the
    // bold text never reaches the border.
    if (node.children.length === 0)
      return {
        id: node.id,
        width: Math.max(90, textWidth(label, LABEL_PX, 700) + LABEL_PAD),
        height: 34,
      };
    return {
      id: node.id,
      layoutOptions: {
        'elk.padding': '[top=30,left=14,bottom=14,right=14]',
        // A compound's own label sits in its top band: keep the box at least that wide.
        'elk.nodeSize.constraints': 'MINIMUM_SIZE',
        'elk.nodeSize.minimum': `(${textWidth(label, LABEL_PX) + LABEL_PAD + 4}, 40)`,
      },
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
      'elk.layered.spacing.nodeNodeBetweenLayers': '40',
      'elk.edgeLabels.placement': 'CENTER',
    },
    children: [toElk(actor.chart.root)],
    edges: actor.chart.edges.map((edge) => ({
      id: edge.id,
      sources: [edge.source],
      targets: [edge.target],
      labels: [
        {
          text: edgeLabel(edge),
          width: Math.max(...labelLines(edge).map((line) => textWidth(line, 11))) + 4,
          height: EDGE_LINE_PX * labelLines(edge).length,
        },
      ],
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
  const edgesById = new Map(actor.chart.edges.map((edge) => [edge.id, edge]));

  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('width', '100%');
  svg.setAttribute('height', '100%');
  svg.innerHTML =
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#56677a"/></marker>' +
    '<marker id="arrow-last" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#f5b041"/></marker></defs>';
  const stage = document.createElementNS(SVG, 'g');
  stage.id = 'chart-view';
  svg.append(stage);
  boxes = new Map();
  extent = { width: layout.width + 20, height: layout.height + 20 };
  const origin = new Map([['__graph', { x: 10, y: 10 }]]);
  const drawNode = (elkNode, offsetX, offsetY, parentId) => {
    const node = nodes.get(elkNode.id);
    const x = offsetX + elkNode.x;
    const y = offsetY + elkNode.y;
    origin.set(elkNode.id, { x, y });
    boxes.set(node.id, { x, y, width: elkNode.width, height: elkNode.height, parentId });
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
    stage.append(group);
    for (const child of elkNode.children ?? []) drawNode(child, x, y, node.id);
  };
  drawNode(layout.children[0], 10, 10, null);
  // ELK gives an edge's points relative to its container (the nearest common ancestor).
  for (const edge of layout.edges ?? []) {
    const at = origin.get(edge.container) ?? { x: 10, y: 10 };
    const group = document.createElementNS(SVG, 'g');
    group.classList.add('edge');
    group.dataset.event = edge.labels?.[0]?.text ?? '';
    group.dataset.source = edgesById.get(edge.id)?.source ?? '';
    group.dataset.target = edgesById.get(edge.id)?.target ?? '';
    for (const section of edge.sections ?? []) {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      const path = document.createElementNS(SVG, 'path');
      path.setAttribute(
        'd',
        points.map((point, i) => `${i ? 'L' : 'M'} ${point.x + at.x} ${point.y + at.y}`).join(' '),
      );
      group.append(path);
    }
    const chartEdge = edgesById.get(edge.id);
    for (const label of edge.labels ?? []) {
      const text = document.createElementNS(SVG, 'text');
      text.setAttribute('x', String(label.x + at.x));
      text.setAttribute('y', String(label.y + at.y + 10));
      for (const [index, line] of (chartEdge ? labelLines(chartEdge) : [label.text]).entries()) {
        const span = document.createElementNS(SVG, 'tspan');
        span.setAttribute('x', String(label.x + at.x));
        if (index > 0) span.setAttribute('dy', String(EDGE_LINE_PX));
        span.textContent = line;
        text.append(span);
      }
      group.append(text);
    }
    stage.append(group);
  }
  container.replaceChildren(svg);
  highlight(actor);
  // Start where the actor is: a readable fit around its active state.
  fitView();
}

/** The panel's size on screen. */
function panelSize() {
  const container = $('chart');
  return { width: container.clientWidth, height: container.clientHeight };
}

function applyView() {
  const stage = document.getElementById('chart-view');
  if (stage) stage.setAttribute('transform', `translate(${view.x} ${view.y}) scale(${view.scale})`);
  const follow = $('chart-follow');
  follow.setAttribute('aria-pressed', String(view.follow));
  follow.classList.toggle('on', view.follow);
}

/** The union box of the given state ids (chart coordinates), or null. */
function unionBox(ids) {
  let box = null;
  for (const id of ids) {
    const b = boxes.get(id);
    if (!b) continue;
    if (!box) box = { x1: b.x, y1: b.y, x2: b.x + b.width, y2: b.y + b.height };
    else {
      box.x1 = Math.min(box.x1, b.x);
      box.y1 = Math.min(box.y1, b.y);
      box.x2 = Math.max(box.x2, b.x + b.width);
      box.y2 = Math.max(box.y2, b.y + b.height);
    }
  }
  return box;
}

/** The deepest active states (for parallel states, every active leaf). */
function activeLeaves() {
  return [...document.querySelectorAll('#chart .state-node.active.atomic')].map(
    (element) => element.dataset.stateId,
  );
}

function centreOn(box, scale) {
  const { width, height } = panelSize();
  view.scale = scale;
  view.x = width / 2 - ((box.x1 + box.x2) / 2) * scale;
  view.y = height / 2 - ((box.y1 + box.y2) / 2) * scale;
}

/**
 * `fit`: the whole chart when its labels stay ≥ 10 px on screen; else first the active region
 * (the active states' parent compound) at the smallest scale that keeps them readable, and,
 * pressed again, the whole chart however small (so `fit` always does something).
 */
function fitView() {
  const { width, height } = panelSize();
  if (!width || !height || !extent.width) return;
  const kind = fitKind === 'readable' ? 'whole' : 'readable';
  const margin = 16;
  const whole = Math.min(
    (width - margin) / extent.width,
    (height - margin) / extent.height,
    MAX_FIT_SCALE,
  );
  if (whole >= MIN_SCALE || kind === 'whole') {
    centreOn({ x1: 0, y1: 0, x2: extent.width, y2: extent.height }, whole);
    applyView();
  } else {
    const leaves = activeLeaves();
    const parents = leaves.map((id) => boxes.get(id)?.parentId).filter(Boolean);
    const region = unionBox(parents.length ? parents : leaves) ?? {
      x1: 0,
      y1: 0,
      x2: extent.width,
      y2: extent.height,
    };
    const scale = Math.max(
      MIN_SCALE,
      Math.min(
        (width - margin) / (region.x2 - region.x1),
        (height - margin) / (region.y2 - region.y1),
        MAX_FIT_SCALE,
      ),
    );
    centreOn(region, scale);
    applyView();
    if (view.follow) followActive();
  }
  fitKind = kind;
}

/** Moves the view (keeping its scale) so that the active leaves lie inside the panel. */
function followActive() {
  const box = unionBox(activeLeaves());
  if (!box) return applyView();
  const { width, height } = panelSize();
  const pad = 24;
  const left = view.x + box.x1 * view.scale;
  const right = view.x + box.x2 * view.scale;
  const top = view.y + box.y1 * view.scale;
  const bottom = view.y + box.y2 * view.scale;
  // The whole chart is shown (a second `fit`): the active states are in it, leave it whole.
  if (fitKind === 'whole' && left >= 0 && right <= width && top >= 0 && bottom <= height)
    return applyView();
  if (right - left > width - 2 * pad || bottom - top > height - 2 * pad) {
    // Too big at this scale (parallel leaves far apart): zoom out as far as readable.
    const scale = Math.max(
      MIN_SCALE,
      Math.min(
        view.scale,
        (width - 2 * pad) / (box.x2 - box.x1),
        (height - 2 * pad) / (box.y2 - box.y1),
      ),
    );
    centreOn(box, scale);
  } else {
    if (left < pad) view.x += pad - left;
    else if (right > width - pad) view.x -= right - (width - pad);
    if (top < pad) view.y += pad - top;
    else if (bottom > height - pad) view.y -= bottom - (height - pad);
  }
  applyView();
}

/** Zooms by `factor` about the screen point (px, py) of the panel; a manual move. */
function zoomAbout(factor, px, py) {
  fitKind = null;
  const scale = Math.min(4, Math.max(0.1, view.scale * factor));
  view.x = px - ((px - view.x) * scale) / view.scale;
  view.y = py - ((py - view.y) * scale) / view.scale;
  view.scale = scale;
  view.follow = false;
  applyView();
}

function zoomCentre(factor) {
  const { width, height } = panelSize();
  zoomAbout(factor, width / 2, height / 2);
}

function panBy(dx, dy) {
  fitKind = null;
  view.x += dx;
  view.y += dy;
  view.follow = false;
  applyView();
}

function actualSize() {
  fitKind = null;
  const { width, height } = panelSize();
  const leaves = unionBox(activeLeaves());
  const cx = leaves ? (leaves.x1 + leaves.x2) / 2 : extent.width / 2;
  const cy = leaves ? (leaves.y1 + leaves.y2) / 2 : extent.height / 2;
  view.follow = false;
  view.scale = 1;
  view.x = width / 2 - cx;
  view.y = height / 2 - cy;
  applyView();
}

function setFollow(on) {
  view.follow = on;
  if (on) followActive();
  else applyView();
}

const chartElement = $('chart');
// Focusable, so that the keys work when the chart panel has focus.
chartElement.tabIndex = 0;
chartElement.addEventListener(
  'wheel',
  (event) => {
    event.preventDefault();
    const rect = chartElement.getBoundingClientRect();
    // Pixel deltas from touchpads are small, line deltas from wheels are ~3: scale both alike.
    const delta = event.deltaMode === 1 ? event.deltaY * 16 : event.deltaY;
    zoomAbout(Math.exp(-delta * 0.0015), event.clientX - rect.left, event.clientY - rect.top);
  },
  { passive: false },
);
let drag = null;
chartElement.addEventListener('pointerdown', (event) => {
  if (event.button !== 0) return;
  drag = { x: event.clientX, y: event.clientY, moved: false };
  chartElement.setPointerCapture(event.pointerId);
});
chartElement.addEventListener('pointermove', (event) => {
  if (!drag) return;
  const dx = event.clientX - drag.x;
  const dy = event.clientY - drag.y;
  if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 3) return;
  drag.moved = true;
  drag.x = event.clientX;
  drag.y = event.clientY;
  chartElement.classList.add('dragging');
  panBy(dx, dy);
});
const endDrag = () => {
  drag = null;
  chartElement.classList.remove('dragging');
};
chartElement.addEventListener('pointerup', endDrag);
chartElement.addEventListener('pointercancel', endDrag);
chartElement.addEventListener('keydown', (event) => {
  const step = 60;
  const keys = {
    '+': () => zoomCentre(1.2),
    '=': () => zoomCentre(1.2),
    '-': () => zoomCentre(1 / 1.2),
    0: fitView,
    1: actualSize,
    f: () => setFollow(!view.follow),
    ArrowLeft: () => panBy(step, 0),
    ArrowRight: () => panBy(-step, 0),
    ArrowUp: () => panBy(0, step),
    ArrowDown: () => panBy(0, -step),
  };
  const action = keys[event.key];
  if (!action || event.ctrlKey || event.metaKey || event.altKey) return;
  event.preventDefault();
  action();
});
$('chart-zoom-in').addEventListener('click', () => zoomCentre(1.2));
$('chart-zoom-out').addEventListener('click', () => zoomCentre(1 / 1.2));
$('chart-fit').addEventListener('click', fitView);
$('chart-actual').addEventListener('click', actualSize);
$('chart-follow').addEventListener('click', () => setFollow(!view.follow));
window.addEventListener('resize', () => {
  if (view.follow) followActive();
});

// ---- Export: the drawn chart as a standalone SVG, the chart as Mermaid text. ----

/** The drawn styles an exported SVG needs, since the page's stylesheet does not travel. */
const EXPORTED_STYLE = [
  'fill',
  'fill-opacity',
  'stroke',
  'stroke-width',
  'stroke-dasharray',
  'font-family',
  'font-size',
  'font-weight',
  'marker-end',
];

function download(name, type, text) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

function exportName(actor, extension) {
  return `${(actor?.name ?? 'chart').replace(/[^A-Za-z0-9_.-]+/g, '_')}.${extension}`;
}

/** The drawn chart at scale 1, its styles inlined, on the page's background. */
function standaloneSvg() {
  const svg = document.querySelector('#chart svg');
  if (!svg) return undefined;
  const copy = svg.cloneNode(true);
  copy.setAttribute('xmlns', SVG);
  copy.setAttribute('width', String(extent.width));
  copy.setAttribute('height', String(extent.height));
  copy.setAttribute('viewBox', `0 0 ${extent.width} ${extent.height}`);
  copy.querySelector('#chart-view')?.removeAttribute('transform');
  const originals = svg.querySelectorAll('*');
  const copies = copy.querySelectorAll('*');
  originals.forEach((original, i) => {
    if (original.closest('defs')) return;
    const style = getComputedStyle(original);
    copies[i].setAttribute(
      'style',
      EXPORTED_STYLE.map((name) => `${name}:${style.getPropertyValue(name)}`).join(';'),
    );
  });
  const background = document.createElementNS(SVG, 'rect');
  background.setAttribute('width', '100%');
  background.setAttribute('height', '100%');
  background.setAttribute('fill', getComputedStyle(document.body).backgroundColor);
  copy.insertBefore(background, copy.querySelector('#chart-view'));
  return new XMLSerializer().serializeToString(copy);
}

$('chart-export-svg').addEventListener('click', () => {
  const text = standaloneSvg();
  if (text) download(exportName(state.actors.get(state.selected), 'svg'), 'image/svg+xml', text);
});
$('chart-export-mermaid').addEventListener('click', () => {
  const actor = state.actors.get(state.selected);
  if (!actor?.chart) return;
  const text = chartToMermaid(actor.chart, activeStateIds(actor.chart, actor.snapshot?.value));
  download(exportName(actor, 'mmd'), 'text/plain', text);
  // Also on the clipboard, for pasting into a PR; a page without the permission just downloads.
  navigator.clipboard?.writeText(text).catch(() => {});
});
