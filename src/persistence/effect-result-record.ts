// Why a record of its own: a handler's result must be stored before it is applied (a crash in
// between applies it on restart, and the handler is not called again). When nothing else of
// the session waits to be saved, writing the whole session for it cost a full session write
// per effect, where a host doing the same by hand writes a small row (issue 24's profile:
// the largest part of the runtime's cost over such a host). This record holds that one
// result: small, written in the store's transaction like any save.

import { describeValue, RoleboxError } from '../errors.js';
import { parseRuntimeEvent } from '../session/runtime-event-schema.js';
import type { RuntimeEvent } from '../session/runtime-types.js';
import { sealOf, sealRecord, unsealedText } from './record-checksum.js';

/** The id prefix of effect-result records (`$`: never restored as a session). */
export const EFFECT_RESULT_PREFIX = '$effect-result:';

/** The id of session `sessionId`'s effect-result record. */
export function effectResultRecordId(sessionId: string): string {
  return `${EFFECT_RESULT_PREFIX}${sessionId}`;
}

/** A handler's result as stored: its events, and the attempt to count with it, if any. */
export interface StoredEffectResult {
  readonly events: readonly RuntimeEvent[];
  readonly attempt?: number;
}

/**
 * The text of session's effect-result record holding `result` as effect `effectId`'s,
 * sealed with a checksum. A session's record is rewritten by each result stored this way:
 * only one is written while the session has nothing else unsaved, so every earlier one is
 * applied and saved with the session by then.
 */
export function encodeEffectResultRecord(effectId: string, result: StoredEffectResult): string {
  return sealRecord(
    JSON.stringify({
      effectId,
      events: result.events,
      ...(result.attempt === undefined ? {} : { attempt: result.attempt }),
    }),
  );
}

/**
 * The result of effect `effectId` in effect-result record `id` (text `text`), or undefined
 * when the record holds another effect's. Throws `invalid_snapshot` naming the record when it
 * is corrupt (a broken checksum, a malformed field, an event that is not a runtime event):
 * nothing of it may be applied.
 */
export function readEffectResultRecord(
  id: string,
  text: string,
  effectId: string,
): StoredEffectResult | undefined {
  if (sealOf(text) !== 'sealed') corrupt(id, 'its checksum does not match its contents');
  let parsed: unknown;
  try {
    parsed = JSON.parse(unsealedText(text));
  } catch {
    corrupt(id, 'it is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    corrupt(id, `it is ${describeValue(parsed)}, not an object`);
  const record = parsed as Record<string, unknown>;
  if (typeof record.effectId !== 'string')
    corrupt(id, `its effectId is ${describeValue(record.effectId)}`);
  if (record.effectId !== effectId) return undefined;
  const { events, attempt } = record;
  if (!Array.isArray(events)) corrupt(id, `its events are ${describeValue(events)}`);
  if (attempt !== undefined && !(Number.isSafeInteger(attempt) && (attempt as number) >= 1))
    corrupt(id, `its attempt is ${describeValue(attempt)}`);
  try {
    return {
      events: events.map((event: unknown) => parseRuntimeEvent(event)),
      ...(attempt === undefined ? {} : { attempt: attempt as number }),
    };
  } catch (error) {
    corrupt(
      id,
      `an event of ${effectId}'s result is not a runtime event (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

function corrupt(id: string, why: string): never {
  throw new RoleboxError('invalid_snapshot', `stored record ${id} is corrupt: ${why}`, {
    recordId: id,
  });
}
