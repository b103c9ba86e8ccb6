// Sources: pseudo-apps inside the inspector (a store browsed, a recorded run replayed).
// Their actors are kept and shown like an app's, read-only; a page's `replay` frames go
// to the source that takes them.

import type { InspectorSource, SourceHandle } from './inspector-types.js';
import type { Frame } from './kept-records.js';
import type { KeptStore } from './kept-store.js';

/**
 * Adds `source` as an app of `store` and returns the handle it reports through. Its own
 * records overstepping a bound are logged like an app's frames (they are not counted).
 */
export function addSource(
  store: KeptStore,
  source: InspectorSource,
  log: (message: string) => void,
  broadcast: (text: string) => void,
): SourceHandle {
  const app = store.addApp(undefined, source);
  const drop = (why: string) => log(`source ${app.name}: ${why}`);
  return {
    app: app.id,
    actor: (actor) =>
      store.putActor(app, `${app.id}/${actor.sessionId}`, actor.sessionId, { ...actor }, drop),
    snapshot: (sessionId, snapshot) =>
      store.putSnapshot(`${app.id}/${sessionId}`, sessionId, { snapshot }, drop),
    event: (sessionId, event, at) =>
      store.putEvent(app, `${app.id}/${sessionId}`, sessionId, { event }, drop, at),
    forget: (sessionIds) => store.forget(app, sessionIds),
    broadcast,
  };
}

/**
 * A page's `replay` frame, for the first source that takes page frames; returns why it was
 * refused (the caller logs it), or undefined.
 */
export function sourceFrame(store: KeptStore, message: Frame): string | undefined {
  const source = [...store.apps.values()].find((app) => app.source?.onPageFrame)?.source;
  return source?.onPageFrame?.(message) ?? (source ? undefined : 'no replay running');
}

/** The messages sources have for a page that just connected (e.g. a replay's position). */
export function sourcePageMessages(store: KeptStore): string[] {
  const texts: string[] = [];
  for (const app of store.apps.values()) {
    const text = app.source?.pageMessage?.();
    if (text !== undefined) texts.push(text);
  }
  return texts;
}
