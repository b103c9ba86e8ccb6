import { assign, emit, enqueueActions, setup } from 'xstate';
import { SYSTEM_ACTOR_ID, sessionActorId } from '../src/base/actor-ids.js';
import { addWorkerSession, finishLoop, type LoopRegistration } from '../src/loop/registry.js';
import type { SessionCommand } from '../src/session/commands.js';
import type { SystemEmitted } from '../src/session/emitted.js';
import type { SessionInput } from '../src/session/machine-types.js';
import type { MachineEnv } from '../src/system/machine-env.js';
import type { SystemContext, SystemEvent } from '../src/system/machine-types.js';
import {
  createSessionMachine,
  type SessionMachine,
  type SessionMachineEnv,
  type SessionMachineFactories,
} from './session.machine.js';

/** Version of the system machine's persisted shape; bump when context or states change. */
export const SYSTEM_MACHINE_VERSION = 1;

/** Machine factories that can replace the built-in ones (replaying a run on changed machines). */
export interface MachineFactories extends SessionMachineFactories {
  readonly session?: (env: SessionMachineEnv) => SessionMachine;
}

/**
 * Builds the root system actor of one rolebox: it owns the registry of live sessions,
 * spawns each as a child `session:<id>` (by the string key `session`), routes host
 * commands to them, and emits what they report to the host.
 *
 * Duplicate ids and unknown sessions are refused by guards here as a last line of defence
 * (a duplicate systemId would put the whole root in error); the facade refuses them first
 * with a `RoleboxError`.
 */
export function createSystemMachine(env: MachineEnv & { readonly factories?: MachineFactories }) {
  const sessionMachine = restorable<SessionMachine>(
    (env.factories?.session ?? createSessionMachine)(env),
  );

  return setup({
    types: {
      context: {} as SystemContext,
      events: {} as SystemEvent,
      emitted: {} as SystemEmitted,
    },
    actors: { session: sessionMachine },
    guards: {
      sessionIsNew: ({ context, event }) =>
        'sessionId' in event && !Object.hasOwn(context.sessions, event.sessionId),
      sessionIsLive: ({ context, event }) =>
        'sessionId' in event && Object.hasOwn(context.sessions, event.sessionId),
    },
    actions: {
      /** Spawns a session (fresh, or from `input.restore`) and registers it. */
      spawnSession: enqueueActions(({ context, enqueue }, input: SessionInput) => {
        const id = sessionActorId(input.sessionId);
        enqueue.spawnChild('session', { id, systemId: id, input });
        enqueue.assign({
          sessions: { ...context.sessions, [input.sessionId]: { openedAt: input.at } },
        });
      }),
    },
  }).createMachine({
    id: SYSTEM_ACTOR_ID,
    context: { sessions: {}, loopRegistry: { loops: {} } },
    on: {
      'system.open_session': {
        guard: 'sessionIsNew',
        actions: [
          {
            type: 'spawnSession',
            params: ({ event }) => ({
              sessionId: event.sessionId,
              at: event.at,
              ...(event.acceptanceMode ? { acceptanceMode: event.acceptanceMode } : {}),
            }),
          },
          emit(({ event }) => ({ type: 'session_opened' as const, sessionId: event.sessionId })),
        ],
      },
      // A stored session opened on demand: spawned from its persisted snapshot.
      'system.restore_session': {
        guard: 'sessionIsNew',
        actions: {
          type: 'spawnSession',
          params: ({ event }) => ({
            sessionId: event.sessionId,
            at: event.openedAt,
            restore: event.snapshot,
          }),
        },
      },
      'system.close_session': {
        guard: 'sessionIsLive',
        actions: enqueueActions(({ context, event, enqueue }) => {
          const { [event.sessionId]: _closed, ...sessions } = context.sessions;
          enqueue.stopChild(sessionActorId(event.sessionId));
          enqueue.assign({ sessions });
        }),
      },
      'system.deliver': {
        guard: 'sessionIsLive',
        actions: enqueueActions(({ event, enqueue }) => {
          enqueue.sendTo(sessionActorId(event.sessionId), event.command);
        }),
      },
      'system.start_loop': {
        guard: 'sessionIsLive',
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
            loopRegistry: { loops: { ...context.loopRegistry.loops, [loop.loopId]: registration } },
          });
          enqueue.sendTo(sessionActorId(event.sessionId), {
            type: 'session.start_loop',
            loop,
          } satisfies SessionCommand);
        }),
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
      // workers) is cancelled at once, and cascades further in turn.
      'system.loop_cascade_cancel': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          for (const child of Object.values(context.loopRegistry.loops)) {
            if (
              child.parentLoopId !== event.loopId ||
              child.finished ||
              !Object.hasOwn(context.sessions, child.originSessionId)
            )
              continue;
            enqueue.sendTo(sessionActorId(child.originSessionId), {
              type: 'session.stop_loop',
              now: true,
              at: event.at,
            } satisfies SessionCommand);
          }
        }),
      },
      host: { actions: emit(({ event }) => event.event) },
    },
  });
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
