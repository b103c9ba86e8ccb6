import elkBundled from 'elkjs/lib/elk.bundled.js';
import type { Chart, ChartEdge, ChartNode } from './chart.js';

/**
 * ELK's bundled build (it runs in Node, no worker needed). It is CommonJS whose
 * `module.exports` is the constructor, which TypeScript types as the module's namespace.
 */
const ELK = elkBundled as unknown as new () => {
  layout(graph: unknown): Promise<unknown>;
};

/**
 * The label of a transition: its event (`always` for an eventless one, `done: x` and
 * `error: x` for an invoked actor's), then its guard in brackets. The inspector page labels
 * its edges the same way.
 */
export function chartEdgeLabel(edge: ChartEdge): string {
  const event =
    edge.event === ''
      ? 'always'
      : edge.event
          .replace(/^xstate\.done\.actor\./, 'done: ')
          .replace(/^xstate\.error\.actor\./, 'error: ');
  return edge.guard ? `${event} [${edge.guard}]` : event;
}

function nodeLabel(node: ChartNode): string {
  return node.key || node.id;
}

function allNodes(root: ChartNode): ChartNode[] {
  return [root, ...root.children.flatMap(allNodes)];
}

/**
 * The ids of the states a state value (`{ waiting_user: 'approve_step' }`, `'idle'`) makes
 * active in `chart`: the root, and each state on the way down. Keys the chart does not have
 * are skipped, so a value from an older machine highlights what still exists.
 */
export function activeChartStateIds(chart: Chart, value: unknown): string[] {
  const ids = [chart.root.id];
  const walk = (node: ChartNode, part: unknown) => {
    const entries: [string, unknown][] =
      typeof part === 'string'
        ? [[part, undefined]]
        : typeof part === 'object' && part !== null
          ? Object.entries(part)
          : [];
    for (const [key, below] of entries) {
      const child = node.children.find((candidate) => candidate.key === key);
      if (!child) continue;
      ids.push(child.id);
      walk(child, below);
    }
  };
  walk(chart.root, value);
  return ids;
}

/** A Mermaid identifier for a state id (`loop.dispatching.sending` → `loop_dispatching_sending`). */
function mermaidId(id: string): string {
  const safe = id.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(safe) ? safe : `s_${safe}`;
}

