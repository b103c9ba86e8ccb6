// The selected actor's context, as collapsible JSON.
import { $ } from './state.js';

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

export function renderContext(context) {
  $('context').replaceChildren(
    context === undefined
      ? document.createTextNode('(no context)')
      : jsonTree('context', context, 0),
  );
}
