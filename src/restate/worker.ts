import * as restate from '@restatedev/restate-sdk';
import { describeValue, RoleboxError } from '../errors.js';
import type { RoundInput, RoundResult, TaskStatus } from '../ports/dispatcher.js';
import type { RoundToDispatch } from './step-dispatcher.js';

/** What a session object sends its worker service for one round. */
export interface RoundRequest extends RoundToDispatch {
  /** Where to report the task's end: the session object's name and key. */
  readonly session: { readonly object: string; readonly key: string };
}

/** What a worker reports back to the session (`workerTerminated`). */
export interface WorkerReport {
  readonly taskId: string;
  readonly status: Extract<TaskStatus, 'completed' | 'error' | 'cancelled'>;
  readonly result?: RoundResult;
}

/**
 * Runs one round. Do side effects inside `ctx.run(...)`, so that a retried invocation
 * (the worker's process died) does not repeat what already happened. Return the round's
 * text (or a full {@link RoundResult}); throw a `restate.TerminalError` for a round that
 * failed for good (reported as an error round), any other error to have Restate retry.
 */
export type RoundRunner = (
  ctx: restate.Context,
  round: RoundInput,
  request: RoundRequest,
) => Promise<string | RoundResult>;

/**
 * A Restate worker service for loop rounds: each `run` call runs one round with `run` and
 * reports the result back to the session that dispatched it. Pass its name as the
 * endpoint's `workers: { service }`. Its invocations are keyed by the round (the session
 * sends each round once, with the round as idempotency key), so a round runs once.
 * Throws: `invalid_argument` for a bad name or runner.
 */
export function roleboxWorker(name: string, run: RoundRunner) {
  if (typeof name !== 'string' || name === '')
    throw new RoleboxError(
      'invalid_argument',
      `a worker service needs a name, got ${describeValue(name)}`,
    );
  if (typeof run !== 'function')
    throw new RoleboxError(
      'invalid_argument',
      `a worker service needs a run function, got ${describeValue(run)}`,
    );
  return restate.service({
    name,
    handlers: {
      run: async (ctx: restate.Context, request: RoundRequest): Promise<void> => {
        let report: WorkerReport;
        try {
          const output = await run(ctx, request.round, request);
          const result: RoundResult =
            typeof output === 'string' ? { text: output, hadError: false } : output;
          report = {
            taskId: request.taskId,
            status: result.hadError ? 'error' : 'completed',
            result,
          };
        } catch (error) {
          // Cancelled by the session (its round timed out, its loop was stopped): it knows.
          if (error instanceof restate.CancelledError) return;
          if (!(error instanceof restate.TerminalError)) throw error;
          report = {
            taskId: request.taskId,
            status: 'error',
            result: { text: '', hadError: true, errorReason: error.message },
          };
        }
        ctx.genericSend({
          service: request.session.object,
          method: 'workerTerminated',
          key: request.session.key,
          parameter: report,
          inputSerde: restate.serde.json,
        });
      },
    },
  });
}
