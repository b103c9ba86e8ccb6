import { setup } from 'xstate';
import { functionChildId } from '../src/base/actor-ids.js';
import { expirySignal } from '../src/function/approval-expiry.js';
import {
  namedRequestId,
  requestDeadline,
  requestTouchedBy,
} from '../src/function/approval-step.js';
import { artifactStoreLogic } from '../src/session/artifact-store.js';
import type { SessionCommand } from '../src/session/commands.js';
import type { SystemEmitted } from '../src/session/emitted.js';
import type { SessionContext, SessionEvent, SessionInput } from '../src/session/machine-types.js';
import {
  artifactAwaitsReview,
  decisionAwaitsApproval,
  skillOffered,
} from '../src/session/runtime-rules.js';
import type { MainAgentDecision } from '../src/session/runtime-types.js';
import { dueRequests, functionOfRequestId } from '../src/signal/approval-requests.js';
import { isPausingSignal } from '../src/signal/catalogue.js';
import { makeSignalReceipt } from '../src/signal/reply.js';
import type { SignalArgs } from '../src/signal/schema.js';
import { childSnapshot } from '../src/system/child-snapshot.js';
import type { MachineEnv } from '../src/system/machine-env.js';
import { withFastContext } from './fast-context.js';
import { createFunctionMachine, type FunctionMachine } from './function.machine.js';
import { createLoopMachine, type LoopMachine } from './loop.machine.js';
import {
  createSessionActions,
  effect,
  emitToHost,
  factsNow,
  programmaticReview,
  sessionAction,
  userReview,
  withEvent,
} from './session.actions.js';
import { outboxActions } from './session.outbox.js';

/**
 * Version of the session machine's persisted shape; bump when context, states or child ids
 * change. 2: child ids are local (`fn:<name>`, `loop`), the unique part is in the systemId.
 * 3: the effect outbox (`effectCount`, `pendingEffects`). 4: `effectNonce`, so a session
 * id opened again numbers its effects apart from its earlier incarnations.
 * 5: waits for the user may expire (`waitExpiresAt`, the `wait_expired` event).
 * 6: the artifact store child is spawned with the session's first artifact, not at start
 * (a session that writes none has no `artifacts` child).
 * 7: a completed function's actor is stopped; its last state is in `retiredFunctions` alone
 * (a record has a function child only while the function is live).
 * (A host's `session.signal` may carry `byHost` and `to`: new optional event fields, the
 * context is unchanged. So for the `session.extend_request` command.)
 */
export const SESSION_MACHINE_VERSION = 7;

export { ARTIFACTS_CHILD_ID, artifactsOf, type ToHostEvent } from './session.actions.js';

/** Replacements for the machines a session spawns (replaying a run on changed machines). */
export interface SessionMachineFactories {
  readonly function?: (env: MachineEnv) => FunctionMachine;
  readonly loop?: (env: MachineEnv) => LoopMachine;
}

/** What a session machine is built with: the machine environment and, optionally, replacement factories. */
export type SessionMachineEnv = MachineEnv & { readonly factories?: SessionMachineFactories };

/**
 * The live functions a signal reaches: every one, except for an answer or a rejection that
 * names a request (`payload.requestId`, SPEC §9), which reaches only the request's function,
 * and a host's signal addressed `to` one function (a tool call's request), which reaches it.
 */
function signalAddressees(live: readonly string[], signal: SignalArgs, to?: string): string[] {
  if (to !== undefined) return live.filter((name) => name === to);
  const named = namedRequestId(signal);
  if (named === undefined) return [...live];
  const owner = functionOfRequestId(named);
  return live.filter((name) => name === owner);
}

/**
 * How a session takes an agent's signal (`session.signal`, in every phase): each live
 * function it reaches ({@link signalAddressees}) is told (`fn.signal`, with the facts as of
 * now) and decides for itself (a pausing one gates it and opens a request,
 * machines/function.machine.ts); the host gets the receipt, which names the requests the
 * functions will open or resolve (decided by the same pure rule they use). In
 * `running`, a pausing signal that no function takes makes the session wait for the user.
 * Here rather than with the other actions (session.actions.ts) so that the path of a
 * signal reads in this one file.
 */
