import type { RemoteCommand } from '../session/commands.js';
import { PIPELINE_ACTION_TYPES } from './catalogue.js';
import { defineActionHandler, definePolicy, type PipelinePolicy } from './handlers.js';
import { applyOnce } from './idempotency.js';
import type { ExecutorResult } from './results.js';

/** Where `action.rolebox.send` delivers: a rolebox attaches itself (see `createRolebox({ pipeline })`). */
export interface SystemTarget {
  /** Runs the command on the session; throws (a RoleboxError) to refuse it. */
  deliver(sessionId: string, command: RemoteCommand): unknown;
}

/** The id of the built-in policy that performs `action.rolebox.send`. */
export const ROLEBOX_SEND_POLICY_ID = 'rolebox.send';

/**
 * The built-in policy: `action.rolebox.send` runs `{ sessionId, command }` on the attached
 * rolebox, at most once per idempotency key (default: the action id), through the same
 * validated API as host code. Upstream: any signal handler that plans it. Downstream:
 * `signal.action.applied` (output: what the session call returned) or `failed` with the
 * RoleboxError's code (`NO_SYSTEM` when no rolebox is attached, `INVALID_PAYLOAD`).
 */
export function roleboxSendPolicy(target: () => SystemTarget | undefined): PipelinePolicy {
  return definePolicy(ROLEBOX_SEND_POLICY_ID, [
    defineActionHandler(
      PIPELINE_ACTION_TYPES.roleboxSend,
      `${PIPELINE_ACTION_TYPES.roleboxSend}:deliver`,
      async (action, ctx): Promise<ExecutorResult> => {
        const fail = (code: string, message: string): ExecutorResult => ({
          actionId: action.actionId,
          attempt: { current: 1, startedAt: ctx.now(), completedAt: ctx.now(), status: 'failed' },
          status: 'failed',
          error: { code, message },
        });
        const { sessionId, command, idempotencyKey } = action.payload;
        if (typeof sessionId !== 'string' || typeof command !== 'object' || command === null) {
          return fail(
            'INVALID_PAYLOAD',
            `action.rolebox.send needs { sessionId: string, command: object }, got ${JSON.stringify(action.payload)}`,
          );
        }
        const system = target();
        if (!system)
          return fail(
            'NO_SYSTEM',
            'no rolebox is attached to this pipeline (createRolebox({ pipeline }))',
          );
        return applyOnce(action, ctx, idempotencyKey ?? action.actionId, () =>
          system.deliver(sessionId, command),
        );
      },
    ),
  ]);
}
