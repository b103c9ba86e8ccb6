// What the page knows, shared by its parts: the apps and actors the server reported, the
// event log, the selection, and the socket to the server. Plain JavaScript, no build step.
// Actors are keyed by the server's `<app>/<sessionId>` id: two apps never collide, and a
// command names the actor of one app.

/** Events kept in the page (the log shows the newest LOG_LIMIT of them). */
export const LOG_LIMIT = 400;

/** Everything the page holds; its parts read and change it, then ask for a render. */
export const state = {
  /** What the controls offer; the server sends rolebox's catalogues in its first message. */
  catalogue: { signals: [], runtimeEvents: [] },
  /** @type {Map<string, any>} actors by the server's id (`<app>/<sessionId>`) */
  actors: new Map(),
  /** @type {Map<number, any>} app connections by the server's number */
  apps: new Map(),
  /** @type {any[]} the event log, oldest first */
  events: [],
  /** @type {any[]} pipeline runs (`{ at, app, runId, trace }`), oldest first */
  traces: [],
  /** @type {string | null} the server id of the selected actor */
  selected: null,
  /** @type {WebSocket | null} */
  socket: null,
  /** @type {number | null} the `seq` of the event whose snapshot is viewed (time travel), or live */
  travel: null,
};

/** The element with that id. */
export const $ = (id) => document.getElementById(id);

/** A short text for a state value: `waiting_user.input`, `awaiting_worker`. */
export function describeValue(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => {
      const inner = describeValue(child);
      return inner ? `${key}.${inner}` : key;
    })
    .join(', ');
}

/**
 * Text as nodes that may break after `:`, `.`, `_` and `-` (a `<wbr>` there), so that a
 * long name wraps at a part of it in a narrow panel; its textContent is the text unchanged.
 */
export function breakable(text) {
  const fragment = document.createDocumentFragment();
  for (const part of String(text).split(/(?<=[:._-])/)) {
    if (fragment.childNodes.length > 0) fragment.append(document.createElement('wbr'));
    fragment.append(part);
  }
  return fragment;
}

/** The server's id of an actor's parent (parents are in the same app). */
export const parentKey = (actor) => (actor.parentId ? `${actor.app}/${actor.parentId}` : undefined);

/** An actor's app has disconnected: it is shown greyed, and takes no commands. */
export const isGone = (actor) => state.apps.get(actor.app)?.connected === false;

/** An actor that has stopped (its machine reached a final state, was stopped, or failed). */
export const isFinished = (actor) => ['done', 'stopped', 'error'].includes(actor?.snapshot?.status);

/** A shard (`shard:<k>`) only holds sessions by a hash of their id: bookkeeping, not shown. */
export const isShard = (actor) => typeof actor.name === 'string' && /^shard:\d+$/.test(actor.name);

const renderers = [];
let renderQueued = false;

/** Registers what draws the page from `state` (run once per animation frame at most). */
export function onRender(render) {
  renderers.push(render);
}

/** Asks for the page to be drawn again on the next animation frame. */
export function queueRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    for (const render of renderers) render();
  });
}
