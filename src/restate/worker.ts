import * as restate from '@restatedev/restate-sdk';
import { describeValue, RoleboxError } from '../errors.js';
import type { RoundInput, RoundResult, TaskStatus } from '../ports/dispatcher.js';
import type { RoundToDispatch } from './step-dispatcher.js';
import { terminalError } from './terminal-error.js';

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
 * failed for good (reported as an error round), a `restate.CancelledError` for a round that
 * was stopped from outside (reported as cancelled: its loop ends `interrupted`), any other
 * error to have Restate retry. When the invocation is cancelled, the `CancelledError`
 * comes out of the runner's next await: catch it to stop what the round started, then
 * throw it on.
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
 * sends each round once, with the round as idempotency key), so a round runs once. A
 * cancelled invocation (by the session, or by an operator through Restate's admin API) is
 * reported as a cancelled task; a body that is not a round request is refused with a
 * terminal `invalid_argument` (HTTP 400), never retried.
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
      run: async (ctx: restate.Context, body: unknown): Promise<void> => {
        const request = roundRequestOf(body);
        let report: WorkerReport;
        let cancelled: restate.CancelledError | undefined;
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
          if (error instanceof restate.CancelledError) {
            // Whoever cancelled it, the session hears of it: one that cancelled the task
            // itself (a timed-out round, a stopped loop) ignores the report; for any other
            // (an operator) the round is lost and the loop ends interrupted, as embedded.
            cancelled = error;
            report = { taskId: request.taskId, status: 'cancelled' };
          } else if (error instanceof restate.TerminalError) {
            report = {
              taskId: request.taskId,
              status: 'error',
              result: { text: '', hadError: true, errorReason: error.message },
            };
          } else throw error;
        }
        ctx.genericSend({
          service: request.session.object,
          method: 'workerTerminated',
          key: request.session.key,
          parameter: report,
          inputSerde: restate.serde.json,
        });
        // The invocation ends as what it was: cancelled, not a success.
        if (cancelled) throw cancelled;
      },
    },
  });
}

/** True for a string that is not empty. */
const isName = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * The body of a worker's `run` as a {@link RoundRequest}. Throws: a terminal error carrying
 * `invalid_argument` (HTTP 400) for anything else: Restate would retry a TypeError forever.
 */
export function roundRequestOf(body: unknown): RoundRequest {
  const request = body as Partial<RoundRequest> | null;
  const round = request?.round as Partial<RoundInput> | undefined;
  const session = request?.session as Partial<RoundRequest['session']> | undefined;
  const valid =
    typeof request === 'object' &&
    request !== null &&
    !Array.isArray(request) &&
    isName(request.key) &&
    isName(request.taskId) &&
    typeof request.workerSessionId === 'string' &&
    typeof round === 'object' &&
    round !== null &&
    isName(round.loopId) &&
    Number.isSafeInteger(round.round) &&
    (round.round as number) >= 1 &&
    typeof round.originSessionId === 'string' &&
    typeof round.agent === 'string' &&
    typeof round.prompt === 'string' &&
    (round.timeoutMs === undefined ||
      (typeof round.timeoutMs === 'number' && round.timeoutMs >= 0)) &&
    typeof session === 'object' &&
    session !== null &&
    isName(session.object) &&
    isName(session.key);
  if (!valid)
    throw terminalError(
      new RoleboxError(
        'invalid_argument',
        `a worker run needs a round request { key, taskId, workerSessionId, round: { loopId, round, originSessionId, agent, prompt, timeoutMs? }, session: { object, key } }, got ${describeValue(body)}`,
      ),
    );
  return request as RoundRequest;
}
