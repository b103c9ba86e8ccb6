import { assign, emit, sendParent, setup } from 'xstate';
import { copyOwn } from '../src/base/own-keys.js';
import { topStateOf } from '../src/base/state-value.js';
import { LOOP_STATE_SCHEMA_VERSION } from '../src/loop/constants.js';
import type { LoopDeadline } from '../src/loop/effect-types.js';
import { type LoopEffectState, loopEffectsOf } from '../src/loop/effects.js';
import type {
  LoopContext,
  LoopEmitted,
  LoopEvent,
  LoopInput,
  LoopOutcome,
  LoopToSessionEvent,
} from '../src/loop/machine-types.js';
import { loopEndedNote, loopErrorNote, roundCompletedNote } from '../src/loop/notes.js';
import { summarizeRound } from '../src/loop/round-prompt.js';
import type { LoopPhase, LoopState, RoundRecord } from '../src/loop/types.js';
import type { RoundResult } from '../src/ports/dispatcher.js';
import type { MachineEnv } from '../src/system/machine-env.js';
import { withFastContext } from './fast-context.js';

/** Version of the loop machine's persisted shape; bump when context or states change. */
export const LOOP_MACHINE_VERSION = 3;

/**
 * The actions by which a loop talks to the world: it emits its needs and its notes itself
 * (the runtime listens to every live loop), and tells its session only that it finished.
 * A model test provides them as no-ops to traverse the machine alone; everything else in
 * the machine is state logic.
 */
export const LOOP_OUTBOUND_ACTIONS = [
  'emitLoopNeeds',
  'announceRound',
  'announceEnd',
  'reportWorkerStarted',
  'reportFinished',
  'cascadeCancel',
] as const;

/** The loop's state as a plain {@link LoopState}, with the phase read from the snapshot. */
export function loopStateOf(snapshot: { value: unknown; context: LoopContext }): LoopState {
  const {
    finalizeAs: _finalizeAs,
    cancelWorkerTaskId: _cancel,
    stopNowRequested: _stopNow,
    ...state
  } = snapshot.context;
  // `state` is a fresh object: given its phase in place, it takes the hidden class every
  // such object shares. A spread adding `phase` (`{ ...state, phase }`) made one of its own
  // each time on Node 20's V8 (4.3 µs against 0.6), kept by every session's `lastLoop`.
  return Object.assign(state, { phase: topStateOf(snapshot.value) as LoopPhase });
}

/** Marks the round in flight (if running) with how it ended. */
function closeRunningRound(
  rounds: readonly RoundRecord[],
  status: RoundRecord['status'],
  at: number,
): readonly RoundRecord[] {
  return rounds.map((record) =>
    record.status === 'running'
      ? Object.assign(copyOwn(record), {
          status,
          completedAt: record.completedAt ?? at,
          durationMs: record.durationMs ?? at - record.startedAt,
        })
      : record,
  );
}

/**
 * Copies a result's facts onto the round in flight, field by field so that the record stays
 * plain JSON whatever the dispatcher returned: how much the worker wrote and how much was
 * kept; how long the worker ran (its duration, rather than the time until the result was
 * seen, which after a restart includes the time nobody ran it); whether it spanned a restart.
 */
function recordOutput(
  rounds: readonly RoundRecord[],
  result: RoundResult | undefined,
): readonly RoundRecord[] {
  const output = result?.output;
  const ranMs = result?.ranMs;
  const measured = typeof ranMs === 'number' && Number.isFinite(ranMs) && ranMs >= 0;
  const acrossRestart = result?.acrossRestart === true;
  if (!output && !measured && !acrossRestart) return rounds;
  return updateLastRound(rounds, (record) =>
    record.status === 'running'
      ? {
          ...record,
          ...(output
            ? {
                output: {
                  bytes: output.bytes,
                  keptBytes: output.keptBytes,
                  truncated: output.truncated,
                },
              }
            : {}),
          ...(measured ? { durationMs: ranMs } : {}),
          ...(acrossRestart ? { acrossRestart: true } : {}),
        }
      : record,
  );
}

