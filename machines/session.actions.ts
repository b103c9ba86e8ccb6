import { type AnyActorRef, assign, enqueueActions, type ParameterizedObject } from 'xstate';
import {
  artifactsActorId,
  functionActorId,
  functionChildId,
  LOOP_CHILD_ID,
  loopActorId,
} from '../src/base/actor-ids.js';
import { withOwn } from '../src/base/own-keys.js';
import type { FunctionContext } from '../src/function/machine-types.js';
import { shouldCancelLoop } from '../src/loop/cancellation.js';
import type { LoopInput } from '../src/loop/machine-types.js';
import { loopStartedNote } from '../src/loop/notes.js';
import type { LoopState } from '../src/loop/types.js';
import { planActivation, planDeactivation } from '../src/session/activation.js';
import type { ArtifactRecord, ArtifactStatus } from '../src/session/artifact.js';
import {
  type ArtifactWrite,
  type artifactStoreLogic,
  EMPTY_ARTIFACT_STORE,
  nextArtifactId,
} from '../src/session/artifact-store.js';
import { outboxAfter, settledEvent } from '../src/session/effect-outbox.js';
import type { SystemEmitted } from '../src/session/emitted.js';
import { factsOf } from '../src/session/function-facts.js';
import {
  answerIdleCycle,
  beginIdleCycle,
  decideIdle,
  type IdleAnswer,
} from '../src/session/idle-cycle.js';
import type { IdleCycle, SessionContext, SessionEvent } from '../src/session/machine-types.js';
import {
  type AcceptanceMode,
  HARD_USER_EVENTS,
  type MainAgentDecision,
  type ResumeContext,
  type RuntimeEvent,
  type SessionEffectBody,
  type TimedRuntimeEvent,
} from '../src/session/runtime-types.js';
import { childSnapshot } from '../src/system/child-snapshot.js';
import type { MachineEnv } from '../src/system/machine-env.js';
import type { SessionLoopReport } from '../src/system/machine-types.js';
import type { FunctionMachine } from './function.machine.js';
import { type LoopMachine, loopStateOf } from './loop.machine.js';

// The named actions of the session machine (machines/session.machine.ts), which names them
// in its transitions and passes each its `params` there, typed by the transition's event.

/** The child id of a session's artifact store (spawned with its first artifact). */
export const ARTIFACTS_CHILD_ID = 'artifacts';

/** Events a session sends up to the system actor, which emits them to the host. */
export interface ToHostEvent {
  readonly type: 'host';
  readonly event: SystemEmitted;
}

/** Everything a session sends to the system actor. */
type ToParentEvent = ToHostEvent | SessionLoopReport;

/** The session's artifacts, read from its store child. */
export function artifactsOf(session: Pick<AnyActorRef, 'getSnapshot'>): readonly ArtifactRecord[] {
  return (
    childSnapshot<typeof artifactStoreLogic>(session, ARTIFACTS_CHILD_ID)?.context.artifacts ?? []
  );
}

/** The session's children by the string keys they are spawned with (DESIGN §3.1). */
type SessionActor =
  | { src: 'function'; logic: FunctionMachine; id: string | undefined }
  | { src: 'loop'; logic: LoopMachine; id: string | undefined }
  | { src: 'artifacts'; logic: typeof artifactStoreLogic; id: string | undefined };

/** The named actions that the session's actions enqueue (setup checks that they exist). */
type EnqueuedAction =
  | { type: 'emitHostEventOrReport'; params: { event: ToParentEvent } }
  | { type: 'recordEffect'; params: SessionEffectBody }
  | { type: 'failEffect'; params: { effectId: string; error: string; at: number } }
  | {
      type: 'applyInOneStep';
      params: { effectId: string; events: readonly RuntimeEvent[]; by: string; at: number };
    }
  | { type: 'settleIdle'; params: IdleCycle }
  | { type: 'setArtifactStatus'; params: { id: string; status: ArtifactStatus; at: number } };

/** What an action's `params` may be. */
type Params = ParameterizedObject['params'] | undefined;

