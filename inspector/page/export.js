// What the page exports: the chart as Mermaid stateDiagram-v2 text, the same text the CLI's
// `rolebox chart --format mermaid` writes (inspector/chart-export.ts; test/inspector.page-export
// .test.ts holds the two equal). No DOM here, so Node can import it for that test.

/** The label of a transition, as the chart draws it and as chart-export.ts writes it. */
export function edgeLabel(edge) {
  const event =
    edge.event === ''
      ? 'always'
      : edge.event
          .replace(/^xstate\.done\.actor\./, 'done: ')
          .replace(/^xstate\.error\.actor\./, 'error: ');
  return edge.guard ? `${event} [${edge.guard}]` : event;
}

function allNodes(root) {
  return [root, ...root.children.flatMap(allNodes)];
}

/** The ids a state value makes active: the root, and each state on the way down. */
export function activeStateIds(chart, value) {
  const ids = [chart.root.id];
  const walk = (node, part) => {
    const entries =
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

function mermaidId(id) {
  const safe = id.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(safe) ? safe : `s_${safe}`;
}

// Mermaid would end a statement at `;` and break on quotes and line breaks.
function mermaidText(text) {
  return text.replace(/["\n\r;]/g, ' ').replace(/[{}]/g, '');
}

/** The chart as Mermaid `stateDiagram-v2` text, the `activeIds` in the `active` class. */
export function chartToMermaid(chart, activeIds = []) {
  const lines = ['stateDiagram-v2'];
  const ids = new Map(allNodes(chart.root).map((node) => [node.id, mermaidId(node.id)]));
  const emit = (node, depth) => {
    const indent = '  '.repeat(depth);
    const id = ids.get(node.id);
    lines.push(`${indent}state "${mermaidText(node.key || node.id)}" as ${id}`);
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
    lines.push(`  ${source} --> ${target} : ${mermaidText(edgeLabel(edge))}`);
  }
  const active = activeIds.flatMap((id) => ids.get(id) ?? []);
  if (active.length > 0) {
    lines.push('  classDef active fill:#ffe9a8,stroke:#c98a00,stroke-width:3px');
    lines.push(`  class ${active.join(',')} active`);
  }
  return `${lines.join('\n')}\n`;
}