const signalActions = (env: MachineEnv) => ({
  routeSignal: sessionAction(
    (
      { context, self, enqueue },
      { signal, at, byHost, to }: { signal: SignalArgs; at: number; byHost?: true; to?: string },
    ) => {
      const facts = factsNow(context, self);
      const recordedOn = signalAddressees(context.liveFunctions, signal, to);
      const requests: string[] = [];
      const deadlines: Record<string, number> = {};
      for (const name of recordedOn) {
        const fn = childSnapshot<FunctionMachine>(self, functionChildId(name))?.context;
        const request = fn && requestTouchedBy(name, fn.kv, fn.version, signal, byHost === true);
        if (request !== undefined) requests.push(request);
        // The deadline the function will give the request it opens (decided as it will).
        const deadline = isPausingSignal(signal.type)
          ? requestDeadline(signal, env.catalog.get(name)?.approvalTimeoutMs, at)
          : undefined;
        if (request !== undefined && deadline !== undefined) deadlines[request] = deadline;
        enqueue.sendTo(functionChildId(name), {
          type: 'fn.signal',
          signal,
          facts,
          at,
          ...(byHost ? { byHost } : {}),
        });
      }
      enqueue.assign({ updatedAt: at });
      enqueue(
        emitToHost({
          type: 'signal',
          sessionId: context.sessionId,
          receipt: makeSignalReceipt(signal.type, recordedOn.length, signal.payload, requests, {
            deadlines,
          }),
          payload: signal.payload ?? {},
          recordedOn,
        }),
      );
    },
  ),
  /**
   * The deadlines that came by `at` (sent by the runtime's timers, SPEC §9): each open
   * request of a live function whose `expiresAt` is at or before `at` becomes its expiry
   * signal (`expirySignal` in src/function/approval-expiry.ts), delivered to that function only, which marks it
   * `expired`; the host gets the signal's receipt (`expired <id>`). Nothing due: nothing done.
   */
  expireRequests: sessionAction(({ context, self, enqueue }, { at }: { at: number }) => {
    const facts = factsNow(context, self);
    let expired = false;
    for (const name of context.liveFunctions) {
      const fn = childSnapshot<FunctionMachine>(self, functionChildId(name))?.context;
      for (const request of fn ? dueRequests(fn.kv, at) : []) {
        expired = true;
        const signal = expirySignal(request);
        const fnEvent = { type: 'fn.signal', signal, facts, at, expires: request.id } as const;
        enqueue.sendTo(functionChildId(name), fnEvent);
        enqueue(
          emitToHost({
            type: 'signal',
            sessionId: context.sessionId,
            receipt: makeSignalReceipt(signal.type, 1, signal.payload, [request.id], {
              expired: true,
            }),
            payload: signal.payload ?? {},
            recordedOn: [name],
          }),
        );
      }
    }
    if (expired) enqueue.assign({ updatedAt: at });
  }),
  /**
   * The host moved an open request's deadline (`session.extendRequest`, checked by the
   * handle): sent to the function its id names, which records it on the request.
   */
  extendRequest: sessionAction(
    (
      { context, enqueue },
      command: { requestId: string; expiresAt: number; by?: string; at: number },
    ) => {
      const name = functionOfRequestId(command.requestId);
      if (name === undefined || !context.liveFunctions.includes(name)) return;
      const { requestId, expiresAt, by, at } = command;
      enqueue.sendTo(functionChildId(name), {
        type: 'fn.extend_request',
        requestId,
        expiresAt,
        at,
        ...(by === undefined ? {} : { by }),
      });
      enqueue.assign({ updatedAt: at });
    },
  ),
  waitForSignalAnswer: sessionAction(({ context, enqueue }, { signal }: { signal: SignalArgs }) => {
    const payload = signal.payload ?? {};
    const said = payload.reason ?? payload.message ?? payload.question;
    const message =
      typeof said === 'string' && said !== '' ? said : `the agent signalled ${signal.type}`;
    enqueue.assign({ waitingReason: { kind: 'input', message } });
    enqueue(effect(context.sessionId, { type: 'emit_message', message }));
  }),
});