/** XState's `enqueueActions`, for a session action taking `TParams`. */
type SessionEnqueueActions<TParams extends Params> = typeof enqueueActions<
  SessionContext,
  SessionEvent,
  TParams,
  SessionEvent,
  SessionActor,
  EnqueuedAction,
  never,
  never,
  SystemEmitted
>;

/** XState's `assign`, for a session action taking `TParams`. */
type SessionAssign<TParams extends Params> = typeof assign<
  SessionContext,
  SessionEvent,
  TParams,
  SessionEvent,
  SessionActor
>;

/**
 * A session action that takes `params` and enqueues actions, `emitHostEventOrReport` among them.
 * Written inline in `setup({ actions })`, XState cannot type an enqueuer that knows its
 * sibling actions (a TypeScript limit, statelyai/xstate#4545); naming the types here gives
 * one that does, and `setup` still checks them against the machine's real actions.
 */
export function sessionAction<TParams extends Params = undefined>(
  collect: Parameters<SessionEnqueueActions<TParams>>[0],
) {
  const build: SessionEnqueueActions<TParams> = enqueueActions;
  return build(collect);
}

/** A session action that changes context from its `params` (typed as {@link sessionAction}). */
export function sessionAssign<TParams extends Params = undefined>(
  assignment: Parameters<SessionAssign<TParams>>[0],
) {
  const build: SessionAssign<TParams> = assign;
  return build(assignment);
}

/**
 * The named action `emitHostEventOrReport` with `event`: the session's only outbound path, so that a
 * model test can provide it as a no-op and traverse the machine alone.
 */
const outbound = (event: ToParentEvent) =>
  ({ type: 'emitHostEventOrReport', params: { event } }) as const;

/** {@link outbound} for an event the system emits to the host. */
export const emitToHost = (event: SystemEmitted) => outbound({ type: 'host', event });

/**
 * The named action `recordEffect`: the effect is numbered, put in the outbox and emitted
 * (machines/session.outbox.ts). `_sessionId` is kept so that call sites read as before.
 */
export const effect = (_sessionId: string, sessionEffect: SessionEffectBody) =>
  ({ type: 'recordEffect', params: sessionEffect }) as const;

/** Params that are the transition's own event: its type is checked at the call site. */
const theEvent = <TEvent>({ event }: { event: TEvent }): TEvent => event;

/** The named action (or guard) `type`, with the transition's event as its params. */
export const withEvent = <TType extends string>(type: TType) => ({ type, params: theEvent });

/** What a review event is about, at the event's time. */
type ReviewArgs = { context: SessionContext; event: { at: number } };

/** The status change of the artifact under programmatic review. */
export const programmaticReview = (status: ArtifactStatus) =>
  ({
    type: 'setReviewedArtifactStatus',
    params: ({ context, event }: ReviewArgs) => ({
      id: context.reviewArtifactId,
      status,
      at: event.at,
    }),
  }) as const;

/** The status change of the artifact the user reviews. */
export const userReview = (status: ArtifactStatus) =>
  ({
    type: 'setReviewedArtifactStatus',
    params: ({ context, event }: ReviewArgs) => ({
      id:
        context.waitingReason?.kind === 'review_artifact' ? context.waitingReason.artifactId : null,
      status,
      at: event.at,
    }),
  }) as const;

/** The runtime event without its timestamp, as it is kept in the history. */
function withoutTime(event: TimedRuntimeEvent): RuntimeEvent {
  const { at: _at, ...rest } = event;
  return rest as RuntimeEvent;
}

