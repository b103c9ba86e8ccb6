import { type AnyActorRef, assign, emit, enqueueActions, setup } from 'xstate';
import { SYSTEM_ACTOR_ID, sessionActorId } from '../src/base/actor-ids.js';
import {
  addWorkerSession,
  childLoopsOf,
  emptyLoopRegistry,
  finishLoop,
  type LoopRegistration,
  withRegistration,
} from '../src/loop/registry.js';
import type { SessionCommand } from '../src/session/commands.js';
import type { SystemEmitted } from '../src/session/emitted.js';
import type { SessionInput } from '../src/session/machine-types.js';
import type { MachineEnv } from '../src/system/machine-env.js';
import type { ShardEvent, SystemContext, SystemEvent } from '../src/system/machine-types.js';
import { DEFAULT_SHARDS, shardActorId, shardIndexOf } from '../src/system/shards.js';
import {
  createSessionMachine,
  type SessionMachine,
  type SessionMachineEnv,
  type SessionMachineFactories,
} from './session.machine.js';
import { createShardMachine } from './shard.machine.js';

/** Version of the system machine's persisted shape; bump when context or states change. */
export const SYSTEM_MACHINE_VERSION = 4;

/** Machine factories that can replace the built-in ones (replaying a run on changed machines). */
export interface MachineFactories extends SessionMachineFactories {
  readonly session?: (env: SessionMachineEnv) => SessionMachine;
}

/** What the system machine is built with: the machine env, the number of shards, factories. */
export type SystemMachineEnv = MachineEnv & {
  /** Shard actors under the root (default `DEFAULT_SHARDS`, 256). */
  readonly shards?: number;
  readonly factories?: MachineFactories;
};

/**
 * Builds the root system actor of one rolebox (DESIGN §2, §7): shard children
 * (`shard:<k>`, at most `shards`), under which live sessions are spawned by a stable hash of
 * their id. A shard is spawned with its first session and stopped with its last (closed or
 * passivated), so a rolebox pays only for the shards in use: it starts with none. It routes host commands to the session's shard, keeps the loop
 * registry, and emits what sessions report. Its context holds nothing per session: which
 * sessions are live is the host runtime's directory, which refuses duplicates and unknown
 * ids before a command gets here.
 */
