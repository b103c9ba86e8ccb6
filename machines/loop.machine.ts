import { and, assign, fromCallback, fromPromise, sendParent, setup } from 'xstate';
import { topStateOf } from '../src/base/state-value.js';
import { RoleboxError } from '../src/errors.js';
import { LOOP_STATE_SCHEMA_VERSION } from '../src/loop/constants.js';
import type {
  LoopContext,
  LoopEvent,
  LoopInput,
  LoopOutcome,
  LoopToSessionEvent,
} from '../src/loop/machine-types.js';
import {
  loopEndedNote,
  loopErrorNote,
  loopStartedNote,
  roundCompletedNote,
} from '../src/loop/notes.js';
import { buildRoundPrompt, summarizeRound } from '../src/loop/round-prompt.js';
import type { LoopPhase, LoopState, RoundRecord } from '../src/loop/types.js';
import type {
  DispatchedTask,
  RoundInput,
  RoundResult,
  TaskStatus,
} from '../src/ports/dispatcher.js';
import type { MachineEnv } from '../src/system/machine-env.js';

/** Version of the loop machine's persisted shape; bump when context or states change. */
export const LOOP_MACHINE_VERSION = 1;

/**
 * The actions by which a loop talks to its session. A model test provides them as no-ops
 * to traverse the machine alone; everything else in the machine is state logic.
 */
export const LOOP_OUTBOUND_ACTIONS = [
  'announceStart',
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
  return { ...state, phase: topStateOf(snapshot.value) as LoopPhase };
}

/** Marks the round in flight (if running) with how it ended. */
function closeRunningRound(
  rounds: readonly RoundRecord[],
  status: RoundRecord['status'],
  at: number,
): readonly RoundRecord[] {
  return rounds.map((record) =>
    record.status === 'running'
      ? {
          ...record,
          status,
          completedAt: record.completedAt ?? at,
          durationMs: record.durationMs ?? at - record.startedAt,
        }
      : record,
  );
}

/**
 * Copies a result's output facts (how much the worker wrote, how much was kept) onto the
 * round in flight, field by field so that the record stays plain JSON whatever the
 * dispatcher returned.
 */
function recordOutput(
  rounds: readonly RoundRecord[],
  result: RoundResult | undefined,
): readonly RoundRecord[] {
  const output = result?.output;
  if (!output) return rounds;
  const facts = {
    bytes: output.bytes,
    keptBytes: output.keptBytes,
    truncated: output.truncated,
  };
  return rounds.map((record) =>
    record.status === 'running' ? { ...record, output: facts } : record,
  );
}

/** How a round failed: with the dispatcher's result (`hadError`), or with what it threw. */
type RoundFailure = { readonly output?: RoundResult; readonly error?: unknown };

/** `recordDispatch` with the task the `dispatch` actor returned. */
const dispatched = {
  type: 'recordDispatch',
  params: ({ event }: { event: { output: DispatchedTask & { at: number } } }) => event.output,
} as const;

/** `recordSummary` with the result the `collect` actor returned. */
const summarized = {
  type: 'recordSummary',
  params: ({ event }: { event: { output: RoundResult & { at: number } } }) => event.output,
} as const;

/** `finalizeWorkerError` with what an invoked actor threw. */
const failedWith = {
  type: 'finalizeWorkerError',
  params: ({ event }: { event: { error: unknown } }) => ({ error: event.error }),
} as const;

/** The ids of the loop's invoked actors, for tests that send their done/error events. */
export const LOOP_INVOKE_IDS = [
  'prepare',
  'delayTimer',
  'dispatch',
  'awaitWorker',
  'roundTimer',
  'collect',
  'cancelWorker',
] as const;

/**
 * Builds the loop machine of SPEC §3.3 for one rolebox: nine phases as states; a push
 * chain driven by the worker's termination (never by polling); the inter-round delay and
 * the round timeout kept as deadlines in context and armed by invoked timer actors, so a
 * restored loop re-arms them; every invoked actor string-keyed and safe to run twice
 * (dispatch is idempotent by `<loopId>:<round>`, waiting first asks the task's status).
 * Upstream: its session. Downstream: its session (notes, worker sessions, the outcome),
 * only through {@link LOOP_OUTBOUND_ACTIONS}.
 */
