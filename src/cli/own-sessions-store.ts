import type { LoadWakeUpsOptions, SnapshotStore, WakeUp } from '../ports/snapshot-store.js';
import { SNAPSHOT_STORE_METHODS } from '../ports/store-contract.js';

/** The methods of the store port, as the contract lists them. */
type PortMethod = (typeof SNAPSHOT_STORE_METHODS)[number];

// A method added to the port but not to SNAPSHOT_STORE_METHODS would not be forwarded:
// it fails to compile here instead.
true satisfies [Exclude<keyof SnapshotStore, PortMethod | 'close' | 'immediate'>] extends [never]
  ? true
  : never;

/** Every method of the port of `store`, bound to it: what a view of a store passes on unchanged. */
function forwardedMethods(store: SnapshotStore): Pick<SnapshotStore, PortMethod> {
  return Object.fromEntries(
    SNAPSHOT_STORE_METHODS.map((name) => [name, store[name].bind(store)]),
  ) as Pick<SnapshotStore, PortMethod>;
}

/** A store as {@link ownSessionsStore} makes it: the store, plus which sessions are driven. */
export interface OwnSessionsStore extends SnapshotStore {
  /** Says that this process drives session `sessionId`: its wake-ups are read from now on. */
  drive(sessionId: string): void;
}

/**
 * The store as `rolebox loop` and `rolebox send` use it: all of it, except that the stored
 * wake-ups of sessions this process does not drive are not read. A rolebox arms every
 * stored wake-up it reads, and a woken session's loop would run its next round here, with
 * this process's worker; another stored loop belongs to `rolebox resume`, which runs it
 * with its own. Reads and writes of records, claims, `immediate` and this process's own
 * wake-ups go to `store` unchanged.
 */
export function ownSessionsStore(store: SnapshotStore): OwnSessionsStore {
  const driven = new Set<string>();
  return {
    ...forwardedMethods(store),
    get immediate() {
      return store.immediate;
    },
    async loadWakeUps(options?: LoadWakeUpsOptions): Promise<WakeUp[]> {
      const wakeUps = await store.loadWakeUps(options);
      return wakeUps.filter((wakeUp) => driven.has(wakeUp.sessionId));
    },
    async close(): Promise<void> {
      await store.close?.();
    },
    drive(sessionId: string): void {
      driven.add(sessionId);
    },
  };
}
