import { and, assign, enqueueActions, sendParent, setup } from 'xstate';
import { functionActorId, loopActorId } from '../src/base/actor-ids.js';
import type {
  FunctionContext,
  FunctionEvent,
  FunctionInput,
  FunctionPhase,
} from '../src/function/machine-types.js';
import type { SessionFacts } from '../src/function/session-facts.js';
import { shouldCancelLoop } from '../src/loop/cancellation.js';
import type { LoopContext, LoopEvent } from '../src/loop/machine-types.js';
import type { ArtifactRecord, ArtifactStatus } from '../src/session/artifact.js';
import {
  type ArtifactStoreContext,
  type ArtifactStoreEvent,
  artifactStoreLogic,
  currentArtifact,
} from '../src/session/artifact-store.js';
import type { SessionCommand } from '../src/session/commands.js';
import type { EmittedEvent, IdleReport } from '../src/session/emitted.js';
import type {
  IdleCycle,
  SessionContext,
  SessionEvent,
  SessionInput,
} from '../src/session/machine-types.js';
import {
  HARD_USER_EVENTS,
  type MainAgentDecision,
  type RuntimeEvent,
  type SessionEffect,
  type TimedRuntimeEvent,
  type WaitingReason,
} from '../src/session/runtime-types.js';
import { isPausingSignal } from '../src/signal/catalogue.js';
import { makeSignalReceipt } from '../src/signal/reply.js';
import type { MachineEnv } from '../src/system/machine-env.js';
import type { SystemLoopEvent } from '../src/system/machine-types.js';
import { createFunctionMachine, type FunctionMachine } from './function.machine.js';
import { createLoopMachine, type LoopMachine, loopStateOf } from './loop.machine.js';

/** Version of the session machine's persisted shape; bump when context or states change. */
export const SESSION_MACHINE_VERSION = 1;

/** The child id of a session's artifact store. */
export const ARTIFACTS_CHILD_ID = 'artifacts';

/** Events a session sends up to the system actor, which emits them to the host. */
export interface ToHostEvent {
  readonly type: 'host';
  readonly event: EmittedEvent;
}

/** What session actions may read of themselves: their children's snapshots. */
interface SelfRef {
  getSnapshot(): { children: Record<string, { getSnapshot(): unknown } | undefined> };
}

/**
 * The part of XState's action enqueuer the session's helpers use. Method syntax on purpose:
 * it lets every handler pass its own event-specific enqueuer.
 */
interface Enqueue {
  (action: { type: 'tellParent'; params: { event: ToParentEvent } }): void;
  assign(patch: Partial<SessionContext>): void;
  sendTo(target: string, event: FunctionEvent | LoopEvent | ArtifactStoreEvent): void;
  spawnChild(
    src: 'function',
    options: { id: string; systemId: string; input: FunctionInput },
  ): void;
  stopChild(id: string): void;
}

/**
 * XState types the enqueuer of an action declared in `setup({ actions })` without its
 * sibling named actions (`tellParent`); at run time it has them.
 */
function asEnqueue(enqueue: unknown): Enqueue {
  return enqueue as Enqueue;
}

/** Everything a session sends to the system actor. */
type ToParentEvent = ToHostEvent | SystemLoopEvent;

/**
 * Sends to the system actor through the named action `tellParent`, the session's only
 * outbound path: a model test provides it as a no-op to traverse the machine alone.
 */
function tell(enqueue: Enqueue, event: ToParentEvent): void {
  enqueue({ type: 'tellParent', params: { event } });
}

const phaseOfFunction = (value: unknown): FunctionPhase =>
  value === 'gated' ? 'gated' : value === 'complete' ? 'complete' : 'active';

/** The session's artifacts, read from its store child. */
export function artifactsOf(self: SelfRef): readonly ArtifactRecord[] {
  const store = self.getSnapshot().children[ARTIFACTS_CHILD_ID]?.getSnapshot() as
    | { context: ArtifactStoreContext }
    | undefined;
  return store?.context.artifacts ?? [];
}

function toHost(event: EmittedEvent): ToHostEvent {
  return { type: 'host', event };
}