/** The actions of the runtime phases (SPEC §4.2). */
const runtimeActions = {
  // What the host is told is emitted by the session itself, to the runtime that listens to
  // it: relayed through the shard and the root it cost two XState steps per event and
  // changed nothing there. What the system keeps (the loop registry) goes up as events.
  emitHostEventOrReport: enqueueActions<
    SessionContext,
    SessionEvent,
    { event: ToParentEvent },
    SessionEvent,
    SessionActor,
    never,
    never,
    never,
    SystemEmitted
  >(({ enqueue }, params) => {
    // Host events are emitted (the runtime listens to the session); a report for the
    // system's loop registry goes to the parent shard, which passes it up to the root.
    if (params.event.type === 'host') enqueue.emit(params.event.event);
    else enqueue.sendParent(params.event);
  }),
  /**
   * Every applied runtime event goes into the history; a user action resets the burst
   * count; the effects it answers are settled and those it makes moot cancelled.
   */
  recordEvent: sessionAction(({ context, enqueue }, event: TimedRuntimeEvent) => {
    const applied = withoutTime(event);
    const outbox = outboxAfter(context.pendingEffects, applied);
    enqueue.assign({
      history: [...context.history, { at: event.at, event: applied }],
      updatedAt: event.at,
      ...(HARD_USER_EVENTS.has(event.type) ? { toolLoopBurstCount: 0 } : {}),
      ...(outbox.remaining.length === context.pendingEffects.length
        ? {}
        : { pendingEffects: outbox.remaining }),
    });
    const { sessionId } = context;
    for (const entry of outbox.settled)
      enqueue(emitToHost(settledEvent(sessionId, entry, event.type)));
    for (const { entry, reason } of outbox.cancelled)
      enqueue(emitToHost(settledEvent(sessionId, entry, 'cancelled', reason)));
  }),
  startSession: sessionAssign((_, event: Extract<RuntimeEvent, { type: 'session_started' }>) => ({
    availableSkills: event.availableSkills,
    skill: event.initialSkill ?? null,
    intakePrompt: event.intakePrompt ?? null,
  })),
  selectSkill: sessionAssign((_, { skill }: { skill: string }) => ({ skill })),
  waitForIntake: sessionAssign(({ context }) => ({
    waitingReason: { kind: 'intake', prompt: context.intakePrompt ?? '' },
  })),
  waitForInput: sessionAssign({ waitingReason: { kind: 'input' } }),
  waitForSkill: sessionAssign(({ context }) => ({
    waitingReason: { kind: 'skill_selection', availableSkills: context.availableSkills },
  })),
  clearWaitingReason: sessionAssign({ waitingReason: null, waitExpiresAt: null }),
  /** The wait expired unanswered: the session fails, saying which wait and when it expired. */
  expireWait: sessionAction(({ context, enqueue }) => {
    const { waitingReason, waitExpiresAt } = context;
    if (waitingReason === null || waitExpiresAt === null) return;
    enqueue.assign({
      errorReason: `wait_expired: nobody answered the wait for ${waitingReason.kind} by its deadline ${new Date(waitExpiresAt).toISOString()} (limits.waitUserTimeoutMs)`,
    });
    enqueue(
      emitToHost({
        type: 'wait_expired',
        sessionId: context.sessionId,
        waitingReason: waitingReason.kind,
        expiresAt: waitExpiresAt,
      }),
    );
  }),
  /** `reason` is the event that asks for the agent; a revision passes its instruction on. */
  invokeMainAgent: sessionAction(
    ({ context, enqueue }, { type, instruction }: { type: string; instruction?: string }) => {
      enqueue(
        effect(context.sessionId, {
          type: 'invoke_main_agent',
          reason: type,
          ...(instruction ? { instruction } : {}),
        }),
      );
    },
  ),
  askUser: sessionAction(
    (
      { context, enqueue },
      { message, questions }: { kind: string; message?: string; questions?: readonly string[] },
    ) => {
      enqueue.assign({
        waitingReason: {
          kind: 'input',
          ...(message === undefined ? {} : { message }),
          ...(questions === undefined ? {} : { questions }),
        },
      });
      if (message) enqueue(effect(context.sessionId, { type: 'emit_message', message }));
    },
  ),
  runDecidedWorker: sessionAction(
    ({ context, enqueue }, { decision }: { decision: MainAgentDecision | null }) => {
      if (!decision || !('workerId' in decision)) return;
      const { workerId, id: decisionId, instruction } = decision;
      enqueue(
        effect(context.sessionId, {
          type: 'run_worker',
          workerId,
          decisionId,
          ...(instruction === undefined ? {} : { instruction }),
        }),
      );
      enqueue.assign({ pendingDecision: null });
    },
  ),
  awaitApproval: sessionAssign((_, { decision }: { decision: MainAgentDecision }) => ({
    pendingDecision: decision,
    waitingReason: { kind: 'approve_step', decisionId: decision.id },
  })),
  dropPendingDecision: sessionAssign({ pendingDecision: null }),
  startWorker: sessionAssign((_, worker: { workerId: string; acceptanceMode: AcceptanceMode }) => ({
    currentWorkerId: worker.workerId,
    acceptanceMode: worker.acceptanceMode,
  })),
  askWorkerQuestions: sessionAssign((_, { workerId, questions }: ResumeContext) => ({
    resumeContext: { workerId, questions },
    waitingReason: { kind: 'worker_questions', workerId, questions },
  })),
  resumeWorker: sessionAction(({ context, enqueue }, { text }: { text: string }) => {
    if (!context.resumeContext) return;
    const { workerId } = context.resumeContext;
    enqueue(effect(context.sessionId, { type: 'resume_worker', workerId, answer: text }));
    enqueue.assign({ resumeContext: null });
  }),
  /** worker_completed: the worker is done; its artifact enters review per the acceptance mode. */
  completeWorker: sessionAction(
    ({ context, enqueue }, event: Extract<TimedRuntimeEvent, { type: 'worker_completed' }>) => {
      const { sessionId } = context;
      const { artifactId, questions, assessment, at } = event;
      const setStatus = (status: ArtifactStatus) =>
        enqueue({ type: 'setArtifactStatus', params: { id: artifactId, status, at } });
      enqueue.assign({ currentWorkerId: null });
      setStatus('under_review');
      if (context.acceptanceMode === 'user_confirmed') {
        enqueue.assign({
          waitingReason: {
            kind: 'review_artifact',
            artifactId,
            ...(questions === undefined ? {} : { questions }),
            ...(assessment === undefined ? {} : { assessment }),
          },
        });
      } else if (context.acceptanceMode === 'no_confirmation') {
        setStatus('accepted');
        enqueue(effect(sessionId, { type: 'invoke_main_agent', reason: event.type }));
      } else {
        enqueue.assign({ reviewArtifactId: artifactId });
        enqueue(effect(sessionId, { type: 'run_programmatic_review', artifactId }));
      }
    },
  ),
  /** The reviewed artifact (`programmaticReview`, `userReview`) gets a status. */
  setReviewedArtifactStatus: sessionAction(
    (
      { enqueue },
      { id, status, at }: { id: string | null; status: ArtifactStatus; at: number },
    ) => {
      if (id === null) return;
      enqueue({ type: 'setArtifactStatus', params: { id, status, at } });
      enqueue.assign({ reviewArtifactId: null });
    },
  ),
  waitForRevision: sessionAssign((_, revision: { instruction?: string } | undefined) => ({
    waitingReason: {
      kind: 'revision',
      ...(revision?.instruction === undefined ? {} : { instruction: revision.instruction }),
    },
  })),
  fail: sessionAssign((_, { reason }: { reason: string }) => ({
    errorReason: reason,
    waitingReason: null,
    waitExpiresAt: null,
  })),
  countLoopTool: sessionAssign(({ context }, tool: { kind: 'loop' | 'boundary'; at: number }) =>
    tool.kind === 'loop'
      ? { toolLoopBurstCount: context.toolLoopBurstCount + 1, updatedAt: tool.at }
      : {},
  ),
  stopBurst: sessionAction(({ context, enqueue }, { maxToolBurst }: { maxToolBurst: number }) => {
    const message = `tool-loop burst limit reached: ${maxToolBurst} loop-tool calls since the last user action; waiting for the user`;
    enqueue.assign({ waitingReason: { kind: 'input', message } });
    enqueue(effect(context.sessionId, { type: 'emit_message', message }));
  }),
};

