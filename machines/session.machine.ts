import { enqueueActions, setup } from 'xstate';
import { functionActorId, loopActorId } from '../src/actor-ids.js';
import type {
  FunctionContext,
  FunctionEvent,
  FunctionInput,
  FunctionPhase,
} from '../src/function/machine-types.js';
import type { HostEvent, IdleReport } from '../src/host-events.js';
import { shouldCancelLoop } from '../src/loop/cancellation.js';
import type { LoopContext, LoopEvent } from '../src/loop/machine-types.js';
import type { MachineEnv } from '../src/machine-env.js';
import type { ArtifactRecord } from '../src/session/artifact.js';
import type { SessionFacts } from '../src/session/facts.js';
import type {
  IdleCycle,
  SessionContext,
  SessionEvent,
  SessionInput,
} from '../src/session/machine-types.js';
import { makeSignalReceipt } from '../src/signal/reply.js';
import type { SystemLoopEvent } from '../src/system/machine-types.js';
import { createFunctionMachine } from './function.machine.js';
import { createLoopMachine, loopStateOf } from './loop.machine.js';

/** Version of the session machine's persisted shape; bump when context or states change. */
export const SESSION_MACHINE_VERSION = 1;

/** Events a session sends up to the system actor, which emits them to the host. */
export interface ToHostEvent {
  readonly type: 'host';
  readonly event: HostEvent;
}

const factsOf = (context: SessionContext): SessionFacts => ({
  turn: context.turn,
  userMessageInTurn: context.userMessageInTurn,
  artifacts: context.artifacts.map((artifact) => artifact.name),
});

const phaseOf = (value: unknown): FunctionPhase =>
  value === 'gated' ? 'gated' : value === 'complete' ? 'complete' : 'active';

/**
 * Builds the session machine for one rolebox: the container of a session's function
 * actors (`fn:<sessionId>:<name>`), the router of its agent signals, tool reports, idle
 * cycles and user messages, and the owner of its continuation budget and artifacts.
 *
 * The five-phase runtime model of SPEC §4 (idle, running, waiting_user, done, error) is
 * added by the sessions work; the container handlers at the root apply in every phase.
 * Upstream: the system actor. Downstream: function actors (`sendTo`), the host (via the
 * system actor).
 */
