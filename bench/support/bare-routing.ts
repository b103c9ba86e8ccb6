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

/**
 * Opens session `sessionId` under system actor `root` and leaves it waiting on a human: the
 * commands the runtime sends for `openSession`, `activate(functionName)` and a
 * `need_approval` signal giving `reason`.
 */
export function openPausedBare(
  root: AnyActorRef,
  sessionId: string,
  functionName: string,
  at: number,
  reason: string,
): void {
  root.send({ type: 'system.open_session', sessionId, at, nonce: sessionId });
  deliverBare(root, sessionId, { type: 'session.activate', name: functionName, at });
  deliverBare(root, sessionId, {
    type: 'session.signal',
    signal: { type: 'need_approval', payload: { reason } },
    at,
  });
}