/** The facts the session's functions are told now. */
export const factsNow = (context: SessionContext, self: AnyActorRef, extraArtifact?: string) =>
  factsOf(context, artifactsOf(self), extraArtifact);

/** Where activations and deactivations come from, and when. */
type FunctionChange = { names: readonly string[]; at: number; by: string };

/**
 * The routing actions of the container: the session routes tool reports, idle cycles, user
 * messages and values to its function actors (agent signals: `signalActions` in
 * session.machine.ts). What to do is decided by the
 * plain functions of `src/session/`.
 */
function routingActions(env: MachineEnv) {
  return {
    routeTool: sessionAction(
      ({ context, self, enqueue }, { tool, at }: { tool: string; at: number }) => {
        const facts = factsNow(context, self);
        for (const name of context.liveFunctions)
          enqueue.sendTo(functionChildId(name), {
            type: 'fn.tool',
            tool,
            facts,
            at,
          });
        const observedOn = context.liveFunctions.length;
        enqueue.assign({ updatedAt: at });
        enqueue(emitToHost({ type: 'tool', sessionId: context.sessionId, tool, observedOn }));
      },
    ),
    /** Starts an idle cycle: every live function is asked; with none, it settles at once. */
    beginIdle: sessionAction(({ context, self, enqueue }, { at }: { at: number }) => {
      const begun = beginIdleCycle(context);
      // Judged on the turn that just ended: the user's message of that turn still counts.
      const facts = { ...factsNow(context, self), turn: begun.turn };
      enqueue.assign({ ...begun, updatedAt: at });
      for (const name of context.liveFunctions)
        enqueue.sendTo(functionChildId(name), {
          type: 'fn.idle',
          cycle: begun.idleCycle,
          facts,
          at,
        });
      if (context.liveFunctions.length === 0) enqueue({ type: 'settleIdle', params: begun.idle });
    }),
    recordIdleAnswer: sessionAction(({ context, enqueue }, answer: IdleAnswer) => {
      const idle = answerIdleCycle(context.idle, answer);
      if (!idle) return;
      enqueue.assign({ idle });
      if (idle.awaiting.length === 0) enqueue({ type: 'settleIdle', params: idle });
    }),
    /** Everyone has answered `idle`: grant at most one continuation and report the cycle. */
    settleIdle: sessionAction(({ context, enqueue }, idle: IdleCycle) => {
      const { sessionId } = context;
      const cap = env.limits.continuationsPerSession;
      const { continuations, report } = decideIdle(idle, context, cap);
      if (report.continued)
        for (const name of report.continuing)
          enqueue.sendTo(functionChildId(name), {
            type: 'fn.continue_granted',
            turn: context.turn,
            at: context.updatedAt,
          });
      enqueue.assign({ idle: null, continuations });
      for (const block of report.blocked)
        enqueue(emitToHost({ type: 'continue_blocked', sessionId, ...block }));
      if (report.continued) {
        const functions = report.continuing;
        enqueue(
          emitToHost({ type: 'continue', sessionId, functions, continuation: continuations }),
        );
      }
      enqueue(emitToHost({ type: 'idle', sessionId, report }));
    }),
    /** A user message: it may stop the loop, and it is a user action for every function. */
    relayUserMessage: sessionAction(
      ({ context, self, enqueue }, { text, at }: { text: string; at: number }) => {
        enqueue.assign({ userMessageInTurn: true, updatedAt: at });
        // The stop-loop rule (SPEC §3.5): only the marker, only while the worker side owns the loop.
        const loop =
          context.activeLoopId === null
            ? undefined
            : childSnapshot<LoopMachine>(self, LOOP_CHILD_ID);
        const state = loop ? loopStateOf(loop) : undefined;
        if (state && shouldCancelLoop(state, text))
          enqueue.sendTo(LOOP_CHILD_ID, { type: 'loop.cancel_now', at });
        const facts = factsNow({ ...context, userMessageInTurn: true }, self);
        // It resumes gated functions that have no gate; functions with a gate re-check it
        // (user_approval() may now hold).
        for (const name of context.liveFunctions) {
          const hasGate = env.catalog.require(name).gate !== undefined;
          enqueue.sendTo(functionChildId(name), {
            type: hasGate ? 'fn.facts' : 'fn.resume',
            facts,
            at,
          });
        }
      },
    ),
    // Sent to one function, if it is live (the facade refuses the others first).
    resumeFunction: sessionAction(
      ({ context, self, enqueue }, { name, at }: { name: string; at: number }) => {
        if (!context.liveFunctions.includes(name)) return;
        const facts = factsNow(context, self);
        enqueue.sendTo(functionChildId(name), { type: 'fn.resume', facts, at });
      },
    ),
    setFunctionValue: sessionAction(
      (
        { context, self, enqueue },
        { name, key, value, at }: { name: string; key: string; value: unknown; at: number },
      ) => {
        if (!context.liveFunctions.includes(name)) return;
        const facts = factsNow(context, self);
        enqueue.sendTo(functionChildId(name), {
          type: 'fn.kv_set',
          key,
          value,
          facts,
          at,
        });
      },
    ),
    setSlot: sessionAssign(
      ({ context }, { key, value, at }: { key: string; value: unknown; at: number }) => ({
        slots: withOwn<unknown>(context.slots, key, value),
        updatedAt: at,
      }),
    ),
  };
}