export function createSessionMachine(env: MachineEnv) {
  const functionMachine = createFunctionMachine(env);
  const loopMachine = createLoopMachine(env);

  return setup({
    types: {
      context: {} as SessionContext,
      events: {} as SessionEvent,
      input: {} as SessionInput,
    },
    actors: { function: functionMachine, loop: loopMachine },
  }).createMachine({
    id: 'session',
    context: ({ input }) => ({
      sessionId: input.sessionId,
      createdAt: input.at,
      updatedAt: input.at,
      turn: 0,
      userMessageInTurn: false,
      liveFunctions: [],
      retiredFunctions: {},
      continuations: 0,
      idleCycle: 0,
      idle: null,
      artifacts: [],
      nextArtifactSeq: 1,
      activeLoopId: null,
      lastLoop: null,
    }),
    on: {
      'session.activate': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          activate(context, [event.name], event.at, 'host', enqueue);
        }),
      },
      'session.deactivate': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          deactivate(context, [event.name], event.at, 'host', self, enqueue);
        }),
      },
      'session.signal': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          const facts = factsOf(context);
          for (const name of context.liveFunctions) {
            enqueue.sendTo(functionActorId(context.sessionId, name), {
              type: 'fn.signal',
              signal: event.signal,
              facts,
              at: event.at,
            } satisfies FunctionEvent);
          }
          const receipt = makeSignalReceipt(
            event.signal.type,
            context.liveFunctions.length,
            event.signal.payload,
          );
          enqueue.assign({ updatedAt: event.at });
          enqueue.sendParent(toHost({ type: 'signal', sessionId: context.sessionId, receipt }));
        }),
      },
      'session.tool': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          const facts = factsOf(context);
          for (const name of context.liveFunctions) {
            enqueue.sendTo(functionActorId(context.sessionId, name), {
              type: 'fn.tool',
              tool: event.tool,
              facts,
              at: event.at,
            } satisfies FunctionEvent);
          }
          enqueue.assign({ updatedAt: event.at });
          enqueue.sendParent(
            toHost({
              type: 'tool',
              sessionId: context.sessionId,
              tool: event.tool,
              observedOn: context.liveFunctions.length,
            }),
          );
        }),
      },
      'session.idle': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          // The idle ends the turn: count it first, so turn_count(1) holds at the first idle,
          // and judge user_approval() on the turn that just ended, then forget the message.
          const turn = context.turn + 1;
          const facts: SessionFacts = { ...factsOf(context), turn };
          const cycle = context.idleCycle + 1;
          const idle: IdleCycle = {
            cycle,
            awaiting: context.liveFunctions,
            continuing: [],
            completed: [],
            gated: [],
            blocked: [],
          };
          enqueue.assign({
            turn,
            userMessageInTurn: false,
            idleCycle: cycle,
            idle,
            updatedAt: event.at,
          });
          for (const name of context.liveFunctions) {
            enqueue.sendTo(functionActorId(context.sessionId, name), {
              type: 'fn.idle',
              cycle,
              facts,
              at: event.at,
            } satisfies FunctionEvent);
          }
          if (context.liveFunctions.length === 0)
            settleIdle({ ...context, turn, idle }, idle, enqueue);
        }),
      },
      'session.message': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          const next = { ...context, userMessageInTurn: true };
          enqueue.assign({ userMessageInTurn: true, updatedAt: event.at });
          // The stop-loop rule (SPEC §3.5): only the marker, only while the worker side owns the loop.
          const loop = liveLoop(context, self);
          if (loop && shouldCancelLoop(loop, event.text)) {
            enqueue.sendTo(loopActorId(loop.id), {
              type: 'loop.cancel_now',
              at: event.at,
            } satisfies LoopEvent);
          }
          const facts = factsOf(next);
          // A user message is a user action: it resumes gated functions that have no gate;
          // functions with a gate re-check it (user_approval() may now hold).
          for (const name of context.liveFunctions) {
            const hasGate = env.catalog.require(name).gate !== undefined;
            enqueue.sendTo(functionActorId(context.sessionId, name), {
              type: hasGate ? 'fn.facts' : 'fn.resume',
              facts,
              at: event.at,
            } satisfies FunctionEvent);
          }
        }),
      },
      'session.resume': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          if (!context.liveFunctions.includes(event.name)) return;
          enqueue.sendTo(functionActorId(context.sessionId, event.name), {
            type: 'fn.resume',
            facts: factsOf(context),
            at: event.at,
          } satisfies FunctionEvent);
        }),
      },
      'session.kv_set': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          if (!context.liveFunctions.includes(event.name)) return;
          enqueue.sendTo(functionActorId(context.sessionId, event.name), {
            type: 'fn.kv_set',
            key: event.key,
            value: event.value,
            facts: factsOf(context),
            at: event.at,
          } satisfies FunctionEvent);
        }),
      },
      'session.start_loop': {
        guard: ({ context }) => context.activeLoopId === null,
        actions: enqueueActions(({ context, event, enqueue }) => {
          const id = loopActorId(event.loop.loopId);
          enqueue.spawnChild('loop', { id, systemId: id, input: event.loop });
          enqueue.assign({ activeLoopId: event.loop.loopId, updatedAt: event.loop.at });
          enqueue.sendParent(
            toHost({
              type: 'loop_started',
              sessionId: context.sessionId,
              loopId: event.loop.loopId,
            }),
          );
        }),
      },
      'session.stop_loop': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          if (context.activeLoopId === null) return;
          enqueue.sendTo(loopActorId(context.activeLoopId), {
            type: event.now ? 'loop.cancel_now' : 'loop.request_cancel',
            at: event.at,
          } satisfies LoopEvent);
        }),
      },
      'loop.note': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          enqueue.sendParent(
            toHost({
              type: 'note',
              sessionId: context.sessionId,
              loopId: event.loopId,
              text: event.text,
            }),
          );
        }),
      },
      'loop.worker_started': {
        actions: enqueueActions(({ event, enqueue }) => {
          enqueue.sendParent({
            type: 'system.loop_worker',
            loopId: event.loopId,
            workerSessionId: event.workerSessionId,
          });
        }),
      },
      'loop.cascade_cancel': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          enqueue.sendParent({
            type: 'system.loop_cascade_cancel',
            loopId: event.loopId,
            at: context.updatedAt,
          });
        }),
      },
      'loop.finished': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          if (context.activeLoopId !== event.loopId) return;
          enqueue.assign({
            activeLoopId: null,
            lastLoop: event.state,
            updatedAt: event.state.updatedAt,
          });
          enqueue.sendParent({
            type: 'system.loop_finished',
            loopId: event.loopId,
            phase: event.state.phase,
          });
          enqueue.sendParent(
            toHost({
              type: 'loop_finished',
              sessionId: context.sessionId,
              loopId: event.loopId,
              phase: event.state.phase,
            }),
          );
        }),
      },
      'fn.capture': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          const at = context.updatedAt;
          const existing = context.artifacts.find((artifact) => artifact.name === event.artifact);
          const record: ArtifactRecord = existing
            ? { ...existing, content: event.content, updatedAt: at }
            : {
                id: `art-${context.nextArtifactSeq}`,
                name: event.artifact,
                status: 'drafted',
                content: event.content,
                createdAt: at,
                updatedAt: at,
              };
          const artifacts = existing
            ? context.artifacts.map((artifact) => (artifact === existing ? record : artifact))
            : [...context.artifacts, record];
          const next = {
            ...context,
            artifacts,
            nextArtifactSeq: existing ? context.nextArtifactSeq : context.nextArtifactSeq + 1,
          };
          enqueue.assign({ artifacts, nextArtifactSeq: next.nextArtifactSeq });
          enqueue.sendParent(
            toHost({
              type: 'artifact_written',
              sessionId: context.sessionId,
              artifactId: record.id,
              name: record.name,
            }),
          );
          // artifact_exists() may have turned true for any function.
          broadcastFacts(next, at, enqueue);
        }),
      },
      'fn.transition': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          const by = `function:${event.function}`;
          const afterDeactivation = deactivate(
            context,
            event.deactivate,
            context.updatedAt,
            by,
            self,
            enqueue,
          );
          activate(afterDeactivation, event.activate, context.updatedAt, by, enqueue);
        }),
      },
      'fn.completed': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          if (!context.liveFunctions.includes(event.function)) return;
          enqueue.assign({
            liveFunctions: context.liveFunctions.filter((name) => name !== event.function),
            retiredFunctions: {
              ...context.retiredFunctions,
              [event.function]: {
                phase: 'complete',
                reason: 'completed',
                at: event.context.updatedAt,
                context: event.context,
              },
            },
          });
          enqueue.sendParent(
            toHost({
              type: 'function_completed',
              sessionId: context.sessionId,
              function: event.function,
            }),
          );
        }),
      },
      'fn.idle_result': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          const idle = context.idle;
          if (!idle || idle.cycle !== event.cycle || !idle.awaiting.includes(event.function))
            return;
          const { outcome } = event;
          const next: IdleCycle = {
            ...idle,
            awaiting: idle.awaiting.filter((name) => name !== event.function),
            continuing:
              outcome.kind === 'continue' ? [...idle.continuing, event.function] : idle.continuing,
            completed:
              outcome.kind === 'completed' ? [...idle.completed, event.function] : idle.completed,
            gated: outcome.kind === 'gated' ? [...idle.gated, event.function] : idle.gated,
            blocked:
              outcome.kind === 'blocked'
                ? [...idle.blocked, { function: event.function, reason: outcome.reason }]
                : idle.blocked,
          };
          enqueue.assign({ idle: next });
          if (next.awaiting.length === 0) settleIdle({ ...context, idle: next }, next, enqueue);
        }),
      },
    },
    initial: 'idle',
    states: {
      idle: {},
    },
  });

  /** Spawns the named functions that are not live yet; returns the context after. */
  function activate(
    context: SessionContext,
    names: readonly string[],
    at: number,
    by: string,
    enqueue: Enqueue,
  ): SessionContext {
    let live = context.liveFunctions;
    const retired = { ...context.retiredFunctions };
    for (const name of names) {
      if (live.includes(name) || !env.catalog.get(name)) continue;
      const id = functionActorId(context.sessionId, name);
      enqueue.spawnChild('function', {
        id,
        systemId: id,
        input: { sessionId: context.sessionId, name, facts: factsOf(context), at },
      });
      live = [...live, name];
      delete retired[name];
      enqueue.sendParent(
        toHost({ type: 'function_activated', sessionId: context.sessionId, function: name, by }),
      );
    }
    if (live === context.liveFunctions) return context;
    const patch = { liveFunctions: live, retiredFunctions: retired, updatedAt: at };
    enqueue.assign(patch);
    return { ...context, ...patch };
  }

  /** Stops the named live functions, keeping their last state; returns the context after. */
  function deactivate(
    context: SessionContext,
    names: readonly string[],
    at: number,
    by: string,
    self: { getSnapshot(): { children: Record<string, { getSnapshot(): unknown } | undefined> } },
    enqueue: Enqueue,
  ): SessionContext {
    let live = context.liveFunctions;
    const retired = { ...context.retiredFunctions };
    for (const name of names) {
      if (!live.includes(name)) continue;
      const id = functionActorId(context.sessionId, name);
      const last = self.getSnapshot().children[id]?.getSnapshot() as
        | { value: unknown; context: FunctionContext }
        | undefined;
      if (last) {
        retired[name] = {
          phase: phaseOf(last.value),
          reason: 'deactivated',
          at,
          context: last.context,
        };
      }
      enqueue.stopChild(id);
      live = live.filter((other) => other !== name);
      enqueue.sendParent(
        toHost({ type: 'function_deactivated', sessionId: context.sessionId, function: name, by }),
      );
    }
    if (live === context.liveFunctions) return context;
    // A function stopped in the middle of an idle cycle will never answer it.
    const idle = context.idle
      ? { ...context.idle, awaiting: context.idle.awaiting.filter((name) => live.includes(name)) }
      : null;
    const patch = { liveFunctions: live, retiredFunctions: retired, idle, updatedAt: at };
    enqueue.assign(patch);
    const next = { ...context, ...patch };
    if (idle && context.idle && idle.awaiting.length === 0 && context.idle.awaiting.length > 0) {
      settleIdle(next, idle, enqueue);
    }
    return next;
  }

  /** The running loop's state, read from its actor. */
  function liveLoop(
    context: SessionContext,
    self: { getSnapshot(): { children: Record<string, { getSnapshot(): unknown } | undefined> } },
  ) {
    if (context.activeLoopId === null) return undefined;
    const snapshot = self
      .getSnapshot()
      .children[loopActorId(context.activeLoopId)]?.getSnapshot() as
      | { value: unknown; context: LoopContext }
      | undefined;
    return snapshot ? loopStateOf(snapshot) : undefined;
  }

  /** Everyone has answered: grant at most one continuation and report the cycle. */
  function settleIdle(context: SessionContext, idle: IdleCycle, enqueue: Enqueue): void {
    let blocked = idle.blocked;
    let continued = false;
    let continuations = context.continuations;
    if (idle.continuing.length > 0) {
      if (continuations >= env.limits.continuationsPerSession) {
        blocked = [
          ...blocked,
          ...idle.continuing.map((name) => ({ function: name, reason: 'global_cap' as const })),
        ];
      } else {
        continued = true;
        continuations += 1;
        for (const name of idle.continuing) {
          enqueue.sendTo(functionActorId(context.sessionId, name), {
            type: 'fn.continue_granted',
            turn: context.turn,
            at: context.updatedAt,
          } satisfies FunctionEvent);
        }
      }
    }
    enqueue.assign({ idle: null, continuations });
    for (const block of blocked)
      enqueue.sendParent(
        toHost({ type: 'continue_blocked', sessionId: context.sessionId, ...block }),
      );
    if (continued)
      enqueue.sendParent(
        toHost({
          type: 'continue',
          sessionId: context.sessionId,
          functions: idle.continuing,
          continuation: continuations,
        }),
      );
    const report: IdleReport = {
      turn: context.turn,
      continued,
      continuing: continued ? idle.continuing : [],
      completed: idle.completed,
      blocked,
      gated: idle.gated,
    };
    enqueue.sendParent(toHost({ type: 'idle', sessionId: context.sessionId, report }));
  }

  function broadcastFacts(context: SessionContext, at: number, enqueue: Enqueue): void {
    const facts = factsOf(context);
    for (const name of context.liveFunctions) {
      enqueue.sendTo(functionActorId(context.sessionId, name), {
        type: 'fn.facts',
        facts,
        at,
      } satisfies FunctionEvent);
    }
  }
}

/**
 * The part of XState's action enqueuer the session's helpers use. Method syntax on purpose:
 * it lets every handler pass its own event-specific enqueuer.
 */
interface Enqueue {
  assign(patch: Partial<SessionContext>): void;
  sendTo(target: string, event: FunctionEvent): void;
  sendParent(event: ToHostEvent | SystemLoopEvent): void;
  spawnChild(
    src: 'function',
    options: { id: string; systemId: string; input: FunctionInput },
  ): void;
  stopChild(id: string): void;
}

function toHost(event: HostEvent): ToHostEvent {
  return { type: 'host', event };
}

/** The session machine type of one rolebox. */
export type SessionMachine = ReturnType<typeof createSessionMachine>;
