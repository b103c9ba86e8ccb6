// How the bare-machine baselines send commands to rolebox's system machine: as the runtime's
// command path routes them (src/runtime/command-path.ts, step 2) — a command for a live
// session straight to its actor, a restore straight to its shard when that is running —
// so that a baseline takes no XState step the runtime does not take (through the root they
// cost one root and one shard step each). Anything else goes through the root, as there.
import type { AnyActorRef } from 'xstate';
import { sessionActorId } from '../../src/base/actor-ids.js';
import { shardActorId, shardIndexOf } from '../../src/system/shards.js';

/** Sends `command` to session `sessionId` under system actor `root`. */
export function deliverBare(root: AnyActorRef, sessionId: string, command: object): void {
  const session = root.system.get(sessionActorId(sessionId));
  if (session) session.send(command);
  else root.send({ type: 'system.deliver', sessionId, command });
}

/** Restores session `sessionId` from its persisted `snapshot` under system actor `root`. */
export function restoreBare(
  root: AnyActorRef,
  sessionId: string,
  at: number,
  snapshot: unknown,
): void {
  // The shard count the root was built with, as SystemAccess.shardOf reads it.
  const { shards } = root.getSnapshot().context as { shards: number };
  const shard = root.system.get(shardActorId(shardIndexOf(sessionId, shards)));
  if (shard) shard.send({ type: 'shard.spawn', input: { sessionId, at, restore: snapshot } });
  else root.send({ type: 'system.restore_session', sessionId, openedAt: at, snapshot });
}