/** The runtime event without its timestamp, as it is kept in the history. */
function withoutTime(event: TimedRuntimeEvent): RuntimeEvent {
  const { at: _at, ...rest } = event;
  return rest as RuntimeEvent;
}

/** Replacements for the machines a session spawns (replaying a run on changed machines). */
export interface SessionMachineFactories {
  readonly function?: (env: MachineEnv) => FunctionMachine;
  readonly loop?: (env: MachineEnv) => LoopMachine;
}

/** What a session machine is built with: the machine environment and, optionally, replacement factories. */
export type SessionMachineEnv = MachineEnv & { readonly factories?: SessionMachineFactories };

/**
 * Builds the session machine for one rolebox.
 *
 * Its top-level states are the five runtime phases of SPEC §4 — `idle`, `running`,
 * `waiting_user` (one sub-state per waiting reason, each accepting only its own events),
 * `done`, `error` — with every row of the §4.2 transition table. Effects for the host
 * (`invoke_main_agent`, `run_worker`, …) leave as events; the machine performs no I/O.
 *
 * The handlers at the root make the session the container of its function actors
 * (`fn:<sessionId>:<name>`), its loop (`loop:<loopId>`) and its artifact store
 * (`artifacts`, @xstate/store): they route agent signals, tool reports, idle cycles and
 * user messages in every phase.
 * Upstream: the system actor. Downstream: its children (`sendTo`), the host (via the system).
 */
