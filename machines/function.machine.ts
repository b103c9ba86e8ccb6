import { assign, enqueueActions, sendParent, setup } from 'xstate';
import { copyOwn, setOwn, withOwn } from '../src/base/own-keys.js';
import { evaluateCondition } from '../src/condition/evaluate.js';
import type { ConditionAst } from '../src/condition/types.js';
import { approvalStep } from '../src/function/approval-step.js';
import { functionConditionEnv } from '../src/function/condition-env.js';
import { functionContinuationBlock, grantContinuation } from '../src/function/continuation.js';
import type { FunctionDefinition } from '../src/function/definition.js';
import type {
  FunctionContext,
  FunctionEvent,
  FunctionIdleOutcome,
  FunctionInput,
  FunctionPhase,
  FunctionToSessionEvent,
} from '../src/function/machine-types.js';
import type { SessionFacts } from '../src/function/session-facts.js';
import { extendRequest } from '../src/signal/approval-requests.js';
import { DEFAULT_ON_TIMEOUT } from '../src/signal/approval-timeout.js';
import { isPausingSignal, isTerminatingSignal } from '../src/signal/catalogue.js';
import { recordSignal, SIGNAL_TYPE_KEY } from '../src/signal/ledger.js';
import type { MachineEnv } from '../src/system/machine-env.js';
import { withFastContext } from './fast-context.js';

/**
 * Version of the function machine's persisted shape; bump when context or states change.
 * 2: approval requests in the ledger (`kv.__approval_requests`) and the function's `version`.
 * 3: a request may carry a deadline (`expiresAt`, `onTimeout`) and end `expired`.
 * 4: a request may be host-only (`hostOnly`: a tool call held for the host's approval).
 * 5: a resolved request may record that the host resolved it (`answeredByHost`), and an
 * open one that the host moved its deadline (`extendedAt`, `extendedBy`; the
 * `fn.extend_request` event). Both came in the same bump: no released version 5 lacks either.
 */
export const FUNCTION_MACHINE_VERSION = 5;

/**
 * The actions by which a function talks to its session. A model test provides them as
 * no-ops to traverse the machine alone; everything else in the machine is state logic.
 */
export const FUNCTION_OUTBOUND_ACTIONS = [
  'capturePayloads',
  'reportIdle',
  'notifyTransitionEdges',
  'reportCompleted',
] as const;

/**
 * Builds the function FSM of SPEC §2.3 for one rolebox.
 *
 * States: `activating` (transient: resolves at once to `gated` when a gate is defined and
 * does not hold, else `active`), `active`, `gated`, `complete` (final). The gate,
 * `continue_until` and every transition's `when` are guards over the condition engine.
 * Upstream: its session (events `fn.*`). Downstream: its session, only through
 * {@link FUNCTION_OUTBOUND_ACTIONS}.
 */