/**
 * Builds the session machine for one rolebox.
 *
 * Its top-level states are the five runtime phases of SPEC §4 — `idle`, `running`,
 * `waiting_user` (one sub-state per waiting reason, each accepting only its own events),
 * `done`, `error` — with every row of the §4.2 transition table. Effects for the host
 * (`invoke_main_agent`, `run_worker`, …) leave as events; the machine performs no I/O.
 *
 * The handlers at the root make the session the container of its function actors
 * (child `fn:<name>`, systemId `fn:<sessionId>:<name>`), its loop (child `loop`, systemId
 * `loop:<loopId>`) and its artifact store (`artifacts`, @xstate/store): they route agent signals, tool reports, idle cycles and
 * user messages in every phase. What they decide is worked out by the plain functions of
 * `src/session/` (activation, idle cycles, facts, artifact ids); the actions here turn it
 * into spawns, sends and `emitHostEventOrReport`.
 * Upstream: the system actor. Downstream: its children (`sendTo`), the host (via the system).
 */
export function createSessionMachine(env: SessionMachineEnv) {
  const functionMachine: FunctionMachine = (env.factories?.function ?? createFunctionMachine)(env);
  const loopMachine: LoopMachine = (env.factories?.loop ?? createLoopMachine)(env);

  const machine = setup({
    types: {
      context: {} as SessionContext,
      events: {} as SessionEvent,
      input: {} as SessionInput,
      emitted: {} as SystemEmitted,
    },
    actors: { function: functionMachine, loop: loopMachine, artifacts: artifactStoreLogic },
    // Guards, like actions, take the parts of the event they judge as params.
    guards: {
      startsWithIntake: (_, start: { initialSkill?: string; intakePrompt?: string }) =>
        start.initialSkill !== undefined && start.intakePrompt !== undefined,
      startsWithSkill: (_, start: { initialSkill?: string }) => start.initialSkill !== undefined,
      hasResumeContext: ({ context }) => context.resumeContext !== null,
      decisionAsksUser: (_, { decision }: { decision: MainAgentDecision }) =>
        decision.kind === 'ask_user' || decision.kind === 'review_blackboard',
      decisionFinishes: (_, { decision }: { decision: MainAgentDecision }) =>
        decision.kind === 'finish',
      decisionNeedsApproval: (_, { decision }: { decision: MainAgentDecision }) =>
        'requiresApproval' in decision && decision.requiresApproval === true,
      decisionMatches: ({ context }, { decisionId }: { decisionId: string }) =>
        decisionAwaitsApproval(context.waitingReason, decisionId),
      artifactUnderReview: ({ context }, { artifactId }: { artifactId: string }) =>
        artifactAwaitsReview(context.waitingReason, artifactId),
      skillOffered: ({ context }, { skill }: { skill: string }) =>
        skillOffered(context.waitingReason, skill),
      skillOfferedWithIntake: ({ context }, { skill }: { skill: string }) =>
        context.intakePrompt !== null && skillOffered(context.waitingReason, skill),
      acceptsByUser: ({ context }) => context.acceptanceMode === 'user_confirmed',
      underProgrammaticReview: ({ context }) => context.reviewArtifactId !== null,
      noWorkerInFlight: ({ context }) => context.currentWorkerId === null,
      noActiveLoop: ({ context }) => context.activeLoopId === null,
      /** A loop tool while no worker is in flight, one more than the burst allows (SPEC §4.3). */
      loopToolOverBurst: ({ context }, { kind }: { kind: 'loop' | 'boundary' }) =>
        context.currentWorkerId === null &&
        kind === 'loop' &&
        context.toolLoopBurstCount + 1 > env.limits.maxToolBurst,
      /** The wait has a deadline and its time has come by the event's time. */
      waitHasExpired: ({ context }, { at }: { at: number }) =>
        context.waitExpiresAt !== null && at >= context.waitExpiresAt,
      pausingSignalUnhandled: ({ context }, { signal }: { signal: SignalArgs }) =>
        isPausingSignal(signal.type) && context.liveFunctions.length === 0,
    },
    actions: { ...createSessionActions(env), ...signalActions(env), ...outboxActions },
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
      waitExpiresAt: null,
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
      effectNonce: input.nonce ?? null,
      effectCount: 0,
      pendingEffects: [],
    }),
    on: {
      'session.activate': {
        actions: {
          type: 'activate',
          params: ({ event }) => ({ names: [event.name], at: event.at, by: 'host' }),
        },
      },
      'session.deactivate': {
        actions: {
          type: 'deactivate',
          params: ({ event }) => ({ names: [event.name], at: event.at, by: 'host' }),
        },
      },
      'session.signal': { actions: withEvent('routeSignal') },
      'session.expire_requests': { actions: withEvent('expireRequests') },
      'session.extend_request': { actions: withEvent('extendRequest') },
      'session.tool': { actions: withEvent('routeTool') },
      'session.idle': { actions: withEvent('beginIdle') },
      'session.message': { actions: withEvent('relayUserMessage') },
      'session.resume': { actions: withEvent('resumeFunction') },
      'session.kv_set': { actions: withEvent('setFunctionValue') },
      'session.set_slot': { actions: withEvent('setSlot') },
      'session.write_artifact': {
        actions: { type: 'writeArtifact', params: ({ event: { type: _, ...write } }) => write },
      },
      'session.set_artifact_status': { actions: withEvent('setArtifactStatus') },
      'session.runtime_rejected': {
        target: '.error',
        actions: [
          withEvent('fail'),
          {
            type: 'cancelEffects',
            params: ({ event }) => ({ reason: `the session failed: ${event.reason}` }),
          },
        ],
      },
      // The outbox (machines/session.outbox.ts): each names its effect by id in the payload.
      'session.effect_started': { actions: withEvent('effectStarted') },
      'session.effect_attempt_failed': { actions: withEvent('effectAttemptFailed') },
      'session.effect_result': { actions: withEvent('recordEffectResult') },
      'session.effect_apply': { actions: withEvent('applyEffectResult') },
      'session.effect_applied': { actions: withEvent('effectApplied') },
      'session.settle_effect': { actions: withEvent('settleEffect') },
      'session.start_loop': {
        guard: 'noActiveLoop',
        actions: { type: 'startLoop', params: ({ event }) => event.loop },
      },
      'session.stop_loop': { actions: withEvent('stopLoop') },
      'loop.finished': { actions: withEvent('finishLoop') },
      'fn.capture': {
        actions: {
          type: 'writeArtifact',
          params: ({ context, event }) => ({
            name: event.artifact,
            content: event.content,
            at: context.updatedAt,
          }),
        },
      },
      // Deactivations first, then activations, both at the session's time and by the function.
      'fn.transition': {
        actions: [
          {
            type: 'deactivate',
            params: ({ context, event }) => ({
              names: event.deactivate,
              at: context.updatedAt,
              by: `function:${event.function}`,
            }),
          },
          {
            type: 'activate',
            params: ({ context, event }) => ({
              names: event.activate,
              at: context.updatedAt,
              by: `function:${event.function}`,
            }),
          },
        ],
      },
      'fn.completed': { actions: withEvent('retireCompleted') },
      'fn.idle_result': { actions: withEvent('recordIdleAnswer') },
    },

    // ---- The runtime phases (SPEC §4.1, §4.2) ----
    initial: 'idle',
    states: {
      idle: {
        on: {
          session_started: [
            {
              guard: withEvent('startsWithIntake'),
              target: 'waiting_user.intake',
              actions: [withEvent('recordEvent'), withEvent('startSession'), 'waitForIntake'],
            },
            {
              guard: withEvent('startsWithSkill'),
              target: 'waiting_user.input',
              actions: [withEvent('recordEvent'), withEvent('startSession'), 'waitForInput'],
            },
            {
              target: 'waiting_user.skill_selection',
              actions: [withEvent('recordEvent'), withEvent('startSession'), 'waitForSkill'],
            },
          ],
          runtime_failed: {
            target: 'error',
            actions: [withEvent('recordEvent'), withEvent('fail')],
          },
        },
      },
      running: {
        entry: 'clearWaitingReason',
        on: {
          main_agent_decision_created: [
            {
              guard: withEvent('decisionAsksUser'),
              target: 'waiting_user.input',
              actions: [
                withEvent('recordEvent'),
                { type: 'askUser', params: ({ event }) => event.decision },
              ],
            },
            {
              guard: withEvent('decisionFinishes'),
              target: 'done',
              actions: withEvent('recordEvent'),
            },
            {
              guard: withEvent('decisionNeedsApproval'),
              target: 'waiting_user.approve_step',
              actions: [withEvent('recordEvent'), withEvent('awaitApproval')],
            },
            { actions: [withEvent('recordEvent'), withEvent('runDecidedWorker')] },
          ],
          worker_started: { actions: [withEvent('recordEvent'), withEvent('startWorker')] },
          worker_needs_input: {
            target: 'waiting_user.worker_questions',
            actions: [withEvent('recordEvent'), withEvent('askWorkerQuestions')],
          },
          worker_completed: [
            {
              guard: 'acceptsByUser',
              target: 'waiting_user.review_artifact',
              actions: [withEvent('recordEvent'), withEvent('completeWorker')],
            },
            { actions: [withEvent('recordEvent'), withEvent('completeWorker')] },
          ],
          programmatic_review_passed: {
            guard: 'underProgrammaticReview',
            actions: [
              withEvent('recordEvent'),
              programmaticReview('accepted'),
              withEvent('invokeMainAgent'),
            ],
          },
          programmatic_review_failed: {
            guard: 'underProgrammaticReview',
            target: 'waiting_user.revision',
            actions: [
              withEvent('recordEvent'),
              programmaticReview('revision_requested'),
              { type: 'waitForRevision', params: ({ event }) => ({ instruction: event.reason }) },
            ],
          },
          flow_completed: { target: 'done', actions: withEvent('recordEvent') },
          runtime_failed: {
            target: 'error',
            actions: [withEvent('recordEvent'), withEvent('fail')],
          },
          // Loop tools may run only with no worker in flight; the facade asks can() first.
          'session.tool_call': [
            {
              guard: withEvent('loopToolOverBurst'),
              target: 'waiting_user.input',
              actions: { type: 'stopBurst', params: { maxToolBurst: env.limits.maxToolBurst } },
            },
            {
              guard: 'noWorkerInFlight',
              actions: [
                withEvent('countLoopTool'),
                { type: 'routeTool', params: ({ event }) => ({ tool: event.name, at: event.at }) },
              ],
            },
          ],
          // A pausing signal that no function FSM handles pauses the session for the user.
          'session.signal': {
            guard: withEvent('pausingSignalUnhandled'),
            target: 'waiting_user.input',
            actions: [withEvent('routeSignal'), withEvent('waitForSignalAnswer')],
          },
        },
      },
      waiting_user: {
        // Every transition names its sub-state; `input` is what a bare target would mean.
        // Entering any of them (again, for a new question) is a new wait, with its own
        // deadline (`armWaitDeadline` on each sub-state's entry).
        initial: 'input',
        on: {
          runtime_failed: {
            target: 'error',
            actions: [withEvent('recordEvent'), withEvent('fail')],
          },
          // Fail closed: an unanswered wait ends the session; an approval that never came
          // never runs its step (README "Decisions").
          wait_expired: {
            guard: withEvent('waitHasExpired'),
            target: 'error',
            actions: [withEvent('recordEvent'), 'expireWait'],
          },
        },
        states: {
          skill_selection: {
            entry: 'armWaitDeadline',
            on: {
              skill_selected: [
                {
                  guard: withEvent('skillOfferedWithIntake'),
                  target: 'intake',
                  actions: [withEvent('recordEvent'), withEvent('selectSkill'), 'waitForIntake'],
                },
                {
                  guard: withEvent('skillOffered'),
                  target: 'input',
                  actions: [withEvent('recordEvent'), withEvent('selectSkill'), 'waitForInput'],
                },
              ],
            },
          },
          intake: {
            entry: 'armWaitDeadline',
            on: {
              user_submitted_input: {
                target: '#session.running',
                actions: [withEvent('recordEvent'), withEvent('invokeMainAgent')],
              },
              user_confirmed_intake: {
                target: '#session.running',
                actions: [withEvent('recordEvent'), withEvent('invokeMainAgent')],
              },
            },
          },
          input: {
            entry: 'armWaitDeadline',
            on: {
              user_submitted_input: {
                target: '#session.running',
                actions: [withEvent('recordEvent'), withEvent('invokeMainAgent')],
              },
              main_agent_decision_created: [
                {
                  guard: withEvent('decisionAsksUser'),
                  target: 'input',
                  reenter: true,
                  actions: [
                    withEvent('recordEvent'),
                    { type: 'askUser', params: ({ event }) => event.decision },
                  ],
                },
                {
                  guard: withEvent('decisionFinishes'),
                  target: '#session.done',
                  actions: withEvent('recordEvent'),
                },
                {
                  guard: withEvent('decisionNeedsApproval'),
                  target: 'approve_step',
                  actions: [withEvent('recordEvent'), withEvent('awaitApproval')],
                },
                {
                  target: '#session.running',
                  actions: [withEvent('recordEvent'), withEvent('runDecidedWorker')],
                },
              ],
            },
          },
          approve_step: {
            entry: 'armWaitDeadline',
            on: {
              user_approved_next_step: {
                guard: withEvent('decisionMatches'),
                target: '#session.running',
                actions: [
                  withEvent('recordEvent'),
                  {
                    type: 'runDecidedWorker',
                    params: ({ context }) => ({ decision: context.pendingDecision }),
                  },
                ],
              },
              user_rejected_next_step: {
                guard: withEvent('decisionMatches'),
                target: '#session.running',
                actions: [
                  withEvent('recordEvent'),
                  'dropPendingDecision',
                  withEvent('invokeMainAgent'),
                ],
              },
              user_requested_revision: {
                target: '#session.running',
                actions: [
                  withEvent('recordEvent'),
                  'dropPendingDecision',
                  withEvent('invokeMainAgent'),
                ],
              },
            },
          },
          review_artifact: {
            entry: 'armWaitDeadline',
            on: {
              user_accepted_artifact: {
                guard: withEvent('artifactUnderReview'),
                target: '#session.running',
                actions: [
                  withEvent('recordEvent'),
                  userReview('accepted'),
                  withEvent('invokeMainAgent'),
                ],
              },
              user_rejected_artifact: {
                guard: withEvent('artifactUnderReview'),
                target: 'revision',
                actions: [withEvent('recordEvent'), userReview('rejected'), 'waitForRevision'],
              },
              user_requested_revision: {
                target: 'revision',
                actions: [
                  withEvent('recordEvent'),
                  userReview('revision_requested'),
                  withEvent('waitForRevision'),
                ],
              },
            },
          },
          worker_questions: {
            entry: 'armWaitDeadline',
            on: {
              user_submitted_input: {
                guard: 'hasResumeContext',
                target: '#session.running',
                actions: [withEvent('recordEvent'), withEvent('resumeWorker')],
              },
            },
          },
          revision: {
            entry: 'armWaitDeadline',
            on: {
              user_submitted_input: {
                target: '#session.running',
                actions: [withEvent('recordEvent'), withEvent('invokeMainAgent')],
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
  return withFastContext(machine);
}

/** The session machine type of one rolebox. */
export type SessionMachine = ReturnType<typeof createSessionMachine>;

/** Commands for a session, re-exported for the system machine. */
export type { SessionCommand };
