import { copyOwn } from '../base/own-keys.js';
import type { EmittedEvent } from './emitted.js';
import type {
  PendingEffect,
  RuntimeEvent,
  SessionEffect,
  SessionEffectBody,
} from './runtime-types.js';

/**
 * The session's effect outbox as plain functions (DESIGN §10): which event answers which
 * effect, which events make a pending effect moot, and how one is numbered. The session
 * machine calls them; nothing here performs an effect.
 */

/**
 * The id of the `n`-th effect (from 1) of one incarnation of session `sessionId`:
 * `<sessionId>:<nonce>:e<n>`, stable across restarts. The nonce is drawn when the session is
 * opened, so a session id closed and opened again numbers its effects under a new one and no
 * id (no handler's idempotency key) repeats. A session opened before nonces existed
 * (`nonce` null, session machine 3 and older) keeps numbering `<sessionId>:e<n>`, the ids its
 * stored effects already have.
 */
export function effectId(sessionId: string, nonce: string | null, n: number): string {
  return nonce === null ? `${sessionId}:e${n}` : `${sessionId}:${nonce}:e${n}`;
}

/** The effect `body` numbered `n` in the incarnation `nonce` of session `sessionId`. */
export function numberedEffect(
  sessionId: string,
  nonce: string | null,
  n: number,
  body: SessionEffectBody,
): SessionEffect {
  return Object.assign(copyOwn(body), { id: effectId(sessionId, nonce, n) }) as SessionEffect;
}

/** A new entry of the outbox: pending, not attempted yet. */
export function pendingEffect(effect: SessionEffect): PendingEffect {
  return { id: effect.id, effect, status: 'pending', attempts: 0 };
}

/**
 * Whether runtime event `event` answers `effect` (the README's settling table):
 * `invoke_main_agent` by the next decision or `flow_completed`; `run_worker` and
 * `resume_worker` by `worker_started` / `worker_needs_input` for its worker, or by
 * `worker_completed`; `run_programmatic_review` by its `passed` / `failed`. Nothing answers
 * `emit_message`: its handler's return (or its delivery, with no handler) settles it.
 */
export function answers(event: RuntimeEvent, effect: SessionEffect): boolean {
  switch (effect.type) {
    case 'invoke_main_agent':
      return event.type === 'main_agent_decision_created' || event.type === 'flow_completed';
    case 'run_worker':
    case 'resume_worker':
      return (
        event.type === 'worker_completed' ||
        ((event.type === 'worker_started' || event.type === 'worker_needs_input') &&
          event.workerId === effect.workerId)
      );
    case 'run_programmatic_review':
      return (
        event.type === 'programmatic_review_passed' || event.type === 'programmatic_review_failed'
      );
    case 'emit_message':
      return false;
  }
}

/**
 * Why runtime event `event`, applied, makes `effect` moot (it is cancelled with that
 * reason), or undefined when it does not: the flow finished or failed (every effect but an
 * `emit_message`, which is still worth saying); the user rejected the step or asked for a
 * revision; a new decision superseded a worker or review not yet answered. A `failed`
 * effect is never cancelled: it stays listed as failed.
 */
export function cancellationBy(event: RuntimeEvent, effect: SessionEffect): string | undefined {
  if (effect.type === 'emit_message') return undefined;
  switch (event.type) {
    case 'flow_completed':
      return 'the flow completed';
    case 'runtime_failed':
      return `the session failed: ${event.reason}`;
    case 'wait_expired':
      return 'the wait for the user expired';
    case 'user_rejected_next_step':
    case 'user_rejected_artifact':
    case 'user_requested_revision':
      return `the user moved past it (${event.type})`;
    case 'main_agent_decision_created':
      if (event.decision.kind === 'finish') return 'the flow finished';
      return effect.type === 'invoke_main_agent'
        ? undefined
        : `superseded by decision ${event.decision.id}`;
    default:
      return undefined;
  }
}

/** What applying `event` does to the outbox: the effects it settles and those it cancels. */
export interface OutboxChange {
  readonly remaining: readonly PendingEffect[];
  readonly settled: readonly PendingEffect[];
  readonly cancelled: readonly { readonly entry: PendingEffect; readonly reason: string }[];
}

/** The outbox `pending` after runtime event `event` is applied (settled first, then cancelled). */
export function outboxAfter(pending: readonly PendingEffect[], event: RuntimeEvent): OutboxChange {
  const remaining: PendingEffect[] = [];
  const settled: PendingEffect[] = [];
  const cancelled: { entry: PendingEffect; reason: string }[] = [];
  for (const entry of pending) {
    if (entry.status === 'failed') {
      remaining.push(entry);
      continue;
    }
    if (answers(event, entry.effect)) {
      settled.push(entry);
      continue;
    }
    const reason = cancellationBy(event, entry.effect);
    if (reason === undefined) remaining.push(entry);
    else cancelled.push({ entry, reason });
  }
  return { remaining, settled, cancelled };
}

/** The `effect_settled` host event for `entry`, settled `by` (a reason when cancelled). */
export function settledEvent(
  sessionId: string,
  entry: PendingEffect,
  by: string,
  reason?: string,
): Extract<EmittedEvent, { type: 'effect_settled' }> {
  return {
    type: 'effect_settled',
    sessionId,
    effectId: entry.id,
    effectType: entry.effect.type,
    by,
    ...(reason === undefined ? {} : { reason }),
  };
}

/** Whether `attempt` is not yet counted as running in `entry` (a new attempt starts). */
export function startsAttempt(entry: PendingEffect, attempt: number): boolean {
  return entry.status !== 'running' || entry.attempts < attempt;
}

/** `entry` with attempt `attempt` under way: `running`, counted, no retry time. */
export function startedEntry(
  { nextAttemptAt: _, ...rest }: PendingEffect,
  attempt: number,
): PendingEffect {
  return { ...rest, status: 'running', attempts: Math.max(rest.attempts, attempt) };
}

/**
 * `entry` with its handler's result recorded (not yet applied), and attempt `attempt`
 * counted when given and not counted yet: what the session machine records, and what a
 * save stores of a result the machine has not recorded yet.
 */
export function withRecordedResult(
  entry: PendingEffect,
  events: readonly RuntimeEvent[],
  attempt?: number,
): PendingEffect {
  const started =
    attempt !== undefined && startsAttempt(entry, attempt) ? startedEntry(entry, attempt) : entry;
  return Object.assign(copyOwn(started), { result: events });
}
