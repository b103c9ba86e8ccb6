import { z } from 'zod';
import { MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH } from '../base/input-limits.js';
import { plainJsonProblem } from '../base/json-value.js';
import { ownValue } from '../base/own-keys.js';
import { utf8ByteLength } from '../base/utf8.js';
import { describeValue, RoleboxError } from '../errors.js';
import { isSignalType, SIGNAL_TYPES, type SignalType } from './catalogue.js';

/** A JSON object payload carried by a signal. */
export type SignalPayload = Record<string, unknown>;

/** The arguments of the `|signal|` tool. */
export interface SignalArgs {
  /** Which of the eight signals. */
  readonly type: SignalType;
  /** Optional structured data; always a JSON object when present. */
  readonly payload?: SignalPayload;
}

/** The zod schema of {@link SignalArgs}, as the seed's tool declares it. */
export const signalArgsSchema = z.object({
  type: z.enum(SIGNAL_TYPES),
  payload: z.record(z.string(), z.unknown()).optional(),
});

/**
 * Validates signal arguments from untrusted input.
 *
 * Expects: `{ type, payload? }`; a payload is plain JSON data (see {@link plainJsonProblem})
 * at most {@link MAX_PAYLOAD_DEPTH} levels deep and {@link MAX_PAYLOAD_BYTES} bytes as JSON.
 * Returns: the typed arguments (payload cloned as JSON).
 * Throws: `unknown_signal_type`, `invalid_signal_payload` or `invalid_argument`, naming the value.
 */
export function parseSignalArgs(input: unknown): SignalArgs {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RoleboxError(
      'invalid_argument',
      `signal arguments must be an object like { type: "answer" }, got ${describeValue(input)}`,
      {
        value: input,
      },
    );
  }
  const candidate = input as Record<string, unknown>;
  const type = ownValue(candidate, 'type');
  if (!isSignalType(type)) {
    throw new RoleboxError(
      'unknown_signal_type',
      `unknown signal type ${describeValue(type)}; expected one of ${SIGNAL_TYPES.join(', ')}`,
      { type },
    );
  }
  const payload = ownValue(candidate, 'payload');
  if (
    payload !== undefined &&
    (typeof payload !== 'object' || payload === null || Array.isArray(payload))
  ) {
    throw new RoleboxError(
      'invalid_signal_payload',
      `signal payload must be a JSON object, got ${describeValue(payload)}`,
      { type, payload },
    );
  }
  const extra = Object.keys(candidate).filter((key) => key !== 'type' && key !== 'payload');
  if (extra.length > 0) {
    throw new RoleboxError(
      'invalid_argument',
      `signal arguments take only type and payload, got ${extra.map((key) => describeValue(key)).join(', ')}`,
      {
        keys: extra,
      },
    );
  }
  if (payload === undefined) return { type };
  return { type, payload: toJsonObject(payload, type) };
}

/**
 * Payloads enter machine context, which must be plain JSON: refuse what is not (a Date, a
 * Map, a class instance, symbol keys, NaN, too deep, too big) and clone the rest through
 * JSON, so the caller's object is never shared. Keys such as `__proto__` stay own keys.
 */
function toJsonObject(payload: object, type: SignalType): SignalPayload {
  const fail = (why: string): never => {
    throw new RoleboxError('invalid_signal_payload', `signal ${type}: ${why}`, { type });
  };
  const problem = plainJsonProblem(payload, 'payload', {
    maxDepth: MAX_PAYLOAD_DEPTH,
    maxValues: MAX_PAYLOAD_BYTES,
  });
  if (problem) fail(problem);
  const text = JSON.stringify(payload);
  const bytes = utf8ByteLength(text);
  if (bytes > MAX_PAYLOAD_BYTES)
    fail(`payload is ${bytes} bytes as JSON, more than the ${MAX_PAYLOAD_BYTES} allowed`);
  return JSON.parse(text) as SignalPayload;
}
