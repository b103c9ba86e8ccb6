import type { InspectorServer } from './server.js';
import { actorsOfSnapshot, type MachineDefinitions } from './snapshot-actors.js';

/** One stored session record: its persisted snapshot, or why it cannot be read. */
export type StoredSessionRecord =
  | { readonly id: string; readonly snapshot: unknown }
  | { readonly id: string; readonly error: string };

/** What {@link addStoreSource} shows. */
export interface StoreSourceOptions {
  /** The app's name in the page (`store .rolebox/state.db`). */
  readonly name: string;
  readonly sessions: readonly StoredSessionRecord[];
  readonly definitions: MachineDefinitions;
}

/**
 * Shows stored sessions in the inspector as a read-only app: each session with its
 * functions and loop, their charts and contexts. A record that cannot be read is listed as
 * `unreadable` with why (its snapshot `{ status: 'unreadable', error }`), not dropped.
 * Returns the app number they are shown under.
 */
export function addStoreSource(server: InspectorServer, options: StoreSourceOptions): number {
  const handle = server.addSource({ kind: 'store', name: options.name });
  for (const record of options.sessions) {
    const id = `session:${record.id}`;
    if ('error' in record)
      handle.actor({
        sessionId: id,
        name: id,
        snapshot: { status: 'unreadable', error: record.error },
      });
    else
      for (const actor of actorsOfSnapshot(id, record.snapshot, options.definitions))
        handle.actor(actor);
  }
  return handle.app;
}
