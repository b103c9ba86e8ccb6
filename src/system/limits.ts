import { z } from 'zod';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import { DEFAULT_CONTINUATION_LIMITS } from '../function/continuation.js';
import {
  DEFAULT_ITERATIONS,
  DISPATCH_ROUND_TIMEOUT_MS,
  INTER_ROUND_DELAY_MS,
  MAX_ITERATIONS_HARD_CAP,
  MAX_TREE_WORKER_SESSIONS,
  SEED_CHAR_CAP,
  SUMMARY_INPUT_CHAR_CAP,
} from '../loop/constants.js';

/** Every tunable limit of a rolebox. Pass overrides to `createRolebox({ limits })`. */
export interface RoleboxLimits {
  /** Most continuations per session (SPEC §2.3; default 25). */
  readonly continuationsPerSession: number;
  /** Turns of cooldown after the n-th continuation of a function (default `{ 3: 1, 5: 3 }`). */
  readonly continuationCooldowns: Readonly<Record<number, number>>;
  /** Loop iterations when `|loop|` names none (default 5). */
  readonly defaultIterations: number;
  /** Hard cap on loop iterations; more are clamped (default 50). */
  readonly maxIterations: number;
  /** How long one round may run (default 900 000 ms). */
  readonly roundTimeoutMs: number;
  /** Pause between rounds (default 2 000 ms). */
  readonly interRoundDelayMs: number;
  /** Characters of a worker's text kept as the round summary (default 8 000). */
  readonly summaryCharCap: number;
  /** Characters of the previous summary that seed an inherit-mode round (default 8 000). */
  readonly seedCharCap: number;
  /** Most loops in one loop tree (default 30). */
  readonly maxTreeLoops: number;
  /** Most loop-tool calls between two user actions (SPEC §4.3; default 12). */
  readonly maxToolBurst: number;
  /**
   * How long a session may wait for the user (`waiting_user`) before it gets `wait_expired`
   * and ends in `error` (default null: waits never expire).
   */
  readonly waitUserTimeoutMs: number | null;
}

/** The defaults of the specification. */
export const DEFAULT_LIMITS: RoleboxLimits = {
  continuationsPerSession: DEFAULT_CONTINUATION_LIMITS.perSession,
  continuationCooldowns: DEFAULT_CONTINUATION_LIMITS.cooldownTurns,
  defaultIterations: DEFAULT_ITERATIONS,
  maxIterations: MAX_ITERATIONS_HARD_CAP,
  roundTimeoutMs: DISPATCH_ROUND_TIMEOUT_MS,
  interRoundDelayMs: INTER_ROUND_DELAY_MS,
  summaryCharCap: SUMMARY_INPUT_CHAR_CAP,
  seedCharCap: SEED_CHAR_CAP,
  maxTreeLoops: MAX_TREE_WORKER_SESSIONS,
  maxToolBurst: 12,
  waitUserTimeoutMs: null,
};

const nonNegativeInt = z.number().int().min(0);
const positiveInt = z.number().int().min(1);
const limitsSchema = z.strictObject({
  continuationsPerSession: nonNegativeInt.optional(),
  continuationCooldowns: z.record(z.string().regex(/^\d+$/), nonNegativeInt).optional(),
  defaultIterations: positiveInt.optional(),
  maxIterations: positiveInt.optional(),
  roundTimeoutMs: positiveInt.optional(),
  interRoundDelayMs: nonNegativeInt.optional(),
  summaryCharCap: positiveInt.optional(),
  seedCharCap: positiveInt.optional(),
  maxTreeLoops: positiveInt.optional(),
  maxToolBurst: positiveInt.optional(),
  waitUserTimeoutMs: positiveInt.nullable().optional(),
});

const LIMIT_NAMES = Object.keys(limitsSchema.shape);

/**
 * Merges overrides onto the defaults.
 * Throws: `invalid_argument` naming the offending limit and value, or an unknown limit
 * name (with the one likely meant and the known ones).
 */
export function resolveLimits(overrides: unknown): RoleboxLimits {
  if (overrides === undefined) return DEFAULT_LIMITS;
  checkOptionNames(overrides, LIMIT_NAMES, 'createRolebox limits', 'limit');
  const parsed = limitsSchema.safeParse(overrides);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const field =
      issue.path.map(String).join('.') ||
      (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : 'limits');
    let value: unknown = overrides;
    for (const key of issue.path) value = (value as Record<PropertyKey, unknown>)?.[key];
    throw new RoleboxError(
      'invalid_argument',
      `limits.${field}: ${issue.message} (got ${describeValue(value)})`,
      { field },
    );
  }
  const { continuationCooldowns, ...rest } = parsed.data;
  const limits: RoleboxLimits = {
    ...DEFAULT_LIMITS,
    ...Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined)),
    ...(continuationCooldowns
      ? {
          continuationCooldowns: Object.fromEntries(
            Object.entries(continuationCooldowns).map(([k, v]) => [Number(k), v]),
          ),
        }
      : {}),
  };
  if (limits.defaultIterations > limits.maxIterations) {
    throw new RoleboxError(
      'invalid_argument',
      `limits.defaultIterations (${limits.defaultIterations}) is above limits.maxIterations (${limits.maxIterations})`,
      {
        field: 'defaultIterations',
      },
    );
  }
  return limits;
}
