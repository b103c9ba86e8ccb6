import { enqueueActions, sendParent, setup } from 'xstate';
import { sessionActorId } from '../src/base/actor-ids.js';
import type { SessionCommand } from '../src/session/commands.js';
import type { SessionInput } from '../src/session/machine-types.js';
import type { ShardEvent, SystemEvent } from '../src/system/machine-types.js';
import type { SessionMachine } from './session.machine.js';

/**
 * Builds a shard: the parent of the live sessions whose ids hash to it (DESIGN §7). It
 * spawns, restores, stops and routes to its sessions, and passes what they tell the system
 * (that a loop finished) up to the root; what they tell the host they emit
 * themselves. It keeps no state of its own: which sessions are live is the host
 * runtime's directory, so a spawn copies only this shard's children.
 * Upstream: the root. Downstream: its sessions, and the root (what they report).
 */
export function createShardMachine(sessionMachine: SessionMachine) {
  return setup({
    types: {
      context: {} as { readonly index: number },
      events: {} as ShardEvent,
      input: {} as { readonly index: number },
    },
    actors: { session: sessionMachine },
    actions: {
      spawnSession: enqueueActions(({ enqueue }, input: SessionInput) => {
        const id = sessionActorId(input.sessionId);
        enqueue.spawnChild('session', { id, systemId: id, input });
      }),
      stopSession: enqueueActions(({ enqueue }, { sessionId }: { sessionId: string }) => {
        enqueue.stopChild(sessionActorId(sessionId));
      }),
      // Every session, the last spawned first. Each stop copies the children object; XState
      // stopping a parent stops them first spawned first, and a copy that lost a key other
      // than its last added is a slow (dictionary) object whose next copy costs ~1 µs per
      // key: O(n²) per shard, 13 s for a rolebox with 10 000 live sessions. Last first,
      // every copy stays a fast one.
      stopAll: enqueueActions(({ enqueue, self }) => {
        const children = Object.keys((self.getSnapshot() as { children: object }).children);
        for (const id of children.reverse()) enqueue.stopChild(id);
      }),
      // Only to a session that is here: XState fails a send to a missing child by putting
      // the sender, and so the root and every session, into `error`. The runtime refuses
      // such a command before it gets here; a recorded run replayed on other code may not.
      deliver: enqueueActions(
        (
          { enqueue, self },
          { sessionId, command }: { sessionId: string; command: SessionCommand },
        ) => {
          const id = sessionActorId(sessionId);
          const { children } = self.getSnapshot() as { children: Record<string, unknown> };
          if (Object.hasOwn(children, id)) enqueue.sendTo(id, command);
        },
      ),
      toRoot: sendParent((_, event: SystemEvent) => event),
    },
  }).createMachine({
    id: 'shard',
    context: ({ input }) => ({ index: input.index }),
    on: {
      'shard.spawn': { actions: { type: 'spawnSession', params: ({ event }) => event.input } },
      'shard.stop': { actions: { type: 'stopSession', params: ({ event }) => event } },
      'shard.stop_all': { actions: 'stopAll' },
      'shard.deliver': { actions: { type: 'deliver', params: ({ event }) => event } },
      // What sessions tell the system passes up.
      'system.loop_finished': { actions: { type: 'toRoot', params: ({ event }) => event } },
    },
  });
}

/** The shard machine type of one rolebox. */
export type ShardMachine = ReturnType<typeof createShardMachine>;
