import { copyOwn } from '../src/base/own-keys.js';
import {
  numberedEffect,
  pendingEffect,
  settledEvent,
  startedEntry,
  startsAttempt,
  withRecordedResult,
} from '../src/session/effect-outbox.js';
import type { SessionContext } from '../src/session/machine-types.js';
import type {
  PendingEffect,
  RuntimeEvent,
  SessionEffectBody,
  TimedRuntimeEvent,
} from '../src/session/runtime-types.js';
import { emitToHost, sessionAction } from './session.actions.js';

// The outbox actions of the session machine (DESIGN §10): every effect is numbered and
// recorded as pending in the same step that emits it, and settled by the event that answers
// it, by its handler's recorded result (applied once, in one step), or by the host.

/** The pending entry `effectId`, if it is still in the outbox. */
const entryOf = (context: SessionContext, effectId: string) =>
  context.pendingEffects.find((entry) => entry.id === effectId);

/** The outbox with `effectId` replaced by `change(entry)`, or removed when it returns undefined. */
const withEntry = (
  context: SessionContext,
  effectId: string,
  change: (entry: PendingEffect) => PendingEffect | undefined,
): PendingEffect[] =>
  context.pendingEffects.flatMap((entry) => {
    if (entry.id !== effectId) return [entry];
    const changed = change(entry);
    return changed ? [changed] : [];
  });

/** What the events of a result become when raised: runtime events at the apply's time. */
const timed = (events: readonly RuntimeEvent[], at: number): TimedRuntimeEvent[] =>
  events.map((event) => Object.assign(copyOwn(event), { at }) as TimedRuntimeEvent);

/** The host event of attempt `attempt` of `entry` starting. */
const startedEvent = (sessionId: string, entry: PendingEffect, attempt: number) =>
  ({
    type: 'effect_started',
    sessionId,
    effectId: entry.id,
    effectType: entry.effect.type,
    attempt,
  }) as const;

/** Moves a failed effect to `failed` and fails the session (its last attempt, or the host's error). */
const failEffect = sessionAction(
  (
    { context, enqueue },
    { effectId, error, at }: { effectId: string; error: string; at: number },
  ) => {
    const entry = entryOf(context, effectId);
    if (!entry) return;
    enqueue.assign({
      pendingEffects: withEntry(context, effectId, ({ nextAttemptAt: _, ...rest }) => ({
        ...rest,
        status: 'failed',
        lastError: error,
      })),
    });
    const { sessionId } = context;
    enqueue(
      emitToHost({
        type: 'effect_failed',
        sessionId,
        effectId,
        effectType: entry.effect.type,
        attempt: entry.attempts,
        error,
      }),
    );
    const reason = `effect ${effectId} (${entry.effect.type}) failed after ${entry.attempts} attempt${entry.attempts === 1 ? '' : 's'}: ${error}`;
    enqueue.raise({ type: 'runtime_failed', reason, at });
  },
);

/** Applies `events` in this one step, then settles `effectId` (`session.effect_applied`). */
const applyInOneStep = sessionAction(
  (
    { context, enqueue },
    {
      effectId,
      events,
      by,
      at,
    }: { effectId: string; events: readonly RuntimeEvent[]; by: string; at: number },
  ) => {
    // Raised events are taken in this same macrostep, in order, before anyone sees the
    // snapshot or it is saved: the result is applied whole or not at all.
    for (const event of timed(events, at)) enqueue.raise(event);
    enqueue.raise({
      type: 'session.effect_applied',
      effectId,
      historyBefore: context.history.length,
      expected: events.length,
      by,
      at,
    });
  },
);

