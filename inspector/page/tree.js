// The actor tree: each app's actors under their parents (a rolebox's sessions under its root,
// each session's functions and loop under it), shards left out. A rolebox's invoked helper
// actors (a loop round's prepare, dispatch, timers…) are hidden unless "show helpers" is on;
// finished actors fold into an "n finished" group; a disconnected app says when it left.
import {
  $,
  breakable,
  describeValue,
  isFinished,
  isGone,
  isShard,
  parentKey,
  queueRender,
  state,
} from './state.js';

/** Actors whose own names a rolebox gives them (a session's artifact store among them); the rest are what they invoke. */
const ROLEBOX_ACTOR = /^(rolebox$|session:|fn:|loop:|artifacts:)/;
/** Parents whose "n finished" group the user opened (kept across renders). */
const openFinished = new Set();

const clock = (at) => new Date(at).toISOString().slice(11, 19);

function appLabel(app) {
  const name = app?.name ? ` · ${app.name}` : '';
  const pid = app?.pid ? ` (pid ${app.pid})` : '';
  const left =
    app?.connected === false
      ? ` · disconnected${app.leftAt ? ` at ${clock(app.leftAt)}` : ''}`
      : '';
  return `app ${app?.id}${name}${pid}${left}`;
}

/** Selects an actor: the chart, context and controls show it (live). */
export function select(id) {
  state.selected = id;
  state.travel = null;
  $('command-status').textContent = '';
  queueRender();
}

/** A rolebox's helper actor: hidden unless asked for. */
function isHelper(actor) {
  return state.apps.get(actor.app)?.rolebox === true && !ROLEBOX_ACTOR.test(actor.name ?? '');
}

/** Draws the tree from `state.actors`. */
export function renderTree() {
  const { actors, apps } = state;
  const showHelpers = $('tree-helpers').checked;
  const children = new Map();
  const roots = [];
  for (const actor of actors.values()) {
    if (isShard(actor)) continue;
    if (!showHelpers && isHelper(actor)) continue;
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
  const contains = (actor, id) =>
    actor.id === id || (children.get(actor.id) ?? []).some((kid) => contains(kid, id));
  const build = (actor) => {
    const item = document.createElement('li');
    const label = document.createElement('span');
    label.className = `actor${state.selected === actor.id ? ' selected' : ''}${isGone(actor) ? ' gone' : ''}${isFinished(actor) ? ' finished' : ''}`;
    label.dataset.actor = actor.name;
    label.dataset.id = actor.id;
    label.dataset.app = String(actor.app);
    label.dataset.sessionId = actor.sessionId;
    label.append(breakable(actor.name));
    const stateText = document.createElement('span');
    stateText.className = 'state';
    stateText.append(
      breakable(describeValue(actor.snapshot?.value) || actor.snapshot?.status || ''),
    );
    label.append(stateText);
    label.addEventListener('click', () => select(actor.id));
    item.append(label);
    const kids = children.get(actor.id);
    if (kids) item.append(buildList(actor.id, kids, !isFinished(actor) && !isGone(actor)));
    return item;
  };
  /**
   * Finished actors fold into an "n finished" group beside live ones. Under a parent that
   * finished (or an app that left), or where none is live, folding would hide everything
   * there is to see (an app that ran and stopped): they are listed as they are.
   */
  const buildList = (parentId, kids, parentLive) => {
    const list = document.createElement('ul');
    const fold = parentLive && kids.some((kid) => !isFinished(kid));
    const finished = fold ? kids.filter(isFinished) : [];
    for (const kid of kids) if (!fold || !isFinished(kid)) list.append(build(kid));
    if (finished.length > 0) {
      const item = document.createElement('li');
      item.className = 'finished-group';
      const details = document.createElement('details');
      details.open =
        openFinished.has(parentId) || finished.some((kid) => contains(kid, state.selected));
      details.addEventListener('toggle', () => {
        if (details.open) openFinished.add(parentId);
        else openFinished.delete(parentId);
      });
      const summary = document.createElement('summary');
      summary.textContent = `${finished.length} finished`;
      const inner = document.createElement('ul');
      for (const kid of finished) inner.append(build(kid));
      details.append(summary, inner);
      item.append(details);
      list.append(item);
    }
    return list;
  };
  const tree = $('tree');
  const appIds = [...new Set([...roots.map((actor) => actor.app), ...apps.keys()])].filter(
    (appId) => roots.some((actor) => actor.app === appId),
  );
  // One live app: its actors as they are. Several, or one that left: a heading for each.
  const anyGone = appIds.some((appId) => apps.get(appId)?.connected === false);
  if (appIds.length <= 1 && !anyGone) {
    tree.replaceChildren(...buildList(null, roots, true).children);
    return;
  }
  tree.replaceChildren(
    ...appIds.map((appId) => {
      const item = document.createElement('li');
      const heading = document.createElement('span');
      const app = apps.get(appId);
      heading.className = `app${app?.connected === false ? ' gone' : ''}`;
      heading.dataset.app = String(appId);
      if (app?.leftAt) heading.dataset.leftAt = String(app.leftAt);
      heading.textContent = appLabel(app ?? { id: appId });
      item.append(
        heading,
        buildList(
          `app:${appId}`,
          roots.filter((actor) => actor.app === appId),
          app?.connected !== false,
        ),
      );
      return item;
    }),
  );
}

$('tree-helpers').addEventListener('change', queueRender);