export function createFunctionMachine(env: MachineEnv) {
  const definitionOf = (context: FunctionContext): FunctionDefinition =>
    env.catalog.require(context.name);
  const holds = (
    condition: ConditionAst,
    context: FunctionContext,
    facts?: SessionFacts,
    deciding?: 'gate',
  ): boolean =>
    evaluateCondition(
      condition,
      functionConditionEnv(context, definitionOf(context), facts, deciding),
      env.conditions,
    );
  // A gate is decided over the approval requests too (SPEC §9): an answer opens it only for
  // the requests made before the answer.
  const gateHolds = (context: FunctionContext, facts?: SessionFacts): boolean => {
    const { gate } = definitionOf(context);
    return gate === undefined || holds(gate, context, facts, 'gate');
  };
  const transitionTruths = (context: FunctionContext): boolean[] => {
    const definition = definitionOf(context);
    return definition.transitions.map((transition) =>
      transition.when === 'gate' ? gateHolds(context) : holds(transition.when, context),
    );
  };
  const factsOf = (event: FunctionEvent, context: FunctionContext): SessionFacts =>
    'facts' in event ? event.facts : context.facts;
  const withTool = (tools: readonly string[], tool: string): readonly string[] =>
    tools.includes(tool) ? tools : [...tools, tool];
  const evidenceFor = (context: FunctionContext, tool: string): Record<string, boolean> => {
    const evidence = copyOwn(context.evidenceObserved);
    for (const entry of definitionOf(context).observe)
      if (entry.tool === tool && entry.setEvidence) setOwn(evidence, entry.setEvidence, true);
    return evidence;
  };

  const machine = setup({
    types: {
      context: {} as FunctionContext,
      events: {} as FunctionEvent,
      input: {} as FunctionInput,
    },
    guards: {
      gateBlocks: ({ context }) => !gateHolds(context),
      isPausingSignal: ({ event }) =>
        event.type === 'fn.signal' && isPausingSignal(event.signal.type),
      continueUntilHolds: ({ context, event }) => {
        const { continueUntil } = definitionOf(context);
        return (
          continueUntil !== undefined && holds(continueUntil, context, factsOf(event, context))
        );
      },
      /**
       * With a gate: it holds after an event other than the pausing signal that gated the
       * function (or the gate would reopen in the same step). Without a gate: a terminating
       * signal or an explicit resume.
       */
      mayLeaveGate: ({ context, event }) => {
        const { gate } = definitionOf(context);
        if (gate !== undefined)
          return (
            !(event.type === 'fn.signal' && isPausingSignal(event.signal.type)) &&
            gateHolds(context)
          );
        return (
          event.type === 'fn.resume' ||
          (event.type === 'fn.signal' && isTerminatingSignal(event.signal.type))
        );
      },
      /** A resume opens a gated function when it has no gate or its gate holds (SPEC §2.3). */
      resumeOpensGate: ({ context, event }) => gateHolds(context, factsOf(event, context)),
      transitionEdgeChanged: ({ context }) => {
        const truths = transitionTruths(context);
        return truths.some((truth, index) => truth !== (context.transitionsHeld[index] ?? false));
      },
    },
    actions: {
      absorbSignal: assign(({ context, event }) => {
        if (event.type !== 'fn.signal') return {};
        const { type, payload } = event.signal;
        const { approvalTimeoutMs, onTimeout } = definitionOf(context);
        const step = approvalStep(
          context.name,
          context.kv,
          context.version,
          event.signal,
          event.at,
          {
            ...(approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs }),
            ...(onTimeout === undefined ? {} : { onTimeout }),
            ...(event.expires === undefined ? {} : { expires: event.expires }),
            ...(event.byHost === true ? { byHost: true } : {}),
          },
        );
        let kv = recordSignal(step.kv, type, payload);
        if (isTerminatingSignal(type)) kv = withOwn<unknown>(kv, SIGNAL_TYPE_KEY, type);
        const evidenceObserved = evidenceFor(context, 'signal');
        if (isPausingSignal(type)) evidenceObserved.paused = true;
        return {
          kv,
          version: step.version,
          evidenceObserved,
          toolsObserved: withTool(context.toolsObserved, 'signal'),
          facts: event.facts,
          updatedAt: event.at,
        };
      }),
      capturePayloads: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'fn.signal') return;
        for (const entry of definitionOf(context).observe) {
          if (entry.tool === 'signal' && entry.capturePayloadAs) {
            enqueue.sendParent({
              type: 'fn.capture',
              function: context.name,
              artifact: entry.capturePayloadAs,
              content: JSON.stringify(event.signal.payload ?? null),
            } satisfies FunctionToSessionEvent);
          }
        }
      }),
      absorbTool: assign(({ context, event }) => {
        if (event.type !== 'fn.tool') return {};
        return {
          toolsObserved: withTool(context.toolsObserved, event.tool),
          version: context.version + 1,
          evidenceObserved: evidenceFor(context, event.tool),
          facts: event.facts,
          updatedAt: event.at,
        };
      }),
      absorbFacts: assign(({ event, context }) =>
        'facts' in event
          ? { facts: event.facts, updatedAt: event.at }
          : { updatedAt: context.updatedAt },
      ),
      // Not a change (the version stays): moving a deadline is the host's act, not the
      // agent's, and leaves what a reviewer saw as it was.
      extendRequest: assign(({ context, event }) => {
        if (event.type !== 'fn.extend_request') return {};
        const { requestId, expiresAt, by, at } = event;
        const onTimeout = definitionOf(context).onTimeout ?? DEFAULT_ON_TIMEOUT;
        const extension = { expiresAt, onTimeout, at, ...(by === undefined ? {} : { by }) };
        return { kv: extendRequest(context.kv, requestId, extension), updatedAt: at };
      }),
      setKv: assign(({ context, event }) =>
        event.type === 'fn.kv_set'
          ? {
              kv: withOwn<unknown>(context.kv, event.key, event.value),
              version: context.version + 1,
              facts: event.facts,
              updatedAt: event.at,
            }
          : {},
      ),
      grantContinuation: assign(({ context, event }) => {
        if (event.type !== 'fn.continue_granted') return {};
        const next = grantContinuation(context, event.turn, {
          perSession: env.limits.continuationsPerSession,
          cooldownTurns: env.limits.continuationCooldowns,
        });
        return { ...next, updatedAt: event.at };
      }),
      reportIdle: enqueueActions(
        ({ context, event, enqueue }, params: { phase: FunctionPhase }) => {
          if (event.type !== 'fn.idle') return;
          let outcome: FunctionIdleOutcome;
          if (params.phase === 'complete') outcome = { kind: 'completed' };
          else if (params.phase === 'gated') outcome = { kind: 'gated' };
          else if (definitionOf(context).continueUntil === undefined)
            outcome = { kind: 'nothing_to_do' };
          else {
            const reason = functionContinuationBlock(
              context,
              definitionOf(context).continueMax,
              event.facts.turn,
            );
            outcome = reason ? { kind: 'blocked', reason } : { kind: 'continue' };
          }
          enqueue.sendParent({
            type: 'fn.idle_result',
            function: context.name,
            cycle: event.cycle,
            outcome,
          } satisfies FunctionToSessionEvent);
        },
      ),
      notifyTransitionEdges: enqueueActions(({ context, enqueue }) => {
        const definition = definitionOf(context);
        transitionTruths(context).forEach((truth, index) => {
          const transition = definition.transitions[index];
          if (truth && !(context.transitionsHeld[index] ?? false) && transition) {
            enqueue.sendParent({
              type: 'fn.transition',
              function: context.name,
              activate: transition.activate,
              deactivate: transition.deactivate,
            } satisfies FunctionToSessionEvent);
          }
        });
      }),
      rememberTransitionEdges: assign(({ context }) => ({
        transitionsHeld: transitionTruths(context),
      })),
      reportCompleted: sendParent(
        ({ context }) =>
          ({
            type: 'fn.completed',
            function: context.name,
            context,
          }) satisfies FunctionToSessionEvent,
      ),
    },
  }).createMachine({
    id: 'function',
    context: ({ input }) => ({
      sessionId: input.sessionId,
      name: input.name,
      kv: {},
      evidenceObserved: {},
      toolsObserved: [],
      activatedAtTurn: input.facts.turn,
      activatedAt: input.at,
      updatedAt: input.at,
      facts: input.facts,
      continuations: 0,
      cooldownUntilTurn: -1,
      transitionsHeld: [],
      version: 0,
    }),
    // Edge-triggered transitions: after every event (and at activation), each `when` that
    // turned true fires once; the new truths are remembered so it fires again only after
    // turning false and true again.
    always: {
      guard: 'transitionEdgeChanged',
      actions: ['notifyTransitionEdges', 'rememberTransitionEdges'],
    },
    on: {
      'fn.tool': { actions: 'absorbTool' },
      'fn.facts': { actions: 'absorbFacts' },
      'fn.kv_set': { actions: 'setKv' },
      'fn.extend_request': { actions: 'extendRequest' },
      'fn.continue_granted': { actions: 'grantContinuation' },
    },
    initial: 'activating',
    states: {
      activating: {
        always: [{ guard: 'gateBlocks', target: 'gated' }, { target: 'active' }],
      },
      active: {
        on: {
          'fn.signal': [
            {
              guard: 'isPausingSignal',
              target: 'gated',
              actions: ['absorbSignal', 'capturePayloads'],
            },
            { actions: ['absorbSignal', 'capturePayloads'] },
          ],
          'fn.idle': [
            {
              guard: 'continueUntilHolds',
              target: 'complete',
              actions: ['absorbFacts', { type: 'reportIdle', params: { phase: 'complete' } }],
            },
            { actions: ['absorbFacts', { type: 'reportIdle', params: { phase: 'active' } }] },
          ],
          'fn.resume': { actions: 'absorbFacts' },
        },
      },
      gated: {
        always: { guard: 'mayLeaveGate', target: 'active' },
        on: {
          'fn.signal': { actions: ['absorbSignal', 'capturePayloads'] },
          'fn.idle': {
            actions: ['absorbFacts', { type: 'reportIdle', params: { phase: 'gated' } }],
          },
          // Refused (not taken) while the gate is closed: whoever asks can tell beforehand.
          'fn.resume': { guard: 'resumeOpensGate', target: 'active', actions: 'absorbFacts' },
        },
      },
      complete: {
        type: 'final',
        entry: 'reportCompleted',
      },
    },
  });
  return withFastContext(machine);
}

/** The function machine type of one rolebox. */
export type FunctionMachine = ReturnType<typeof createFunctionMachine>;
