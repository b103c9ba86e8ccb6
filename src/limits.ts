import { z } from 'zod';
import { describeValue, RoleboxError } from './errors.js';
import { DEFAULT_CONTINUATION_LIMITS } from './function/continuation.js';

/** Every tunable limit of a rolebox. Pass overrides to `createRolebox({ limits })`. */
export interface RoleboxLimits {
  /** Most continuations per session (SPEC §2.3; default 25). */
  readonly continuationsPerSession: number;
  /** Turns of cooldown after the n-th continuation of a function (default `{ 3: 1, 5: 3 }`). */
  readonly continuationCooldowns: Readonly<Record<number, number>>;
}

/** The defaults of the specification. */
export const DEFAULT_LIMITS: RoleboxLimits = {
  continuationsPerSession: DEFAULT_CONTINUATION_LIMITS.perSession,
  continuationCooldowns: DEFAULT_CONTINUATION_LIMITS.cooldownTurns,
};

const nonNegativeInt = z.number().int().min(0);
const limitsSchema = z.strictObject({
  continuationsPerSession: nonNegativeInt.optional(),
  continuationCooldowns: z.record(z.string().regex(/^\d+$/), nonNegativeInt).optional(),
});

/**
 * Merges overrides onto the defaults.
 * Throws: `invalid_argument` naming the offending limit and value.
 */
export function resolveLimits(overrides: unknown): RoleboxLimits {
  if (overrides === undefined) return DEFAULT_LIMITS;
  const parsed = limitsSchema.safeParse(overrides);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const field = issue.path.map(String).join('.') || 'limits';
    throw new RoleboxError(
      'invalid_argument',
      `limits.${field}: ${issue.message} (got ${describeValue(overrides)})`,
      { field },
    );
  }
  const { continuationCooldowns, ...rest } = parsed.data;
  return {
    ...DEFAULT_LIMITS,
    ...rest,
    ...(continuationCooldowns
      ? {
          continuationCooldowns: Object.fromEntries(
            Object.entries(continuationCooldowns).map(([k, v]) => [Number(k), v]),
          ),
        }
      : {}),
  };
}
