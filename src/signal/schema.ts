import { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import { SIGNAL_TYPES, type SignalType } from './catalogue.js';

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
 * Expects: `{ type, payload? }`. Returns: the typed arguments (payload cloned as JSON).
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
  if (!SIGNAL_TYPES.includes(candidate.type as SignalType)) {
    throw new RoleboxError(
      'unknown_signal_type',
      `unknown signal type ${describeValue(candidate.type)}; expected one of ${SIGNAL_TYPES.join(', ')}`,
      { type: candidate.type },
    );
  }
  const payload = candidate.payload;
  if (
    payload !== undefined &&
    (typeof payload !== 'object' || payload === null || Array.isArray(payload))
  ) {
    throw new RoleboxError(
      'invalid_signal_payload',
      `signal payload must be a JSON object, got ${describeValue(payload)}`,
      { type: candidate.type, payload },
    );
  }
  const extra = Object.keys(candidate).filter((key) => key !== 'type' && key !== 'payload');
  if (extra.length > 0) {
    throw new RoleboxError(
      'invalid_argument',
      `signal arguments take only type and payload, got ${extra.join(', ')}`,
      {
        keys: extra,
      },
    );
  }
  const parsed = signalArgsSchema.parse(candidate);
  if (parsed.payload === undefined) return { type: parsed.type };
  return { type: parsed.type, payload: toJsonObject(parsed.payload, parsed.type) };
}

/** Payloads enter machine context, which must be plain JSON: clone through JSON and refuse what does not survive. */
function toJsonObject(payload: Record<string, unknown>, type: SignalType): SignalPayload {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new RoleboxError(
      'invalid_signal_payload',
      `signal payload is not JSON-serialisable: ${(error as Error).message}`,
      {
        type,
      },
    );
  }
  return JSON.parse(text as string) as SignalPayload;
}