export function createSystemMachine(env: SystemMachineEnv) {
  const sessionMachine = restorable<SessionMachine>(
    (env.factories?.session ?? createSessionMachine)(env),
  );
  const shards = env.shards ?? DEFAULT_SHARDS;
  const shardOf = (sessionId: string) => shardActorId(shardIndexOf(sessionId, shards));

  return setup({
    types: {
      context: {} as SystemContext,
      events: {} as SystemEvent,
      emitted: {} as SystemEmitted,
    },
    actors: { shard: createShardMachine(sessionMachine) },
    actions: {
      // A shard whose only session this is stops with it: shards cost nothing unused.
      stopSession: enqueueActions(({ event, enqueue, self }) => {
        if (event.type !== 'system.close_session' && event.type !== 'system.passivate_session')
          return;
        const id = shardOf(event.sessionId);
        const sessions = liveShardSessions(self, id);
        if (sessions === undefined) return;
        if (onlySession(sessions, event.sessionId)) enqueue.stopChild(id);
        else
          enqueue.sendTo(id, {
            type: 'shard.stop',
            sessionId: event.sessionId,
          } satisfies ShardEvent);
      }),
      // A spawn brings up its shard first; anything else for a shard that is not there has
      // no session to reach (the shard would drop it), so nothing is spawned for it.
      toShard: enqueueActions(
        ({ enqueue, self }, { sessionId, event }: { sessionId: string; event: ShardEvent }) => {
          const id = shardOf(sessionId);
          if (childrenOf(self)[id] === undefined) {
            if (event.type !== 'shard.spawn') return;
            const index = shardIndexOf(sessionId, shards);
            enqueue.spawnChild('shard', { id, systemId: id, input: { index } });
          }
          enqueue.sendTo(id, event);
        },
      ),
    },
  }).createMachine({
    id: SYSTEM_ACTOR_ID,
    context: { shards, loopRegistry: emptyLoopRegistry() },
    on: {
      'system.open_session': {
        actions: [
          {
            type: 'toShard',
            params: ({ event }) => ({
              sessionId: event.sessionId,
              event: {
                type: 'shard.spawn',
                input: {
                  sessionId: event.sessionId,
                  at: event.at,
                  ...(event.acceptanceMode ? { acceptanceMode: event.acceptanceMode } : {}),
                  ...(event.nonce === undefined ? {} : { nonce: event.nonce }),
                } satisfies SessionInput,
              },
            }),
          },
          emit(({ event }) => ({ type: 'session_opened' as const, sessionId: event.sessionId })),
        ],
      },
      // A stored session opened on demand: spawned from its persisted snapshot.
      'system.restore_session': {
        actions: {
          type: 'toShard',
          params: ({ event }) => ({
            sessionId: event.sessionId,
            event: {
              type: 'shard.spawn',
              input: { sessionId: event.sessionId, at: event.openedAt, restore: event.snapshot },
            },
          }),
        },
      },
      // Closed or passivated, the session's actors stop the same way; what happens to its
      // record (deleted, or kept with its wake-up) is the runtime's.
      'system.close_session': { actions: 'stopSession' },
      'system.passivate_session': { actions: 'stopSession' },
      // rb.stop(): each shard stops its sessions (see the shard's stopAll), then the shards
      // stop, the last spawned first (each stop copies the root's children; see stopAll).
      'system.stop_sessions': {
        actions: enqueueActions(({ enqueue, self }) => {
          for (const id of Object.keys(childrenOf(self)).reverse()) {
            enqueue.sendTo(id, { type: 'shard.stop_all' } satisfies ShardEvent);
            enqueue.stopChild(id);
          }
        }),
      },
      'system.deliver': {
        actions: {
          type: 'toShard',
          params: ({ event }) => ({
            sessionId: event.sessionId,
            event: { type: 'shard.deliver', sessionId: event.sessionId, command: event.command },
          }),
        },
      },
      'system.start_loop': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          const { loop } = event;
          const registration: LoopRegistration = {
            originSessionId: loop.originSessionId,
            ...(loop.parentLoopId === undefined ? {} : { parentLoopId: loop.parentLoopId }),
            rootLoopId: event.rootLoopId,
            fingerprint: loop.promptFingerprint,
            workerSessionIds: [],
            finished: false,
          };
          enqueue.assign({
            loopRegistry: withRegistration(context.loopRegistry, loop.loopId, registration),
          });
          enqueue({
            type: 'toShard',
            params: {
              sessionId: event.sessionId,
              event: {
                type: 'shard.deliver',
                sessionId: event.sessionId,
                command: { type: 'session.start_loop', loop } satisfies SessionCommand,
              },
            },
          });
        }),
      },
      'system.set_loop_registry': {
        actions: assign(({ event }) => ({ loopRegistry: event.loopRegistry })),
      },
      'system.loop_worker': {
        actions: assign(({ context, event }) => ({
          loopRegistry: addWorkerSession(context.loopRegistry, event.loopId, event.workerSessionId),
        })),
      },
      'system.loop_finished': {
        actions: assign(({ context, event }) => ({
          loopRegistry: finishLoop(context.loopRegistry, event.loopId),
        })),
      },
      // cancelNow cascades: every unfinished child loop (started from one of this loop's
      // workers) is cancelled at once, and cascades further in turn. The runtime reaches
      // their sessions, live or not.
      'system.loop_cascade_cancel': {
        actions: emit(({ context, event }) => ({
          type: 'loop_cascade' as const,
          loops: childLoopsOf(context.loopRegistry, event.loopId),
          at: event.at,
        })),
      },
    },
  });
}

/** An actor's live children, by id (the root's are its shards). */
function childrenOf(actor: AnyActorRef): Record<string, AnyActorRef> {
  return (actor.getSnapshot() as { children: Record<string, AnyActorRef> }).children;
}

/** The ids of the sessions live under shard `shardId`, or undefined when that shard is not running. */
function liveShardSessions(root: AnyActorRef, shardId: string): string[] | undefined {
  const shard = childrenOf(root)[shardId];
  return shard === undefined ? undefined : Object.keys(childrenOf(shard));
}

/** True when `sessions` (a shard's) holds session `sessionId` and no other. */
function onlySession(sessions: readonly string[], sessionId: string): boolean {
  return sessions.length === 1 && sessions[0] === sessionActorId(sessionId);
}

/**
 * The session machine, able to start from a persisted snapshot: spawned with
 * `input.restore`, it restores that snapshot (children included) instead of starting
 * fresh. XState's spawn has no snapshot option; this is how one session is restored into
 * a running system (the prototype is kept, so everything else is the machine's own).
 */
function restorable<TMachine extends SessionMachine>(machine: TMachine): TMachine {
  return Object.create(machine, {
    getInitialSnapshot: {
      value(scope: unknown, input: SessionInput | undefined) {
        return input?.restore === undefined
          ? machine.getInitialSnapshot(scope as never, input as never)
          : machine.restoreSnapshot(input.restore as never, scope as never);
      },
    },
  }) as TMachine;
}

/** The system machine type of one rolebox. */
export type SystemMachine = ReturnType<typeof createSystemMachine>;