/**
 * The store and lifecycle actions of the container: it writes artifacts, activates,
 * deactivates and retires its function actors, runs its loop, and reports what they did.
 */
function lifecycleActions(env: MachineEnv) {
  return {
    /** Writes an artifact to the store and tells every function (artifact_exists may now hold). */
    writeArtifact: sessionAction(({ context, self, enqueue }, write: ArtifactWrite) => {
      const { sessionId } = context;
      const store = childSnapshot<typeof artifactStoreLogic>(self, ARTIFACTS_CHILD_ID);
      const artifactId = nextArtifactId(store?.context ?? EMPTY_ARTIFACT_STORE, write.name);
      // The store is spawned with the first artifact: most sessions (approval workflows)
      // write none, and an actor fewer is ~2 KB of heap and its cost at open and activation.
      if (!store)
        enqueue.spawnChild('artifacts', {
          id: ARTIFACTS_CHILD_ID,
          systemId: artifactsActorId(sessionId),
        });
      enqueue.sendTo(ARTIFACTS_CHILD_ID, { type: 'write', ...write });
      enqueue(emitToHost({ type: 'artifact_written', sessionId, artifactId, name: write.name }));
      const facts = factsNow(context, self, write.name);
      for (const name of context.liveFunctions)
        enqueue.sendTo(functionChildId(name), { type: 'fn.facts', facts, at: write.at });
    }),
    /**
     * Sends a status change to the artifact store. A session without one (it is spawned
     * with the first artifact) holds no artifact: there is nothing to change, as the store
     * ignores an id it does not hold.
     */
    setArtifactStatus: sessionAction(
      (
        { self, enqueue },
        { id, status, at }: { id: string; status: ArtifactStatus; at: number },
      ) => {
        if (childSnapshot(self, ARTIFACTS_CHILD_ID) !== undefined)
          enqueue.sendTo(ARTIFACTS_CHILD_ID, { type: 'setStatus', id, status, at });
      },
    ),
    /** Spawns the named functions that the catalog knows and that are not live yet. */
    activate: sessionAction(({ context, self, enqueue }, { names, at, by }: FunctionChange) => {
      const known = names.filter((name) => env.catalog.get(name) !== undefined);
      const plan = planActivation(context, known);
      const { sessionId } = context;
      const facts = factsNow(context, self);
      for (const name of plan.spawn) {
        enqueue.spawnChild('function', {
          id: functionChildId(name),
          systemId: functionActorId(sessionId, name),
          input: { sessionId, name, facts, at },
        });
        enqueue(emitToHost({ type: 'function_activated', sessionId, function: name, by }));
      }
      if (plan.spawn.length === 0) return;
      const { liveFunctions, retiredFunctions } = plan;
      enqueue.assign({ liveFunctions, retiredFunctions, updatedAt: at });
    }),
    /** Stops the named live functions, keeping their last state; may settle the idle cycle. */
    deactivate: sessionAction(({ context, self, enqueue }, { names, at, by }: FunctionChange) => {
      const { sessionId } = context;
      const lastStates = Object.fromEntries(
        names.flatMap((name) => {
          const last = childSnapshot<FunctionMachine>(self, functionChildId(name));
          return last ? [[name, { value: last.value, context: last.context }]] : [];
        }),
      );
      const plan = planDeactivation(context, names, lastStates, at);
      for (const name of plan.stop) {
        enqueue.stopChild(functionChildId(name));
        enqueue(emitToHost({ type: 'function_deactivated', sessionId, function: name, by }));
      }
      if (plan.stop.length === 0) return;
      const { liveFunctions, retiredFunctions, idle } = plan;
      enqueue.assign({ liveFunctions, retiredFunctions, idle, updatedAt: at });
      if (plan.settle && idle) enqueue({ type: 'settleIdle', params: idle });
    }),
    retireCompleted: sessionAction(
      (
        { context, enqueue },
        { function: name, context: last }: { function: string; context: FunctionContext },
      ) => {
        if (!context.liveFunctions.includes(name)) return;
        // Its last state is kept below: the done actor would only hold it twice, in memory and
        // in every record after (XState keeps a done child until its parent stops it).
        enqueue.stopChild(functionChildId(name));
        enqueue.assign({
          liveFunctions: context.liveFunctions.filter((other) => other !== name),
          retiredFunctions: {
            ...context.retiredFunctions,
            [name]: { phase: 'complete', reason: 'completed', at: last.updatedAt, context: last },
          },
        });
        enqueue(
          emitToHost({ type: 'function_completed', sessionId: context.sessionId, function: name }),
        );
      },
    ),
    startLoop: sessionAction(({ context, enqueue }, loop: LoopInput) => {
      enqueue.spawnChild('loop', {
        id: LOOP_CHILD_ID,
        systemId: loopActorId(loop.loopId),
        input: loop,
      });
      enqueue.assign({ activeLoopId: loop.loopId, updatedAt: loop.at });
      const { sessionId } = context;
      enqueue(emitToHost({ type: 'loop_started', sessionId, loopId: loop.loopId }));
      // The loop emits its own notes, but its first one is the session's: the runtime only
      // listens to the loop once it has been spawned.
      const requested = loop.clamped ? loop.requested : undefined;
      const text = loopStartedNote(loop.total, loop.mode, requested);
      enqueue(emitToHost({ type: 'note', sessionId, loopId: loop.loopId, text }));
    }),
    stopLoop: sessionAction(({ context, enqueue }, { now, at }: { now: boolean; at: number }) => {
      if (context.activeLoopId === null) return;
      enqueue.sendTo(LOOP_CHILD_ID, {
        type: now ? 'loop.cancel_now' : 'loop.request_cancel',
        at,
      });
    }),
    finishLoop: sessionAction(
      ({ context, enqueue }, { loopId, state }: { loopId: string; state: LoopState }) => {
        if (context.activeLoopId !== loopId) return;
        // Its last state is kept in `lastLoop`; the finished actor is not kept around.
        enqueue.stopChild(LOOP_CHILD_ID);
        enqueue.assign({ activeLoopId: null, lastLoop: state, updatedAt: state.updatedAt });
        enqueue(outbound({ type: 'system.loop_finished', loopId, phase: state.phase }));
        const { sessionId } = context;
        enqueue(emitToHost({ type: 'loop_finished', sessionId, loopId, phase: state.phase }));
      },
    ),
  };
}

/**
 * Every named action of the session machine of one rolebox: those of the runtime phases
 * and those of the container. Each takes its `params` from the transition that names it.
 */
export function createSessionActions(env: MachineEnv) {
  return {
    ...runtimeActions,
    ...waitActions(env),
    ...routingActions(env),
    ...lifecycleActions(env),
  };
}

/** The actions that give a wait for the user its deadline (`limits.waitUserTimeoutMs`). */
function waitActions(env: MachineEnv) {
  return {
    /**
     * A wait for the user begins (a `waiting_user` sub-state's entry): it expires
     * `limits.waitUserTimeoutMs` after the time of the event that began it, if the limit is set.
     */
    armWaitDeadline: sessionAssign(({ context, event }) => {
      const timeoutMs = env.limits.waitUserTimeoutMs;
      const at = 'at' in event && typeof event.at === 'number' ? event.at : context.updatedAt;
      return { waitExpiresAt: timeoutMs === null ? null : at + timeoutMs };
    }),
  };
}
