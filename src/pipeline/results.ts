import type { PipelineAction, PipelineSignal } from './nodes.js';

/**
 * What a handler returns to move its run on (SPEC-pipeline §3): nothing (no fan-out),
 * `dispatch` (queue more nodes, signals first), or one of the terminal results that end the
 * run's outcome (`wait` for the host, `schedule` another hop, `conclude` with a result).
 */
export type RuntimeProcessorResult =
  | {
      readonly status: 'dispatch';
      readonly signals?: readonly PipelineSignal<string, object>[];
      readonly actions?: readonly PipelineAction<string, object>[];
    }
  | { readonly status: 'wait'; readonly pending?: unknown }
  | { readonly status: 'schedule'; readonly nextHop: unknown }
  | { readonly status: 'conclude'; readonly concluded?: ConcludedResult };

/** A terminal result: the first one a run meets is its outcome. */
export type TerminalResult = Exclude<RuntimeProcessorResult, { readonly status: 'dispatch' }>;

/** What a concluded run says; `reason` labels the terminal-results metric. */
export interface ConcludedResult {
  readonly reason?: string;
  readonly [key: string]: unknown;
}

/** One attempt at an action's side effect. */
export interface ExecutionAttempt {
  /** 1 for the first attempt. */
  readonly current: number;
  readonly max?: number;
  readonly startedAt: number;
  readonly completedAt?: number;
  readonly status: 'succeeded' | 'failed' | 'skipped';
}

/** Why an action's side effect failed. */
export interface ExecutorError {
  /** Stable and machine-readable (`HANDLER_THREW`, `NO_SYSTEM`, a RoleboxError code, …). */
  readonly code: string;
  readonly message: string;
  readonly cause?: unknown;
  readonly retriable?: boolean;
  readonly retryAfterMs?: number;
}

/**
 * What an action handler reports after performing (or skipping) its side effect. The
 * scheduler turns it into the built-in result signal; handlers never emit that themselves.
 */
export type ExecutorResult =
  | {
      readonly actionId: string;
      readonly attempt: ExecutionAttempt;
      readonly detail?: string;
      readonly output?: unknown;
      readonly status: 'applied' | 'skipped';
    }
  | {
      readonly actionId: string;
      readonly attempt: ExecutionAttempt;
      readonly detail?: string;
      readonly status: 'failed';
      readonly error: ExecutorError;
    };

/** True for an {@link ExecutorResult} (`applied`, `skipped` or `failed` with an action id). */
export function isExecutorResult(value: unknown): value is ExecutorResult {
  if (typeof value !== 'object' || value === null) return false;
  const { status, actionId } = value as { status?: unknown; actionId?: unknown };
  return (
    (status === 'applied' || status === 'skipped' || status === 'failed') &&
    typeof actionId === 'string'
  );
}

/** True for a terminal result (`wait`, `schedule`, `conclude`). */
export function isTerminalResult(value: unknown): value is TerminalResult {
  const status = (value as { status?: unknown } | null)?.status;
  return status === 'wait' || status === 'schedule' || status === 'conclude';
}