/**
 * Builds the loop machine of SPEC §3.3 for one rolebox: nine phases as states; a push
 * chain driven by the worker's termination (never by polling). It performs no I/O and
 * invokes no actor: each state asks for what it needs from the world as effects
 * (`loopEffectsOf`: prepare, dispatch a round, watch its task, collect its result, cancel
 * it, arm a deadline), emitted as `loop_effects` by `emitLoopNeeds` to the runtime that
 * listens to the loop, and the host runtime answers with `loop.*` events. Deadlines stay data in context; the runtime re-arms them whenever a loop
 * is activated, which is all restart reconciliation needs (DESIGN §7).
 * Upstream: its session (stop requests) and the runtime's answers. Downstream: its session
 * (notes, worker sessions, effects, the outcome), only through {@link LOOP_OUTBOUND_ACTIONS}.
 */
export function createLoopMachine(env: MachineEnv) {
  const { limits } = env;
  const settings = { roundTimeoutMs: limits.roundTimeoutMs, seedCharCap: limits.seedCharCap };

  /** Context changes that send a loop to `finalizing` with an outcome. */
  const finalize = (
    context: LoopContext,
    outcome: LoopOutcome,
    at: number,
    roundStatus: RoundRecord['status'],
    reason?: string,
  ) => {
    // Only a worker that has not terminated needs cancelling (a terminated round has completedAt).
    const inFlight = context.rounds.find(
      (record) => record.status === 'running' && record.completedAt === undefined,
    );
    return {
      finalizeAs: outcome,
      ...(reason === undefined ? {} : { errorReason: reason }),
      rounds: closeRunningRound(context.rounds, roundStatus, at),
      ...(inFlight && (outcome === 'cancelled' || outcome === 'error')
        ? { cancelWorkerTaskId: inFlight.workerTaskId }
        : {}),
      updatedAt: at,
    };
  };
  const eventAt = (event: { at?: number }, fallback: number): number =>
    typeof event.at === 'number' ? event.at : fallback;

  const machine = setup({
    types: {
      context: {} as LoopContext,
      events: {} as LoopEvent,
      input: {} as LoopInput,
      emitted: {} as LoopEmitted,
    },
    guards: {
      // Each answer names what it answers: a stale or duplicate one matches nothing.
      isActiveTask: ({ context }, { taskId }: { taskId: string }) =>
        taskId === context.activeWorkerTaskId,
      isActiveTaskFinished: ({ context }, answer: { taskId: string; status: string }) =>
        answer.taskId === context.activeWorkerTaskId &&
        (answer.status === 'completed' || answer.status === 'error'),
      isThisRound: ({ context }, { key }: { key: string }) =>
        key === `${context.id}:${context.current}`,
      isTaskBeingCancelled: ({ context }, { taskId }: { taskId: string }) =>
        taskId === context.cancelWorkerTaskId,
      roundTimedOut: ({ context }, answer: { deadline: LoopDeadline; at: number }) =>
        answer.deadline === 'round_timeout' &&
        context.roundDeadlineAt !== undefined &&
        answer.at >= context.roundDeadlineAt,
      delayElapsed: ({ context }, answer: { deadline: LoopDeadline; at: number }) =>
        answer.deadline === 'inter_round_delay' &&
        answer.at >= (context.nextDispatchAt ?? context.updatedAt),
      isThisRoundStoppedNow: ({ context }, { key }: { key: string }) =>
        key === `${context.id}:${context.current}` && context.stopNowRequested,
      // A collected result, for the task in flight: what it means for the loop.
      activeResultFailed: ({ context }, answer: { taskId: string; result: RoundResult }) =>
        answer.taskId === context.activeWorkerTaskId && answer.result.hadError,
      activeResultEndsLoop: ({ context }, { taskId }: { taskId: string }) =>
        taskId === context.activeWorkerTaskId && context.current >= context.total,
      activeResultCancels: ({ context }, { taskId }: { taskId: string }) =>
        taskId === context.activeWorkerTaskId && context.cancelRequested,
      activeResultGoesOnNow: ({ context }, { taskId }: { taskId: string }) =>
        taskId === context.activeWorkerTaskId && limits.interRoundDelayMs <= 0,
      workerToCancel: ({ context }) => context.cancelWorkerTaskId !== undefined,
      finalizeAsComplete: ({ context }) => context.finalizeAs === 'complete',
      finalizeAsCancelled: ({ context }) => context.finalizeAs === 'cancelled',
      finalizeAsInterrupted: ({ context }) => context.finalizeAs === 'interrupted',
    },
    actions: {
      requestCancel: assign({ cancelRequested: true }),
      recordDispatch: assign(
        ({ context }, task: { taskId: string; workerSessionId: string; at: number }) => {
          const { taskId, workerSessionId, at } = task;
          const record: RoundRecord = {
            round: context.current,
            workerTaskId: taskId,
            workerSessionId,
            startedAt: at,
            status: 'running',
          };
          const last = context.rounds.at(-1);
          // Appended; a round dispatched again (after a restart) replaces its own record.
          const rounds =
            last?.round === context.current
              ? [...context.rounds.slice(0, -1), record]
              : [...context.rounds, record];
          return {
            rounds,
            activeWorkerTaskId: taskId,
            activeWorkerSessionId: workerSessionId,
            roundStartedAt: at,
            roundDeadlineAt: at + limits.roundTimeoutMs,
            nextDispatchAt: undefined,
            updatedAt: at,
          };
        },
      ),
      recordTermination: assign(({ context }, { at }: { at: number }) => ({
        rounds: updateLastRound(context.rounds, (record) =>
          record.workerTaskId === context.activeWorkerTaskId && record.status === 'running'
            ? Object.assign(copyOwn(record), { completedAt: at, durationMs: at - record.startedAt })
            : record,
        ),
        roundDeadlineAt: undefined,
        updatedAt: at,
      })),
      recordSummary: assign(({ context }, result: RoundResult & { at: number }) => ({
        lastSummary: summarizeRound(result.text, limits.summaryCharCap),
        rounds: updateLastRound(recordOutput(context.rounds, result), (record) =>
          record.status === 'running' ? { ...record, status: 'completed' as const } : record,
        ),
        activeWorkerTaskId: undefined,
        activeWorkerSessionId: undefined,
        updatedAt: result.at,
      })),
      // SPEC §3.4: once a round's summary is in, `current` advances (past `total` after the last).
      advanceRound: assign(({ context }) => ({ current: context.current + 1 })),
      scheduleNextRound: assign(({ context, event }) => ({
        nextDispatchAt: eventAt(event, context.updatedAt) + limits.interRoundDelayMs,
      })),
      finalizeComplete: assign(({ context, event }) =>
        finalize(context, 'complete', eventAt(event, context.updatedAt), 'completed'),
      ),
      finalizeCancelled: assign(({ context, event }) =>
        finalize(context, 'cancelled', eventAt(event, context.updatedAt), 'cancelled'),
      ),
      finalizeInterrupted: assign(({ context }, { status, at }: { status: string; at: number }) =>
        finalize(context, 'interrupted', at, 'cancelled', `worker task ${status}`),
      ),
      /** A round that failed: with the dispatcher's result, or with why it could not run. */
      finalizeWorkerError: assign(
        ({ context }, failed: { result?: RoundResult; reason?: string; at: number }) => {
          const reason = failed.result?.errorReason ?? failed.reason ?? 'worker failed';
          const withOutput = { ...context, rounds: recordOutput(context.rounds, failed.result) };
          return finalize(withOutput, 'error', failed.at, 'error', reason);
        },
      ),
      finalizeTimeout: assign(({ context }, { at }: { at: number }) =>
        finalize(context, 'error', at, 'cancelled', 'round timeout'),
      ),
      markStopNow: assign({ stopNowRequested: true, cancelRequested: true }),
      workerCancelled: assign((_, { at }: { at: number }) => ({
        cancelWorkerTaskId: undefined,
        activeWorkerTaskId: undefined,
        activeWorkerSessionId: undefined,
        updatedAt: at,
      })),
      // Outbound. Needs, notes and round starts are emitted by the loop itself: relayed
      // through the session they cost a session step each (five per round), for nothing
      // the session keeps. Only the end goes to the session, which drops the loop.
      emitLoopNeeds: emit(
        ({ context }, { state }: { state: LoopEffectState | undefined }) =>
          ({
            type: 'loop_effects',
            sessionId: context.originSessionId,
            loopId: context.id,
            effects: loopEffectsOf(state, context, settings),
          }) satisfies LoopEmitted,
      ),
      announceRound: emit(({ context }) => {
        const record = context.rounds.find((r) => r.round === context.current) as RoundRecord;
        return {
          type: 'note',
          sessionId: context.originSessionId,
          loopId: context.id,
          round: record.round,
          text: roundCompletedNote(record.round, context.total, record, record.durationMs),
        } satisfies LoopEmitted;
      }),
      announceEnd: emit(({ context }, params: { outcome: LoopOutcome }) => {
        // A loop a worker's failure ended: the note is about that round too.
        const failed = context.rounds.at(-1);
        return {
          type: 'note',
          sessionId: context.originSessionId,
          loopId: context.id,
          ...(params.outcome === 'error' && failed?.status === 'error'
            ? { round: failed.round }
            : {}),
          text:
            params.outcome === 'error'
              ? loopErrorNote(context.errorReason ?? 'unknown error')
              : loopEndedNote(params.outcome, context.rounds),
        } satisfies LoopEmitted;
      }),
      reportWorkerStarted: emit(
        ({ context }) =>
          ({
            type: 'round_started',
            sessionId: context.originSessionId,
            loopId: context.id,
            round: context.current,
            taskId: context.activeWorkerTaskId as string,
            workerSessionId: context.activeWorkerSessionId as string,
          }) satisfies LoopEmitted,
      ),
      reportFinished: sendParent(
        ({ context }, params: { phase: LoopPhase }) =>
          ({
            type: 'loop.finished',
            loopId: context.id,
            state: loopStateOf({ value: params.phase, context }),
          }) satisfies LoopToSessionEvent,
      ),
      cascadeCancel: emit(
        ({ context }) =>
          ({
            type: 'loop_cascade_cancel',
            loopId: context.id,
            at: context.updatedAt,
          }) satisfies LoopEmitted,
      ),
    },
  }).createMachine({
    id: 'loop',
    context: ({ input }) => ({
      schemaVersion: LOOP_STATE_SCHEMA_VERSION,
      id: input.loopId,
      originSessionId: input.originSessionId,
      agent: input.agent,
      basePrompt: input.basePrompt,
      mode: input.mode,
      total: input.total,
      requested: input.requested,
      current: 1,
      clamped: input.clamped,
      ...(input.parentLoopId === undefined ? {} : { parentLoopId: input.parentLoopId }),
      cancelRequested: false,
      stopNowRequested: false,
      promptFingerprint: input.promptFingerprint,
      startedAt: input.at,
      updatedAt: input.at,
      rounds: [],
    }),
    initial: 'activating',
    states: {
      // Origin-owned: asks whether rounds can be dispatched, then starts the push chain. It
      // asks on no entry action: its session announces the start, and the runtime asks for
      // a new loop's needs from its state once it listens to it (as on every activation).
      activating: {
        on: {
          'loop.prepared': { target: 'dispatching.sending' },
          'loop.prepare_failed': {
            target: 'finalizing',
            actions: { type: 'finalizeWorkerError', params: ({ event }) => event },
          },
          // Stopped before a single round ran (a stop in the same tick as the start): there
          // is nothing to wait for, so either stop ends the loop as cancelled and nothing runs.
          'loop.request_cancel': {
            target: 'finalizing',
            actions: ['requestCancel', 'finalizeCancelled'],
          },
          'loop.cancel_now': {
            target: 'finalizing',
            actions: ['requestCancel', 'finalizeCancelled', 'cascadeCancel'],
          },
        },
      },
      dispatching: {
        initial: 'sending',
        on: {
          'loop.request_cancel': { actions: 'requestCancel' },
        },
        states: {
          // The inter-round delay: a deadline in context, armed by the runtime.
          waiting: {
            entry: emitLoopNeeds('waiting'),
            on: {
              'loop.deadline_reached': {
                guard: { type: 'delayElapsed', params: ({ event }) => event },
                target: 'sending',
              },
              // Between rounds the last summary is in: a stop ends the loop without another round.
              'loop.request_cancel': {
                target: '#loop.finalizing',
                actions: ['requestCancel', 'finalizeCancelled'],
              },
              'loop.cancel_now': {
                target: '#loop.finalizing',
                actions: ['requestCancel', 'finalizeCancelled', 'cascadeCancel'],
              },
            },
          },
          sending: {
            entry: emitLoopNeeds('sending'),
            on: {
              'loop.round_dispatched': [
                {
                  // The dispatch was in flight when cancelNow came: cancel its task now.
                  guard: { type: 'isThisRoundStoppedNow', params: ({ event }) => event },
                  target: '#loop.finalizing',
                  actions: [
                    { type: 'recordDispatch', params: ({ event }) => event },
                    'reportWorkerStarted',
                    'finalizeCancelled',
                  ],
                },
                {
                  guard: { type: 'isThisRound', params: ({ event }) => event },
                  target: '#loop.awaiting_worker',
                  actions: [
                    { type: 'recordDispatch', params: ({ event }) => event },
                    'reportWorkerStarted',
                  ],
                },
              ],
              'loop.dispatch_failed': {
                guard: { type: 'isThisRound', params: ({ event }) => event },
                target: '#loop.finalizing',
                actions: { type: 'finalizeWorkerError', params: ({ event }) => event },
              },
              // The dispatch is in flight: cancel its task as soon as it is known.
              'loop.cancel_now': { actions: ['markStopNow', 'cascadeCancel'] },
            },
          },
        },
      },
      awaiting_worker: {
        entry: emitLoopNeeds('awaiting_worker'),
        on: {
          'loop.worker_terminated': [
            {
              guard: { type: 'isActiveTaskFinished', params: ({ event }) => event },
              target: 'summarizing',
              actions: { type: 'recordTermination', params: ({ event }) => event },
            },
            // Cancelled by someone else, or unknown to the dispatcher: the round is lost.
            {
              guard: { type: 'isActiveTask', params: ({ event }) => event },
              target: 'finalizing',
              actions: { type: 'finalizeInterrupted', params: ({ event }) => event },
            },
          ],
          'loop.deadline_reached': {
            guard: { type: 'roundTimedOut', params: ({ event }) => event },
            target: 'finalizing',
            actions: { type: 'finalizeTimeout', params: ({ event }) => event },
          },
          'loop.cancel_now': {
            target: 'finalizing',
            actions: ['requestCancel', 'finalizeCancelled', 'cascadeCancel'],
          },
          'loop.request_cancel': { actions: 'requestCancel' },
        },
      },
      summarizing: {
        entry: emitLoopNeeds('summarizing'),
        on: {
          'loop.result_collected': [
            {
              guard: { type: 'activeResultFailed', params: ({ event }) => event },
              target: 'finalizing',
              actions: {
                type: 'finalizeWorkerError',
                params: ({ event }) => ({ result: event.result, at: event.at }),
              },
            },
            {
              guard: { type: 'activeResultEndsLoop', params: ({ event }) => event },
              target: 'finalizing',
              actions: [summary, 'announceRound', 'advanceRound', 'finalizeComplete'],
            },
            {
              guard: { type: 'activeResultCancels', params: ({ event }) => event },
              target: 'finalizing',
              actions: [summary, 'announceRound', 'advanceRound', 'finalizeCancelled'],
            },
            {
              guard: { type: 'activeResultGoesOnNow', params: ({ event }) => event },
              target: 'dispatching.sending',
              actions: [summary, 'announceRound', 'advanceRound', 'scheduleNextRound'],
            },
            {
              guard: { type: 'isActiveTask', params: ({ event }) => event },
              target: 'dispatching.waiting',
              actions: [summary, 'announceRound', 'advanceRound', 'scheduleNextRound'],
            },
          ],
          'loop.collect_failed': {
            guard: { type: 'isActiveTask', params: ({ event }) => event },
            target: 'finalizing',
            actions: { type: 'finalizeWorkerError', params: ({ event }) => event },
          },
          // Origin-owned: a stop waits for the summary, then the loop ends as cancelled.
          'loop.request_cancel': { actions: 'requestCancel' },
          'loop.cancel_now': { actions: ['requestCancel', 'cascadeCancel'] },
        },
      },
      finalizing: {
        initial: 'checking',
        states: {
          checking: {
            always: [
              { guard: 'workerToCancel', target: 'cancelling_worker' },
              { target: 'closing' },
            ],
          },
          cancelling_worker: {
            entry: emitLoopNeeds('cancelling_worker'),
            on: {
              'loop.worker_cancelled': {
                guard: { type: 'isTaskBeingCancelled', params: ({ event }) => event },
                target: 'closing',
                actions: { type: 'workerCancelled', params: ({ event }) => event },
              },
            },
          },
          closing: {
            always: [
              { guard: 'finalizeAsComplete', target: '#loop.complete' },
              { guard: 'finalizeAsCancelled', target: '#loop.cancelled' },
              { guard: 'finalizeAsInterrupted', target: '#loop.interrupted' },
              { target: '#loop.error' },
            ],
          },
        },
      },
      complete: {
        type: 'final',
        entry: [
          emitLoopNeeds(undefined),
          { type: 'announceEnd', params: { outcome: 'complete' } },
          { type: 'reportFinished', params: { phase: 'complete' } },
        ],
      },
      cancelled: {
        type: 'final',
        entry: [
          emitLoopNeeds(undefined),
          { type: 'announceEnd', params: { outcome: 'cancelled' } },
          { type: 'reportFinished', params: { phase: 'cancelled' } },
        ],
      },
      interrupted: {
        type: 'final',
        entry: [
          emitLoopNeeds(undefined),
          { type: 'announceEnd', params: { outcome: 'interrupted' } },
          { type: 'reportFinished', params: { phase: 'interrupted' } },
        ],
      },
      error: {
        type: 'final',
        entry: [
          emitLoopNeeds(undefined),
          { type: 'announceEnd', params: { outcome: 'error' } },
          { type: 'reportFinished', params: { phase: 'error' } },
        ],
      },
    },
  });
  return withFastContext(machine);
}

/** `emitLoopNeeds` for one state: the loop emits (`loop_effects`) all it needs from the world there. */
function emitLoopNeeds(state: LoopEffectState | undefined) {
  return { type: 'emitLoopNeeds', params: { state } } as const;
}

/** `recordSummary` with the result the runtime collected. */
const summary = {
  type: 'recordSummary',
  params: ({ event }: { event: { result: RoundResult; at: number } }) => ({
    ...event.result,
    at: event.at,
  }),
} as const;

/** The rounds with the last one changed by `change` (earlier rounds are never rewritten). */
function updateLastRound(
  rounds: readonly RoundRecord[],
  change: (record: RoundRecord) => RoundRecord,
): readonly RoundRecord[] {
  const last = rounds.at(-1);
  return last === undefined ? rounds : [...rounds.slice(0, -1), change(last)];
}

/** The loop machine type of one rolebox. */
export type LoopMachine = ReturnType<typeof createLoopMachine>;
