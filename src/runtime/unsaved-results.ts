// Why results are patched into the save rather than recorded by a step of their own: a
// handler's result must be stored before it is applied, and recording it took a machine
// step per effect (and a second one to apply it). The save stores it in the effect's entry
// as the recording step would have; the session then records and applies it in one step.

import { withRecordedResult } from '../session/effect-outbox.js';
import type { PendingEffect, RuntimeEvent } from '../session/runtime-types.js';

/** A handler's result waiting to be saved: its events, and the attempt to count with it. */
export interface UnsavedResult {
  readonly events: readonly RuntimeEvent[];
  /** The attempt that returned it, when no step counted that attempt yet. */
  readonly attempt?: number;
}

/**
 * Handler results kept until the session's next save stores them in their effects' entries
 * (DESIGN §10): the effect runner keeps one, waits for the save, then lets the session record
 * and apply it in one step. A session's persisted snapshot is patched only where the entry
 * is still pending with no result; nothing live is changed.
 */
export class UnsavedResults {
  readonly #bySession = new Map<string, Map<string, UnsavedResult>>();

  /** Keeps `result` of effect `effectId` for session `sessionId`'s next save. */
  keep(sessionId: string, effectId: string, result: UnsavedResult): void {
    let results = this.#bySession.get(sessionId);
    if (!results) {
      results = new Map();
      this.#bySession.set(sessionId, results);
    }
    results.set(effectId, result);
  }

  /** Forgets the result of `effectId` (saved, or no longer wanted). */
  drop(sessionId: string, effectId: string): void {
    const results = this.#bySession.get(sessionId);
    if (!results) return;
    results.delete(effectId);
    if (results.size === 0) this.#bySession.delete(sessionId);
  }

  /**
   * Session `sessionId`'s persisted snapshot (as XState gives it) with the results kept for
   * it written into their pending entries; the snapshot itself when none is kept.
   */
  patch<S>(sessionId: string, persisted: S): S {
    const results = this.#bySession.get(sessionId);
    if (!results || persisted === undefined) return persisted;
    const snapshot = persisted as unknown as {
      context: { pendingEffects: readonly PendingEffect[] };
    };
    const pendingEffects = snapshot.context.pendingEffects.map((entry) => {
      const result = results.get(entry.id);
      return result && entry.result === undefined && entry.status !== 'failed'
        ? withRecordedResult(entry, result.events, result.attempt)
        : entry;
    });
    return { ...snapshot, context: { ...snapshot.context, pendingEffects } } as unknown as S;
  }
}