/** Text Mermaid reads literally: no quote, no line break, no `;` (which ends a statement). */
function mermaidText(text: string): string {
  return text.replace(/["\n\r;]/g, ' ').replace(/[{}]/g, '');
}

/**
 * The chart as Mermaid `stateDiagram-v2` text: every state declared with its key as label,
 * compound states as blocks with `[*] -->` to their initial state, final states `--> [*]`,
 * every transition with its event label, and the `activeIds` (see
 * {@link activeChartStateIds}) in the `active` class.
 */
export function chartToMermaid(chart: Chart, activeIds: readonly string[] = []): string {
  const lines = ['stateDiagram-v2'];
  const ids = new Map(allNodes(chart.root).map((node) => [node.id, mermaidId(node.id)]));
  const emit = (node: ChartNode, depth: number) => {
    const indent = '  '.repeat(depth);
    const id = ids.get(node.id) as string;
    lines.push(`${indent}state "${mermaidText(nodeLabel(node))}" as ${id}`);
    if (node.children.length === 0) return;
    lines.push(`${indent}state ${id} {`);
    const initial = node.children.find((child) => child.key === node.initial);
    if (initial) lines.push(`${indent}  [*] --> ${ids.get(initial.id)}`);
    for (const child of node.children) emit(child, depth + 1);
    for (const child of node.children)
      if (child.type === 'final') lines.push(`${indent}  ${ids.get(child.id)} --> [*]`);
    lines.push(`${indent}}`);
  };
  emit(chart.root, 1);
  for (const edge of chart.edges) {
    const source = ids.get(edge.source);
    const target = ids.get(edge.target);
    if (source === undefined || target === undefined) continue;
    lines.push(`  ${source} --> ${target} : ${mermaidText(chartEdgeLabel(edge))}`);
  }
  const active = activeIds.flatMap((id) => ids.get(id) ?? []);
  if (active.length > 0) {
    lines.push('  classDef active fill:#ffe9a8,stroke:#c98a00,stroke-width:3px');
    lines.push(`  class ${active.join(',')} active`);
  }
  return `${lines.join('\n')}\n`;
}

/** The font the SVG draws with: monospace, so a label's width follows from its length. */
const STATE_FONT_PX = 13;
const EDGE_FONT_PX = 11;
/** A generous monospace advance (DejaVu Sans Mono is 0.602 em), so no label is clipped. */
const CHAR_EM = 0.62;
/**
 * Room for the initial-state dot, drawn inside the initial state's box before its label:
 * outside it, on the side ELK brings the incoming arrows to, it would sit on their heads.
 */
const INITIAL_DOT = 14;

function textWidth(text: string, fontPx: number): number {
  return Math.ceil(text.length * fontPx * CHAR_EM);
}

interface ElkLaidOut {
  id: string;
  x?: number;
  y?: number;
  width?: number;
  height?: number;
  children?: ElkLaidOut[];
  edges?: ElkLaidOutEdge[];
}

interface ElkLaidOutEdge {
  id: string;
  container?: string;
  sections?: {
    startPoint: { x: number; y: number };
    endPoint: { x: number; y: number };
    bendPoints?: { x: number; y: number }[];
  }[];
  labels?: { text?: string; x?: number; y?: number; width?: number; height?: number }[];
}

/**
 * The ELK graph of a chart, with the layout options of the inspector page (layered, left to
 * right, hierarchy included so transitions cross compound states), boxes sized from their
 * labels.
 */
function elkGraph(chart: Chart) {
  const toElk = (node: ChartNode, initial: boolean): Record<string, unknown> => {
    const label = nodeLabel(node);
    if (node.children.length === 0)
      return {
        id: node.id,
        width: Math.max(90, textWidth(label, STATE_FONT_PX) + 24 + (initial ? INITIAL_DOT : 0)),
        height: 34,
      };
    return {
      id: node.id,
      // The top padding holds the compound's label.
      layoutOptions: {
        'elk.padding': '[top=32,left=14,bottom=14,right=14]',
        'elk.nodeSize.constraints': 'MINIMUM_SIZE',
        'elk.nodeSize.minimum': `(${textWidth(label, STATE_FONT_PX) + 24 + (initial ? INITIAL_DOT : 0)}, 40)`,
      },
      children: node.children.map((child) => toElk(child, child.key === node.initial)),
    };
  };
  const ids = new Set(allNodes(chart.root).map((node) => node.id));
  return {
    id: '__graph',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'RIGHT',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.spacing.nodeNode': '28',
      'elk.layered.spacing.nodeNodeBetweenLayers': '56',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.spacing.edgeLabel': '4',
    },
    children: [toElk(chart.root, false)],
    edges: chart.edges
      .filter((edge) => ids.has(edge.source) && ids.has(edge.target))
      .map((edge) => {
        const label = chartEdgeLabel(edge);
        return {
          id: edge.id,
          sources: [edge.source],
          targets: [edge.target],
          labels: [{ text: label, width: textWidth(label, EDGE_FONT_PX) + 6, height: 14 }],
        };
      }),
  };
}

function xml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

const round = (n: number) => Math.round(n * 10) / 10;

const SVG_STYLE = [
  `.state rect { fill: #f7f9fc; stroke: #56677a; stroke-width: 1.2; }`,
  `.state.compound > rect.box { fill: #eef2f7; }`,
  `.state.active > rect.box { stroke: #c98a00; stroke-width: 2.5; }`,
  // The active leaf is filled; its active ancestors only outlined, or the page is all yellow.
  `.state.atomic.active > rect.box { fill: #ffe9a8; stroke-width: 3; }`,
  `.state.final > rect.inner { fill: none; }`,
  `.state text { font: ${STATE_FONT_PX}px monospace; fill: #1d2733; }`,
  `.state.active > text { font-weight: bold; }`,
  `.initial { fill: #1d2733; }`,
  `.edge path { fill: none; stroke: #56677a; stroke-width: 1.2; marker-end: url(#arrow); }`,
  `.edge text { font: ${EDGE_FONT_PX}px monospace; fill: #3a4b5e; }`,
].join('\n');

/**
 * The chart as a standalone SVG document, laid out with ELK as the inspector page lays it
 * out: states as boxes sized from their labels (compound ones around their children, final
 * ones with a double border, a dot before each initial state), transitions as arrows with
 * their event labels, the `activeIds` highlighted (class `active`). Each state's group has
 * `data-state-id`, so a test or a script can find it.
 */
export async function chartToSvg(chart: Chart, activeIds: readonly string[] = []): Promise<string> {
  const layout = (await new ELK().layout(elkGraph(chart))) as unknown as ElkLaidOut;
  const nodes = new Map(allNodes(chart.root).map((node) => [node.id, node]));
  const active = new Set(activeIds);
  const initialIds = new Set(
    allNodes(chart.root).flatMap((node) =>
      node.children.filter((child) => child.key === node.initial).map((child) => child.id),
    ),
  );
  const margin = 10;
  const width = round((layout.width ?? 0) + 2 * margin);
  const height = round((layout.height ?? 0) + 2 * margin);
  const body: string[] = [];
  const origin = new Map([['__graph', { x: margin, y: margin }]]);
  const drawNode = (laid: ElkLaidOut, offsetX: number, offsetY: number) => {
    const node = nodes.get(laid.id);
    if (!node) return;
    const x = offsetX + (laid.x ?? 0);
    const y = offsetY + (laid.y ?? 0);
    const w = laid.width ?? 0;
    const h = laid.height ?? 0;
    origin.set(laid.id, { x, y });
    const compound = node.children.length > 0;
    const classes = ['state', compound ? 'compound' : 'atomic'];
    if (node.type === 'final') classes.push('final');
    if (active.has(node.id)) classes.push('active');
    body.push(
      `<g class="${classes.join(' ')}" data-state-id="${xml(node.id)}" data-state-key="${xml(node.key)}">`,
      `<rect class="box" x="${round(x)}" y="${round(y)}" width="${round(w)}" height="${round(h)}" rx="6"/>`,
    );
    if (node.type === 'final')
      body.push(
        `<rect class="inner" x="${round(x + 3)}" y="${round(y + 3)}" width="${round(w - 6)}" height="${round(h - 6)}" rx="4"/>`,
      );
    const initial = initialIds.has(node.id);
    const textY = compound ? y + 20 : y + h / 2 + STATE_FONT_PX * 0.35;
    const textX = x + (compound ? 10 : 12) + (initial ? INITIAL_DOT : 0);
    if (initial)
      body.push(
        `<circle class="initial" cx="${round(x + 14)}" cy="${round(compound ? y + 16 : y + h / 2)}" r="4"/>`,
      );
    body.push(
      `<text x="${round(textX)}" y="${round(textY)}">${xml(nodeLabel(node))}</text>`,
      '</g>',
    );
    for (const child of laid.children ?? []) drawNode(child, x, y);
  };
  for (const child of layout.children ?? []) drawNode(child, margin, margin);
  // ELK gives an edge's points relative to its container (the nearest common ancestor).
  const edges = [...(layout.edges ?? []), ...laidEdges(layout.children ?? [])];
  for (const edge of edges) {
    const at = origin.get(edge.container ?? '__graph') ?? { x: margin, y: margin };
    const label = edge.labels?.[0]?.text ?? '';
    body.push(`<g class="edge" data-event="${xml(label)}">`);
    for (const section of edge.sections ?? []) {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      const d = points
        .map((point, i) => `${i ? 'L' : 'M'} ${round(point.x + at.x)} ${round(point.y + at.y)}`)
        .join(' ');
      body.push(`<path d="${d}"/>`);
    }
    for (const laidLabel of edge.labels ?? [])
      body.push(
        `<text x="${round((laidLabel.x ?? 0) + at.x + 3)}" y="${round((laidLabel.y ?? 0) + at.y + 11)}">${xml(laidLabel.text ?? '')}</text>`,
      );
    body.push('</g>');
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<style>\n${SVG_STYLE}\n</style>`,
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#56677a"/></marker></defs>',
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** Edges ELK left on nested nodes (it moves hierarchical ones to where they are drawn). */
function laidEdges(children: readonly ElkLaidOut[]): ElkLaidOutEdge[] {
  return children.flatMap((child) => [
    ...(child.edges ?? []).map((edge) => ({ container: child.id, ...edge })),
    ...laidEdges(child.children ?? []),
  ]);
}
