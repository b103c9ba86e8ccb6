// The selected actor's statechart: laid out by ELK (the global /vendor/elk.bundled.js
// defines), drawn as SVG, its active states highlighted as snapshots arrive.
import { $ } from './state.js';

const SVG = 'http://www.w3.org/2000/svg';
/** The actor whose chart is drawn (or being laid out). */
let chartFor = null;

/** Draws the actor's chart if it is not the one shown; else updates its highlight. */
export function showChart(actor) {
  if (chartFor !== actor.id) {
    chartFor = actor.id;
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