export function createLoopMachine(env: MachineEnv) {
  const dispatcher = () => {
    if (!env.dispatcher)
      throw new RoleboxError(
        'no_dispatcher',
        'this rolebox has no dispatcher; pass createRolebox({ dispatcher })',
      );
    return env.dispatcher;
  };
  const { clock, limits } = env;
  // Replaying a journal: nothing reaches outside; the recorded results are injected instead.
  const recorded = env.externalActors === 'recorded';
  const never = <T>() => new Promise<T>(() => {});

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
  const eventAt = (
    event: { at?: number } | { output?: { at?: number } },
    fallback: number,
  ): number =>
    ('at' in event && typeof event.at === 'number' ? event.at : undefined) ??
    ('output' in event && typeof event.output?.at === 'number' ? event.output.at : undefined) ??
    fallback;

  return setup({
    types: {
      context: {} as LoopContext,
      events: {} as LoopEvent,
      input: {} as LoopInput,
    },
    actors: {
      prepareLoop: fromPromise<void>(async () => {
        if (recorded) return never();
        dispatcher();
      }),
      dispatchRound: fromPromise<
        DispatchedTask & { at: number },
        { round: RoundInput; key: string }
      >(async ({ input }) => {
        if (recorded) return never();
        const task = await dispatcher().dispatchRound(input.round, input.key);
        return { taskId: task.taskId, workerSessionId: task.workerSessionId, at: clock.now() };
      }),
      // Subscribe first, then ask: a task that ends in between is reported either way (the
      // loop ignores the second report). Asking is also what reconciles a restored loop.
      awaitWorker: fromCallback<LoopEvent, { taskId: string }>(({ input, sendBack }) => {
        if (recorded) return () => {};
        let active = true;
        const report = (status: TaskStatus) => {
          if (active && status !== 'pending' && status !== 'running')
            sendBack({ type: 'worker.terminated', taskId: input.taskId, status, at: clock.now() });
        };
        // A dispatcher that throws must not take the loop (and its session) down: the round
        // is reported lost instead, and the loop ends as interrupted.
        let unsubscribe = () => {};
        try {
          unsubscribe = dispatcher().onTerminated(input.taskId, report);
          dispatcher()
            .getTaskStatus(input.taskId)
            .then(report, () => report('unknown'));
        } catch {
          queueMicrotask(() => report('unknown'));
        }
        return () => {
          active = false;
          unsubscribe();
        };
      }),
      deadlineTimer: fromCallback<
        LoopEvent,
        { deadline: number; event: 'round.timeout' | 'delay.elapsed' }
      >(({ input, sendBack }) => {
        if (recorded) return () => {};
        const handle = clock.setTimeout(
          () => sendBack({ type: input.event, at: clock.now() }),
          Math.max(0, input.deadline - clock.now()),
        );
        return () => clock.clearTimeout(handle);
      }),
      collectResult: fromPromise<RoundResult & { at: number }, { taskId: string }>(
        async ({ input }) => {
          if (recorded) return never();
          const result = await dispatcher().getRoundResult(input.taskId);
          return { ...result, at: clock.now() };
        },
      ),
      cancelWorker: fromPromise<{ at: number }, { taskId: string }>(async ({ input }) => {
        if (recorded) return never();
        await dispatcher().cancelRound(input.taskId);
        return { at: clock.now() };
      }),
    },
    guards: {
      isActiveTask: ({ context, event }) =>
        event.type === 'worker.terminated' && event.taskId === context.activeWorkerTaskId,
      workerFinished: ({ event }) =>
        event.type === 'worker.terminated' &&
        (event.status === 'completed' || event.status === 'error'),
      stopNowRequested: ({ context }) => context.stopNowRequested,
      resultHadError: (_, result: RoundResult) => result.hadError,
      wasLastRound: ({ context }) => context.current >= context.total,
      cancelRequested: ({ context }) => context.cancelRequested,
      noInterRoundDelay: () => limits.interRoundDelayMs <= 0,
      workerToCancel: ({ context }) => context.cancelWorkerTaskId !== undefined,
      finalizeAsComplete: ({ context }) => context.finalizeAs === 'complete',
      finalizeAsCancelled: ({ context }) => context.finalizeAs === 'cancelled',
      finalizeAsInterrupted: ({ context }) => context.finalizeAs === 'interrupted',
    },
    actions: {
      requestCancel: assign({ cancelRequested: true }),
      recordDispatch: assign(({ context }, task: DispatchedTask & { at: number }) => {
        const { taskId, workerSessionId, at } = task;
        const record: RoundRecord = {
          round: context.current,
          workerTaskId: taskId,
          workerSessionId,
          startedAt: at,
          status: 'running',
        };
        return {
          rounds: [
            ...context.rounds.filter((existing) => existing.round !== context.current),
            record,
          ],
          activeWorkerTaskId: taskId,
          activeWorkerSessionId: workerSessionId,
          roundStartedAt: at,
          roundDeadlineAt: at + limits.roundTimeoutMs,
          nextDispatchAt: undefined,
          updatedAt: at,
        };
      }),
      recordTermination: assign(({ context, event }) => {
        const at = eventAt(event, context.updatedAt);
        return {
          rounds: context.rounds.map((record) =>
            record.workerTaskId === context.activeWorkerTaskId && record.status === 'running'
              ? { ...record, completedAt: at, durationMs: at - record.startedAt }
              : record,
          ),
          roundDeadlineAt: undefined,
          updatedAt: at,
        };
      }),
      recordSummary: assign(({ context }, result: RoundResult & { at: number }) => {
        const { text, at } = result;
        return {
          lastSummary: summarizeRound(text, limits.summaryCharCap),
          rounds: recordOutput(context.rounds, result).map((record) =>
            record.status === 'running' ? { ...record, status: 'completed' as const } : record,
          ),
          activeWorkerTaskId: undefined,
          activeWorkerSessionId: undefined,
          updatedAt: at,
        };
      }),
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
      finalizeInterrupted: assign(({ context, event }) => {
        const status = event.type === 'worker.terminated' ? event.status : 'unknown';
        return finalize(
          context,
          'interrupted',
          eventAt(event, context.updatedAt),
          'cancelled',
          `worker task ${status}`,
        );
      }),
      /** A round that failed: with the dispatcher's result, or with the error it threw. */
      finalizeWorkerError: assign(({ context, event }, failed: RoundFailure) => {
        const { output, error } = failed;
        const reason =
          output?.errorReason ??
          (error instanceof Error
            ? error.message
            : error !== undefined
              ? String(error)
              : 'worker failed');
        const withOutput = { ...context, rounds: recordOutput(context.rounds, output) };
        return finalize(withOutput, 'error', eventAt(event, context.updatedAt), 'error', reason);
      }),
      finalizeTimeout: assign(({ context, event }) =>
        finalize(context, 'error', eventAt(event, context.updatedAt), 'cancelled', 'round timeout'),
      ),
      markStopNow: assign({ stopNowRequested: true, cancelRequested: true }),
      workerCancelled: assign(({ context, event }) => ({
        cancelWorkerTaskId: undefined,
        activeWorkerTaskId: undefined,
        activeWorkerSessionId: undefined,
        updatedAt: eventAt(event, context.updatedAt),
      })),
      // Outbound: to the session.
      announceStart: sendParent(
        ({ context }) =>
          ({
            type: 'loop.note',
            loopId: context.id,
            text: loopStartedNote(
              context.total,
              context.mode,
              context.clamped ? context.requested : undefined,
            ),
          }) satisfies LoopToSessionEvent,
      ),
      announceRound: sendParent(({ context }) => {
        const record = context.rounds.find((r) => r.round === context.current) as RoundRecord;
        return {
          type: 'loop.note',
          loopId: context.id,
          text: roundCompletedNote(
            record.round,
            context.total,
            record.workerSessionId,
            record.durationMs,
          ),
        } satisfies LoopToSessionEvent;
      }),
      announceEnd: sendParent(
        ({ context }, params: { outcome: LoopOutcome }) =>
          ({
            type: 'loop.note',
            loopId: context.id,
            text:
              params.outcome === 'error'
                ? loopErrorNote(context.errorReason ?? 'unknown error')
                : loopEndedNote(params.outcome, context.rounds),
          }) satisfies LoopToSessionEvent,
      ),
      reportWorkerStarted: sendParent(
        ({ context }) =>
          ({
            type: 'loop.worker_started',
            loopId: context.id,
            round: context.current,
            taskId: context.activeWorkerTaskId as string,
            workerSessionId: context.activeWorkerSessionId as string,
          }) satisfies LoopToSessionEvent,
      ),
      reportFinished: sendParent(
        ({ context }, params: { phase: LoopPhase }) =>
          ({
            type: 'loop.finished',
            loopId: context.id,
            state: loopStateOf({ value: params.phase, context }),
          }) satisfies LoopToSessionEvent,
      ),
      cascadeCancel: sendParent(
        ({ context }) =>
          ({ type: 'loop.cascade_cancel', loopId: context.id }) satisfies LoopToSessionEvent,
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
      // Origin-owned: checks that rounds can be dispatched, then starts the push chain.
      activating: {
        entry: 'announceStart',
        invoke: {
          id: 'prepare',
          src: 'prepareLoop',
          onDone: { target: 'dispatching.sending' },
          onError: { target: 'finalizing', actions: failedWith },
        },
        // Stopped before a single round ran (a stop in the same tick as the start): there is
        // nothing to wait for, so either stop ends the loop as cancelled and nothing runs.
        on: {
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
          // The inter-round delay: a deadline in context, armed by an invoked timer.
          waiting: {
            invoke: {
              id: 'delayTimer',
              src: 'deadlineTimer',
              input: ({ context }) => ({
                deadline: context.nextDispatchAt ?? context.updatedAt,
                event: 'delay.elapsed' as const,
              }),
            },
            on: {
              'delay.elapsed': { target: 'sending' },
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
            invoke: {
              id: 'dispatch',
              src: 'dispatchRound',
              input: ({ context }) => ({
                key: `${context.id}:${context.current}`,
                round: {
                  loopId: context.id,
                  round: context.current,
                  originSessionId: context.originSessionId,
                  agent: context.agent,
                  prompt: buildRoundPrompt(context, limits.seedCharCap),
                  timeoutMs: limits.roundTimeoutMs,
                },
              }),
              onDone: [
                {
                  guard: 'stopNowRequested',
                  target: '#loop.finalizing',
                  actions: [dispatched, 'reportWorkerStarted', 'finalizeCancelled'],
                },
                {
                  target: '#loop.awaiting_worker',
                  actions: [dispatched, 'reportWorkerStarted'],
                },
              ],
              onError: { target: '#loop.finalizing', actions: failedWith },
            },
            on: {
              // The dispatch is in flight: cancel its task as soon as it is known.
              'loop.cancel_now': { actions: ['markStopNow', 'cascadeCancel'] },
            },
          },
        },
      },
      awaiting_worker: {
        invoke: [
          {
            id: 'awaitWorker',
            src: 'awaitWorker',
            input: ({ context }) => ({ taskId: context.activeWorkerTaskId as string }),
          },
          {
            id: 'roundTimer',
            src: 'deadlineTimer',
            input: ({ context }) => ({
              deadline: context.roundDeadlineAt ?? context.updatedAt,
              event: 'round.timeout' as const,
            }),
          },
        ],
        on: {
          'worker.terminated': [
            {
              guard: and(['isActiveTask', 'workerFinished']),
              target: 'summarizing',
              actions: 'recordTermination',
            },
            // Cancelled by someone else, or unknown to the dispatcher: the round is lost.
            { guard: 'isActiveTask', target: 'finalizing', actions: 'finalizeInterrupted' },
          ],
          'round.timeout': { target: 'finalizing', actions: 'finalizeTimeout' },
          'loop.cancel_now': {
            target: 'finalizing',
            actions: ['requestCancel', 'finalizeCancelled', 'cascadeCancel'],
          },
          'loop.request_cancel': { actions: 'requestCancel' },
        },
      },
      summarizing: {
        invoke: {
          id: 'collect',
          src: 'collectResult',
          input: ({ context }) => ({ taskId: context.activeWorkerTaskId as string }),
          onDone: [
            {
              guard: { type: 'resultHadError', params: ({ event }) => event.output },
              target: 'finalizing',
              actions: {
                type: 'finalizeWorkerError',
                params: ({ event }) => ({ output: event.output }),
              },
            },
            {
              guard: 'wasLastRound',
              target: 'finalizing',
              actions: [summarized, 'announceRound', 'advanceRound', 'finalizeComplete'],
            },
            {
              guard: 'cancelRequested',
              target: 'finalizing',
              actions: [summarized, 'announceRound', 'advanceRound', 'finalizeCancelled'],
            },
            {
              guard: 'noInterRoundDelay',
              target: 'dispatching.sending',
              actions: [summarized, 'announceRound', 'advanceRound', 'scheduleNextRound'],
            },
            {
              target: 'dispatching.waiting',
              actions: [summarized, 'announceRound', 'advanceRound', 'scheduleNextRound'],
            },
          ],
          onError: { target: 'finalizing', actions: failedWith },
        },
        on: {
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
            invoke: {
              id: 'cancelWorker',
              src: 'cancelWorker',
              input: ({ context }) => ({ taskId: context.cancelWorkerTaskId as string }),
              onDone: { target: 'closing', actions: 'workerCancelled' },
              onError: { target: 'closing', actions: 'workerCancelled' },
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
          { type: 'announceEnd', params: { outcome: 'complete' } },
          { type: 'reportFinished', params: { phase: 'complete' } },
        ],
      },
      cancelled: {
        type: 'final',
        entry: [
          { type: 'announceEnd', params: { outcome: 'cancelled' } },
          { type: 'reportFinished', params: { phase: 'cancelled' } },
        ],
      },
      interrupted: {
        type: 'final',
        entry: [
          { type: 'announceEnd', params: { outcome: 'interrupted' } },
          { type: 'reportFinished', params: { phase: 'interrupted' } },
        ],
      },
      error: {
        type: 'final',
        entry: [
          { type: 'announceEnd', params: { outcome: 'error' } },
          { type: 'reportFinished', params: { phase: 'error' } },
        ],
      },
    },
  });
}

/** The loop machine type of one rolebox. */
export type LoopMachine = ReturnType<typeof createLoopMachine>;