/** The named actions of the outbox. */
export const outboxActions = {
  /** Numbers `body`, records it as pending and emits it (`effect`), all in this step. */
  recordEffect: sessionAction(({ context, enqueue }, body: SessionEffectBody) => {
    const n = context.effectCount + 1;
    const effect = numberedEffect(context.sessionId, context.effectNonce, n, body);
    enqueue.assign({
      effectCount: n,
      pendingEffects: [...context.pendingEffects, pendingEffect(effect)],
    });
    enqueue(emitToHost({ type: 'effect', sessionId: context.sessionId, effect }));
  }),
  effectStarted: sessionAction(
    ({ context, enqueue }, { effectId, attempt }: { effectId: string; attempt: number }) => {
      const entry = entryOf(context, effectId);
      if (!entry || entry.status === 'failed' || entry.result) return;
      enqueue.assign({
        pendingEffects: withEntry(context, effectId, (current) => startedEntry(current, attempt)),
      });
      enqueue(emitToHost(startedEvent(context.sessionId, entry, attempt)));
    },
  ),
  effectAttemptFailed: sessionAction(
    (
      { context, enqueue },
      {
        effectId,
        error,
        nextAttemptAt,
        at,
      }: { effectId: string; error: string; nextAttemptAt?: number; at: number },
    ) => {
      const entry = entryOf(context, effectId);
      if (!entry || entry.status === 'failed' || entry.result) return;
      if (nextAttemptAt === undefined) {
        enqueue({ type: 'failEffect', params: { effectId, error, at } });
        return;
      }
      enqueue.assign({
        pendingEffects: withEntry(context, effectId, (current) => ({
          ...current,
          status: 'pending',
          lastError: error,
          nextAttemptAt,
        })),
      });
      enqueue(
        emitToHost({
          type: 'effect_failed',
          sessionId: context.sessionId,
          effectId,
          effectType: entry.effect.type,
          attempt: entry.attempts,
          error,
          nextAttemptAt,
        }),
      );
    },
  ),
  /**
   * A handler's events, recorded (and so saved) before they are applied. With `attempt`, the
   * runner did not announce the attempt (its handler returned within a turn): it is counted
   * here, `effect_started` emitted just before, in the same step (one step fewer per effect).
   * With `apply`, the result was saved already (on its own, or patched into this entry by the
   * save, see `withRecordedResult`), so it is applied in this same step too: what the runner
   * sends. Without it, the result is only recorded, as journals recorded before results were
   * applied in their step have it (they replay), and `session.effect_apply` applies it later.
   */
  recordEffectResult: sessionAction(
    (
      { context, enqueue },
      {
        effectId,
        events,
        attempt,
        apply,
        at,
      }: {
        effectId: string;
        events: readonly RuntimeEvent[];
        attempt?: number;
        apply?: boolean;
        at: number;
      },
    ) => {
      const entry = entryOf(context, effectId);
      if (!entry || entry.status === 'failed' || entry.result) return;
      const starts = attempt !== undefined && startsAttempt(entry, attempt);
      if (starts) enqueue(emitToHost(startedEvent(context.sessionId, entry, attempt)));
      // Applied in this step, the entry is settled in it too: nothing to record in it.
      if (apply) {
        enqueue({ type: 'applyInOneStep', params: { effectId, events, by: 'handler', at } });
        return;
      }
      enqueue.assign({
        pendingEffects: withEntry(context, effectId, (current) =>
          withRecordedResult(current, events, attempt),
        ),
      });
    },
  ),
  applyEffectResult: sessionAction(
    ({ context, enqueue }, { effectId, at }: { effectId: string; at: number }) => {
      const result = entryOf(context, effectId)?.result;
      if (!result) return;
      enqueue({
        type: 'applyInOneStep',
        params: { effectId, events: result, by: 'handler', at },
      });
    },
  ),
  /** After a result's events: the effect is settled (unless one of them answered it already). */
  effectApplied: sessionAction(
    (
      { context, enqueue },
      {
        effectId,
        historyBefore,
        expected,
        by,
      }: { effectId: string; historyBefore: number; expected: number; by: string },
    ) => {
      const entry = entryOf(context, effectId);
      if (!entry) return;
      enqueue.assign({ pendingEffects: withEntry(context, effectId, () => undefined) });
      const skipped = expected - (context.history.length - historyBefore);
      enqueue(
        emitToHost({
          ...settledEvent(context.sessionId, entry, by),
          ...(skipped > 0 ? { skipped } : {}),
        }),
      );
    },
  ),
  /** `session.settleEffect` (or an effect delivered with no handler). */
  settleEffect: sessionAction(
    (
      { context, enqueue },
      {
        effectId,
        by,
        events,
        error,
        at,
      }: {
        effectId: string;
        by: 'host' | 'delivered' | 'handler';
        events?: readonly RuntimeEvent[];
        error?: string;
        at: number;
      },
    ) => {
      const entry = entryOf(context, effectId);
      if (!entry) return;
      if (error !== undefined) {
        enqueue({ type: 'failEffect', params: { effectId, error, at } });
        return;
      }
      if (events && events.length > 0) {
        enqueue.assign({
          pendingEffects: withEntry(context, effectId, (current) => ({
            ...current,
            result: events,
          })),
        });
        enqueue({ type: 'applyInOneStep', params: { effectId, events, by, at } });
        return;
      }
      enqueue.assign({ pendingEffects: withEntry(context, effectId, () => undefined) });
      enqueue(emitToHost(settledEvent(context.sessionId, entry, by)));
    },
  ),
  /** The session failed outside a runtime event (strict mode): every effect not failed is cancelled. */
  cancelEffects: sessionAction(({ context, enqueue }, { reason }: { reason: string }) => {
    const cancelled = context.pendingEffects.filter(
      (entry) => entry.status !== 'failed' && entry.effect.type !== 'emit_message',
    );
    if (cancelled.length === 0) return;
    enqueue.assign({
      pendingEffects: context.pendingEffects.filter((entry) => !cancelled.includes(entry)),
    });
    for (const entry of cancelled)
      enqueue(emitToHost(settledEvent(context.sessionId, entry, 'cancelled', reason)));
  }),
  failEffect,
  applyInOneStep,
};
