// The actor tree: each app's actors under their parents, shards left out.
import { $, describeValue, isGone, isShard, parentKey, queueRender, state } from './state.js';

function appLabel(app) {
  const name = app?.name ? ` · ${app.name}` : '';
  const pid = app?.pid ? ` (pid ${app.pid})` : '';
  return `app ${app?.id}${name}${pid}${app?.connected === false ? ' · disconnected' : ''}`;
}

/** Selects an actor: the chart, context and controls show it. */
export function select(id) {
  state.selected = id;
  $('command-status').textContent = '';
  queueRender();
}

/** Draws the tree from `state.actors`. */
export function renderTree() {
  const { actors, apps } = state;
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
    label.className = `actor${state.selected === actor.id ? ' selected' : ''}${isGone(actor) ? ' gone' : ''}`;
    label.dataset.actor = actor.name;
    label.dataset.id = actor.id;
    label.dataset.app = String(actor.app);
    label.dataset.sessionId = actor.sessionId;
    label.textContent = actor.name;
    const stateText = document.createElement('span');
    stateText.className = 'state';
    stateText.textContent = describeValue(actor.snapshot?.value) || actor.snapshot?.status || '';
    label.append(stateText);
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