export function createSessionMachine(env: SessionMachineEnv) {
  const functionMachine: ReturnType<typeof createFunctionMachine> = (
    env.factories?.function ?? createFunctionMachine
  )(env);
  const loopMachine: ReturnType<typeof createLoopMachine> = (
    env.factories?.loop ?? createLoopMachine
  )(env);

  const factsOf = (
    context: SessionContext,
    self: SelfRef,
    extraArtifact?: string,
  ): SessionFacts => {
    const names = new Set(artifactsOf(self).map((artifact) => artifact.name));
    if (extraArtifact !== undefined) names.add(extraArtifact);
    return {
      turn: context.turn,
      userMessageInTurn: context.userMessageInTurn,
      artifacts: [...names],
    };
  };

  const effect = (context: SessionContext, enqueue: Enqueue, sessionEffect: SessionEffect) => {
    tell(enqueue, toHost({ type: 'effect', sessionId: context.sessionId, effect: sessionEffect }));
  };

  return setup({
    types: {
      context: {} as SessionContext,
      events: {} as SessionEvent,
      input: {} as SessionInput,
    },
    actors: { function: functionMachine, loop: loopMachine, artifacts: artifactStoreLogic },
    guards: {
      startsWithIntake: ({ event }) =>
        event.type === 'session_started' &&
        event.initialSkill !== undefined &&
        event.intakePrompt !== undefined,
      startsWithSkill: ({ event }) =>
        event.type === 'session_started' && event.initialSkill !== undefined,
      hasIntakePrompt: ({ context }) => context.intakePrompt !== null,
      hasResumeContext: ({ context }) => context.resumeContext !== null,
      decisionAsksUser: ({ event }) =>
        event.type === 'main_agent_decision_created' &&
        (event.decision.kind === 'ask_user' || event.decision.kind === 'review_blackboard'),
      decisionFinishes: ({ event }) =>
        event.type === 'main_agent_decision_created' && event.decision.kind === 'finish',
      decisionNeedsApproval: ({ event }) =>
        event.type === 'main_agent_decision_created' &&
        'requiresApproval' in event.decision &&
        event.decision.requiresApproval === true,
      decisionMatches: ({ context, event }) =>
        (event.type === 'user_approved_next_step' || event.type === 'user_rejected_next_step') &&
        context.waitingReason?.kind === 'approve_step' &&
        context.waitingReason.decisionId === event.decisionId,
      artifactUnderReview: ({ context, event }) =>
        (event.type === 'user_accepted_artifact' || event.type === 'user_rejected_artifact') &&
        context.waitingReason?.kind === 'review_artifact' &&
        context.waitingReason.artifactId === event.artifactId,
      acceptsByUser: ({ context }) => context.acceptanceMode === 'user_confirmed',
      acceptsWithoutConfirmation: ({ context }) => context.acceptanceMode === 'no_confirmation',
      underProgrammaticReview: ({ context }) => context.reviewArtifactId !== null,
      noWorkerInFlight: ({ context }) => context.currentWorkerId === null,
      burstExceeded: ({ context, event }) =>
        event.type === 'session.tool_call' &&
        event.kind === 'loop' &&
        context.toolLoopBurstCount + 1 > env.limits.maxToolBurst,
      pausingSignalUnhandled: ({ context, event }) =>
        event.type === 'session.signal' &&
        isPausingSignal(event.signal.type) &&
        context.liveFunctions.length === 0,
    },
    actions: {
      tellParent: sendParent((_, params: { event: ToParentEvent }) => params.event),
      // ---- Runtime (SPEC §4.2) ----
      /** Every applied runtime event goes into the history; a user action resets the burst count. */
      recordEvent: assign(({ context, event }) => {
        const timed = event as TimedRuntimeEvent;
        return {
          history: [...context.history, { at: timed.at, event: withoutTime(timed) }],
          updatedAt: timed.at,
          ...(HARD_USER_EVENTS.has(timed.type) ? { toolLoopBurstCount: 0 } : {}),
        };
      }),
      startSession: assign(({ event }) => {
        if (event.type !== 'session_started') return {};
        return {
          availableSkills: event.availableSkills,
          skill: event.initialSkill ?? null,
          intakePrompt: event.intakePrompt ?? null,
        };
      }),
      selectSkill: assign(({ event }) =>
        event.type === 'skill_selected' ? { skill: event.skill } : {},
      ),
      waitFor: assign((_, params: { reason: WaitingReason }) => ({ waitingReason: params.reason })),
      waitForIntake: assign(({ context }) => ({
        waitingReason: { kind: 'intake', prompt: context.intakePrompt ?? '' } as WaitingReason,
      })),
      waitForInput: assign({ waitingReason: { kind: 'input' } as WaitingReason }),
      waitForSkill: assign(({ context }) => ({
        waitingReason: {
          kind: 'skill_selection',
          availableSkills: context.availableSkills,
        } as WaitingReason,
      })),
      clearWaitingReason: assign({ waitingReason: null }),
      invokeMainAgent: enqueueActions(({ context, event, enqueue }) => {
        const instruction =
          event.type === 'user_requested_revision' ? event.instruction : undefined;
        effect(context, asEnqueue(enqueue), {
          type: 'invoke_main_agent',
          reason: event.type,
          ...(instruction ? { instruction } : {}),
        });
      }),
      askUser: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'main_agent_decision_created') return;
        const decision = event.decision as Extract<
          MainAgentDecision,
          { kind: 'ask_user' | 'review_blackboard' }
        >;
        const questions = 'questions' in decision ? decision.questions : undefined;
        enqueue.assign({
          waitingReason: {
            kind: 'input',
            ...(decision.message === undefined ? {} : { message: decision.message }),
            ...(questions === undefined ? {} : { questions }),
          },
        });
        if (decision.message)
          effect(context, asEnqueue(enqueue), { type: 'emit_message', message: decision.message });
      }),
      runDecidedWorker: enqueueActions(({ context, event, enqueue }) => {
        const decision =
          event.type === 'main_agent_decision_created'
            ? event.decision
            : event.type === 'user_approved_next_step'
              ? context.pendingDecision
              : null;
        if (!decision || !('workerId' in decision)) return;
        effect(context, asEnqueue(enqueue), {
          type: 'run_worker',
          workerId: decision.workerId,
          decisionId: decision.id,
          ...(decision.instruction === undefined ? {} : { instruction: decision.instruction }),
        });
        enqueue.assign({ pendingDecision: null });
      }),
      awaitApproval: assign(({ event }) => {
        if (event.type !== 'main_agent_decision_created') return {};
        return {
          pendingDecision: event.decision,
          waitingReason: { kind: 'approve_step', decisionId: event.decision.id } as WaitingReason,
        };
      }),
      dropPendingDecision: assign({ pendingDecision: null }),
      startWorker: assign(({ event }) =>
        event.type === 'worker_started'
          ? { currentWorkerId: event.workerId, acceptanceMode: event.acceptanceMode }
          : {},
      ),
      askWorkerQuestions: assign(({ event }) => {
        if (event.type !== 'worker_needs_input') return {};
        return {
          resumeContext: { workerId: event.workerId, questions: event.questions },
          waitingReason: {
            kind: 'worker_questions',
            workerId: event.workerId,
            questions: event.questions,
          } as WaitingReason,
        };
      }),
      resumeWorker: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'user_submitted_input' || !context.resumeContext) return;
        effect(context, asEnqueue(enqueue), {
          type: 'resume_worker',
          workerId: context.resumeContext.workerId,
          answer: event.text,
        });
        enqueue.assign({ resumeContext: null });
      }),
      /** worker_completed: the worker is done; its artifact enters review per the acceptance mode. */
      completeWorker: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'worker_completed') return;
        enqueue.assign({ currentWorkerId: null });
        const setStatus = (status: ArtifactStatus) =>
          enqueue.sendTo(ARTIFACTS_CHILD_ID, {
            type: 'setStatus',
            id: event.artifactId,
            status,
            at: event.at,
          });
        setStatus('under_review');
        if (context.acceptanceMode === 'user_confirmed') {
          enqueue.assign({
            waitingReason: {
              kind: 'review_artifact',
              artifactId: event.artifactId,
              ...(event.questions === undefined ? {} : { questions: event.questions }),
              ...(event.assessment === undefined ? {} : { assessment: event.assessment }),
            },
          });
        } else if (context.acceptanceMode === 'no_confirmation') {
          setStatus('accepted');
          effect(context, asEnqueue(enqueue), { type: 'invoke_main_agent', reason: event.type });
        } else {
          enqueue.assign({ reviewArtifactId: event.artifactId });
          effect(context, asEnqueue(enqueue), {
            type: 'run_programmatic_review',
            artifactId: event.artifactId,
          });
        }
      }),
      setReviewedArtifactStatus: enqueueActions(
        ({ context, event, enqueue }, params: { status: ArtifactStatus }) => {
          const id =
            event.type === 'programmatic_review_passed' ||
            event.type === 'programmatic_review_failed'
              ? context.reviewArtifactId
              : context.waitingReason?.kind === 'review_artifact'
                ? context.waitingReason.artifactId
                : null;
          if (id === null) return;
          enqueue.sendTo(ARTIFACTS_CHILD_ID, {
            type: 'setStatus',
            id,
            status: params.status,
            at: (event as TimedRuntimeEvent).at,
          });
          enqueue.assign({ reviewArtifactId: null });
        },
      ),
      waitForRevision: assign(({ event }) => {
        const instruction =
          event.type === 'user_requested_revision'
            ? event.instruction
            : event.type === 'programmatic_review_failed'
              ? event.reason
              : undefined;
        return {
          waitingReason: {
            kind: 'revision',
            ...(instruction === undefined ? {} : { instruction }),
          } as WaitingReason,
        };
      }),
      fail: assign(({ event }) => ({
        errorReason:
          event.type === 'runtime_failed' || event.type === 'session.runtime_rejected'
            ? event.reason
            : 'failed',
        waitingReason: null,
      })),
      countLoopTool: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'session.tool_call') return;
        if (event.kind === 'loop')
          enqueue.assign({
            toolLoopBurstCount: context.toolLoopBurstCount + 1,
            updatedAt: event.at,
          });
      }),
      stopBurst: enqueueActions(({ context, enqueue }) => {
        const message = `tool-loop burst limit reached: ${env.limits.maxToolBurst} loop-tool calls since the last user action; waiting for the user`;
        enqueue.assign({ waitingReason: { kind: 'input', message } });
        effect(context, asEnqueue(enqueue), { type: 'emit_message', message });
      }),
      waitForSignalAnswer: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'session.signal') return;
        const payload = event.signal.payload ?? {};
        const said = payload.reason ?? payload.message ?? payload.question;
        const message =
          typeof said === 'string' && said !== ''
            ? said
            : `the agent signalled ${event.signal.type}`;
        enqueue.assign({ waitingReason: { kind: 'input', message } });
        effect(context, asEnqueue(enqueue), { type: 'emit_message', message });
      }),

      // ---- Container: functions, signals, tools, loops, artifacts ----
      routeSignal: enqueueActions(({ context, event, self, enqueue }) => {
        if (event.type !== 'session.signal') return;
        const facts = factsOf(context, self);
        for (const name of context.liveFunctions) {
          enqueue.sendTo(functionActorId(context.sessionId, name), {
            type: 'fn.signal',
            signal: event.signal,
            facts,
            at: event.at,
          });
        }
        const receipt = makeSignalReceipt(
          event.signal.type,
          context.liveFunctions.length,
          event.signal.payload,
        );
        enqueue.assign({ updatedAt: event.at });
        tell(
          asEnqueue(enqueue),
          toHost({
            type: 'signal',
            sessionId: context.sessionId,
            receipt,
            payload: event.signal.payload ?? {},
            recordedOn: [...context.liveFunctions],
          }),
        );
      }),
      routeTool: enqueueActions(({ context, event, self, enqueue }) => {
        const tool =
          event.type === 'session.tool'
            ? event.tool
            : event.type === 'session.tool_call'
              ? event.name
              : undefined;
        if (tool === undefined) return;
        const at = (event as { at: number }).at;
        const facts = factsOf(context, self);
        for (const name of context.liveFunctions) {
          enqueue.sendTo(functionActorId(context.sessionId, name), {
            type: 'fn.tool',
            tool,
            facts,
            at,
          });
        }
        enqueue.assign({ updatedAt: at });
        tell(
          asEnqueue(enqueue),
          toHost({
            type: 'tool',
            sessionId: context.sessionId,
            tool,
            observedOn: context.liveFunctions.length,
          }),
        );
      }),
    },
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
      activeLoopId: null,
      lastLoop: null,
      waitingReason: null,
      currentWorkerId: null,
      acceptanceMode: input.acceptanceMode ?? 'user_confirmed',
      resumeContext: null,
      pendingDecision: null,
      reviewArtifactId: null,
      slots: {},
      availableSkills: [],
      skill: null,
      intakePrompt: null,
      toolLoopBurstCount: 0,
      errorReason: null,
      history: [],
    }),
    entry: enqueueActions(({ context, enqueue }) => {
      enqueue.spawnChild('artifacts', {
        id: ARTIFACTS_CHILD_ID,
        systemId: `artifacts:${context.sessionId}`,
      });
    }),
    on: {
      'session.activate': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          activate(context, self, [event.name], event.at, 'host', enqueue);
        }),
      },
      'session.deactivate': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          deactivate(context, self, [event.name], event.at, 'host', enqueue);
        }),
      },
      'session.signal': { actions: 'routeSignal' },
      'session.tool': { actions: 'routeTool' },
      'session.idle': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          // The idle ends the turn: count it first, so turn_count(1) holds at the first idle,
          // and judge user_approval() on the turn that just ended, then forget the message.
          const turn = context.turn + 1;
          const facts: SessionFacts = { ...factsOf(context, self), turn };
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
            });
          }
          if (context.liveFunctions.length === 0)
            settleIdle({ ...context, turn, idle }, idle, enqueue);
        }),
      },
      'session.message': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          enqueue.assign({ userMessageInTurn: true, updatedAt: event.at });
          // The stop-loop rule (SPEC §3.5): only the marker, only while the worker side owns the loop.
          const loop = liveLoop(context, self);
          if (loop && shouldCancelLoop(loop, event.text)) {
            enqueue.sendTo(loopActorId(loop.id), { type: 'loop.cancel_now', at: event.at });
          }
          const facts = factsOf({ ...context, userMessageInTurn: true }, self);
          // A user message is a user action: it resumes gated functions that have no gate;
          // functions with a gate re-check it (user_approval() may now hold).
          for (const name of context.liveFunctions) {
            const hasGate = env.catalog.require(name).gate !== undefined;
            enqueue.sendTo(functionActorId(context.sessionId, name), {
              type: hasGate ? 'fn.facts' : 'fn.resume',
              facts,
              at: event.at,
            });
          }
        }),
      },
      'session.resume': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          forwardToFunction(
            context,
            event.name,
            { type: 'fn.resume', facts: factsOf(context, self), at: event.at },
            enqueue,
          );
        }),
      },
      'session.kv_set': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          forwardToFunction(
            context,
            event.name,
            {
              type: 'fn.kv_set',
              key: event.key,
              value: event.value,
              facts: factsOf(context, self),
              at: event.at,
            },
            enqueue,
          );
        }),
      },
      'session.set_slot': {
        actions: assign(({ context, event }) => ({
          slots: { ...context.slots, [event.key]: event.value },
          updatedAt: event.at,
        })),
      },
      'session.write_artifact': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          const { type: _type, ...write } = event;
          writeArtifact(context, self, write, enqueue);
        }),
      },
      'session.set_artifact_status': {
        actions: enqueueActions(({ event, enqueue }) => {
          enqueue.sendTo(ARTIFACTS_CHILD_ID, {
            type: 'setStatus',
            id: event.id,
            status: event.status,
            at: event.at,
          });
        }),
      },
      'session.runtime_rejected': { target: '.error', actions: 'fail' },
      'session.start_loop': {
        guard: ({ context }) => context.activeLoopId === null,
        actions: enqueueActions(({ context, event, enqueue }) => {
          const id = loopActorId(event.loop.loopId);
          enqueue.spawnChild('loop', { id, systemId: id, input: event.loop });
          enqueue.assign({ activeLoopId: event.loop.loopId, updatedAt: event.loop.at });
          tell(
            enqueue,
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
          });
        }),
      },
      'loop.note': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          tell(
            enqueue,
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
        actions: enqueueActions(({ context, event, enqueue }) => {
          tell(enqueue, {
            type: 'system.loop_worker',
            loopId: event.loopId,
            workerSessionId: event.workerSessionId,
          });
          tell(
            enqueue,
            toHost({
              type: 'round_started',
              sessionId: context.sessionId,
              loopId: event.loopId,
              round: event.round,
              taskId: event.taskId,
              workerSessionId: event.workerSessionId,
            }),
          );
        }),
      },
      'loop.cascade_cancel': {
        actions: enqueueActions(({ context, event, enqueue }) => {
          tell(enqueue, {
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
          tell(enqueue, {
            type: 'system.loop_finished',
            loopId: event.loopId,
            phase: event.state.phase,
          });
          tell(
            enqueue,
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
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          writeArtifact(
            context,
            self,
            { name: event.artifact, content: event.content, at: context.updatedAt },
            enqueue,
          );
        }),
      },
      'fn.transition': {
        actions: enqueueActions(({ context, event, self, enqueue }) => {
          const by = `function:${event.function}`;
          const afterDeactivation = deactivate(
            context,
            self,
            event.deactivate,
            context.updatedAt,
            by,
            enqueue,
          );
          activate(afterDeactivation, self, event.activate, context.updatedAt, by, enqueue);
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
          tell(
            enqueue,
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

    // ---- The runtime phases (SPEC §4.1, §4.2) ----
    initial: 'idle',
    states: {
      idle: {
        on: {
          session_started: [
            {
              guard: 'startsWithIntake',
              target: 'waiting_user.intake',
              actions: ['recordEvent', 'startSession', 'waitForIntake'],
            },
            {
              guard: 'startsWithSkill',
              target: 'waiting_user.input',
              actions: ['recordEvent', 'startSession', 'waitForInput'],
            },
            {
              target: 'waiting_user.skill_selection',
              actions: ['recordEvent', 'startSession', 'waitForSkill'],
            },
          ],
          runtime_failed: { target: 'error', actions: ['recordEvent', 'fail'] },
        },
      },
      running: {
        entry: 'clearWaitingReason',
        on: {
          main_agent_decision_created: [
            {
              guard: 'decisionAsksUser',
              target: 'waiting_user.input',
              actions: ['recordEvent', 'askUser'],
            },
            { guard: 'decisionFinishes', target: 'done', actions: 'recordEvent' },
            {
              guard: 'decisionNeedsApproval',
              target: 'waiting_user.approve_step',
              actions: ['recordEvent', 'awaitApproval'],
            },
            { actions: ['recordEvent', 'runDecidedWorker'] },
          ],
          worker_started: { actions: ['recordEvent', 'startWorker'] },
          worker_needs_input: {
            target: 'waiting_user.worker_questions',
            actions: ['recordEvent', 'askWorkerQuestions'],
          },
          worker_completed: [
            {
              guard: 'acceptsByUser',
              target: 'waiting_user.review_artifact',
              actions: ['recordEvent', 'completeWorker'],
            },
            { actions: ['recordEvent', 'completeWorker'] },
          ],
          programmatic_review_passed: {
            guard: 'underProgrammaticReview',
            actions: [
              'recordEvent',
              { type: 'setReviewedArtifactStatus', params: { status: 'accepted' } },
              'invokeMainAgent',
            ],
          },
          programmatic_review_failed: {
            guard: 'underProgrammaticReview',
            target: 'waiting_user.revision',
            actions: [
              'recordEvent',
              { type: 'setReviewedArtifactStatus', params: { status: 'revision_requested' } },
              'waitForRevision',
            ],
          },
          flow_completed: { target: 'done', actions: 'recordEvent' },
          runtime_failed: { target: 'error', actions: ['recordEvent', 'fail'] },
          // Loop tools may run only with no worker in flight (the facade refuses the others).
          'session.tool_call': [
            {
              guard: and(['noWorkerInFlight', 'burstExceeded']),
              target: 'waiting_user.input',
              actions: 'stopBurst',
            },
            { guard: 'noWorkerInFlight', actions: ['countLoopTool', 'routeTool'] },
          ],
          // A pausing signal that no function FSM handles pauses the session for the user.
          'session.signal': {
            guard: 'pausingSignalUnhandled',
            target: 'waiting_user.input',
            actions: ['routeSignal', 'waitForSignalAnswer'],
          },
        },
      },
      waiting_user: {
        // Every transition names its sub-state; `input` is what a bare target would mean.
        initial: 'input',
        on: {
          runtime_failed: { target: 'error', actions: ['recordEvent', 'fail'] },
        },
        states: {
          skill_selection: {
            on: {
              skill_selected: [
                {
                  guard: 'hasIntakePrompt',
                  target: 'intake',
                  actions: ['recordEvent', 'selectSkill', 'waitForIntake'],
                },
                { target: 'input', actions: ['recordEvent', 'selectSkill', 'waitForInput'] },
              ],
            },
          },
          intake: {
            on: {
              user_submitted_input: {
                target: '#session.running',
                actions: ['recordEvent', 'invokeMainAgent'],
              },
              user_confirmed_intake: {
                target: '#session.running',
                actions: ['recordEvent', 'invokeMainAgent'],
              },
            },
          },
          input: {
            on: {
              user_submitted_input: {
                target: '#session.running',
                actions: ['recordEvent', 'invokeMainAgent'],
              },
              main_agent_decision_created: [
                {
                  guard: 'decisionAsksUser',
                  target: 'input',
                  reenter: true,
                  actions: ['recordEvent', 'askUser'],
                },
                { guard: 'decisionFinishes', target: '#session.done', actions: 'recordEvent' },
                {
                  guard: 'decisionNeedsApproval',
                  target: 'approve_step',
                  actions: ['recordEvent', 'awaitApproval'],
                },
                { target: '#session.running', actions: ['recordEvent', 'runDecidedWorker'] },
              ],
            },
          },
          approve_step: {
            on: {
              user_approved_next_step: {
                guard: 'decisionMatches',
                target: '#session.running',
                actions: ['recordEvent', 'runDecidedWorker'],
              },
              user_rejected_next_step: {
                guard: 'decisionMatches',
                target: '#session.running',
                actions: ['recordEvent', 'dropPendingDecision', 'invokeMainAgent'],
              },
              user_requested_revision: {
                target: '#session.running',
                actions: ['recordEvent', 'dropPendingDecision', 'invokeMainAgent'],
              },
            },
          },
          review_artifact: {
            on: {
              user_accepted_artifact: {
                guard: 'artifactUnderReview',
                target: '#session.running',
                actions: [
                  'recordEvent',
                  { type: 'setReviewedArtifactStatus', params: { status: 'accepted' } },
                  'invokeMainAgent',
                ],
              },
              user_rejected_artifact: {
                guard: 'artifactUnderReview',
                target: 'revision',
                actions: [
                  'recordEvent',
                  { type: 'setReviewedArtifactStatus', params: { status: 'rejected' } },
                  'waitForRevision',
                ],
              },
              user_requested_revision: {
                target: 'revision',
                actions: [
                  'recordEvent',
                  { type: 'setReviewedArtifactStatus', params: { status: 'revision_requested' } },
                  'waitForRevision',
                ],
              },
            },
          },
          worker_questions: {
            on: {
              user_submitted_input: {
                guard: 'hasResumeContext',
                target: '#session.running',
                actions: ['recordEvent', 'resumeWorker'],
              },
            },
          },
          revision: {
            on: {
              user_submitted_input: {
                target: '#session.running',
                actions: ['recordEvent', 'invokeMainAgent'],
              },
            },
          },
        },
      },
      // Terminal phases: no runtime event leaves them; the container handlers still work.
      done: { entry: 'clearWaitingReason' },
      error: { entry: 'clearWaitingReason' },
    },
  });

  /** Sends an event to one function, if it is live (the facade refuses the others first). */
  function forwardToFunction(
    context: SessionContext,
    name: string,
    event: FunctionEvent,
    enqueue: Enqueue,
  ): void {
    if (context.liveFunctions.includes(name))
      enqueue.sendTo(functionActorId(context.sessionId, name), event);
  }

  /** Writes an artifact to the store and tells every function (artifact_exists may now hold). */
  function writeArtifact(
    context: SessionContext,
    self: SelfRef,
    write: { name: string; workerId?: string; content?: string; summary?: string; at: number },
    enqueue: Enqueue,
  ): void {
    const artifacts = artifactsOf(self);
    const current = currentArtifact(artifacts, write.name);
    const store = self.getSnapshot().children[ARTIFACTS_CHILD_ID]?.getSnapshot() as
      | { context: ArtifactStoreContext }
      | undefined;
    // The store edits a draft in place and otherwise creates the next id: the same rule here.
    const id = current?.status === 'drafted' ? current.id : `art-${store?.context.nextSeq ?? 1}`;
    enqueue.sendTo(ARTIFACTS_CHILD_ID, { type: 'write', ...write });
    tell(
      enqueue,
      toHost({
        type: 'artifact_written',
        sessionId: context.sessionId,
        artifactId: id,
        name: write.name,
      }),
    );
    const facts = factsOf(context, self, write.name);
    for (const name of context.liveFunctions) {
      enqueue.sendTo(functionActorId(context.sessionId, name), {
        type: 'fn.facts',
        facts,
        at: write.at,
      });
    }
  }

  /** Spawns the named functions that are not live yet; returns the context after. */
  function activate(
    context: SessionContext,
    self: SelfRef,
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
        input: { sessionId: context.sessionId, name, facts: factsOf(context, self), at },
      });
      live = [...live, name];
      delete retired[name];
      tell(
        enqueue,
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
    self: SelfRef,
    names: readonly string[],
    at: number,
    by: string,
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
      if (last)
        retired[name] = {
          phase: phaseOfFunction(last.value),
          reason: 'deactivated',
          at,
          context: last.context,
        };
      enqueue.stopChild(id);
      live = live.filter((other) => other !== name);
      tell(
        enqueue,
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
    if (idle && context.idle && idle.awaiting.length === 0 && context.idle.awaiting.length > 0)
      settleIdle(next, idle, enqueue);
    return next;
  }

  /** The running loop's state, read from its actor. */
  function liveLoop(context: SessionContext, self: SelfRef) {
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
          });
        }
      }
    }
    enqueue.assign({ idle: null, continuations });
    for (const block of blocked)
      tell(enqueue, toHost({ type: 'continue_blocked', sessionId: context.sessionId, ...block }));
    if (continued) {
      tell(
        enqueue,
        toHost({
          type: 'continue',
          sessionId: context.sessionId,
          functions: idle.continuing,
          continuation: continuations,
        }),
      );
    }
    const report: IdleReport = {
      turn: context.turn,
      continued,
      continuing: continued ? idle.continuing : [],
      completed: idle.completed,
      blocked,
      gated: idle.gated,
    };
    tell(enqueue, toHost({ type: 'idle', sessionId: context.sessionId, report }));
  }
}

/** The session machine type of one rolebox. */
export type SessionMachine = ReturnType<typeof createSessionMachine>;

/** Commands for a session, re-exported for the system machine. */
export type { SessionCommand };
