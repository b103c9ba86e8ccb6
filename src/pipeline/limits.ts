import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import { DEFAULT_GUARD_TTL_MS, DEFAULT_MAX_GUARD_LANES } from './guard-backend.js';
import { DEFAULT_SOURCE_EVENT_BOUNDS } from './source-event-store.js';

/** The pipeline's limits and time windows (SPEC-pipeline §4, §5). */
export interface PipelineLimits {
  /** Nodes one run may process before it concludes with `max_steps` (256). */
  readonly maxSteps: number;
  /** How long a source event id is remembered as seen (300 000 ms). */
  readonly dedupeWindowMs: number;
  /** How long the scope lock around window generation is held at most (5 000 ms). */
  readonly scopeLockMs: number;
  /** How long a scope's window is kept after its last event (3 600 000 ms). */
  readonly windowTtlMs: number;
  /**
   * How long a guard lane (debounce, throttle, outer timeout, idempotency mark) is kept
   * after its last touch (3 600 000 ms); then it reads as never touched.
   */
  readonly guardTtlMs: number;
  /** How long to wait before trying a contended scope lock again (25 ms). */
  readonly lockRetryMs: number;
  /** How many finished runs `pipeline.runs()` keeps (100). */
  readonly runHistory: number;
  /** Dedupe keys the default in-memory store keeps (10 000); the oldest is forgotten first. */
  readonly maxDedupeKeys: number;
  /** Scope locks the default in-memory store holds at once (10 000); more wait their turn. */
  readonly maxScopeLocks: number;
  /** Scope windows the default in-memory store keeps (10 000); the oldest is forgotten first. */
  readonly maxWindows: number;
  /** Guard lanes the default in-memory backend keeps (10 000); the oldest is forgotten first. */
  readonly maxGuardLanes: number;
}

/** The defaults. */
export const DEFAULT_PIPELINE_LIMITS: PipelineLimits = {
  maxSteps: 256,
  dedupeWindowMs: 300_000,
  scopeLockMs: 5_000,
  windowTtlMs: 3_600_000,
  guardTtlMs: DEFAULT_GUARD_TTL_MS,
  lockRetryMs: 25,
  runHistory: 100,
  ...DEFAULT_SOURCE_EVENT_BOUNDS,
  maxGuardLanes: DEFAULT_MAX_GUARD_LANES,
};

const LIMIT_NAMES = Object.keys(DEFAULT_PIPELINE_LIMITS);

/**
 * The defaults with `overrides` applied. Throws: `invalid_argument` naming a limit that is
 * not a whole number ≥ 1 (≥ 0 for the retry), or an unknown limit name (with the one likely
 * meant and the known ones).
 */
export function resolvePipelineLimits(overrides: Partial<PipelineLimits> = {}): PipelineLimits {
  checkOptionNames(overrides, LIMIT_NAMES, 'createPipeline limits', 'limit');
  const limits = { ...DEFAULT_PIPELINE_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    const min = name === 'lockRetryMs' ? 0 : 1;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
      throw new RoleboxError(
        'invalid_argument',
        `pipeline limit ${name} must be a whole number ≥ ${min}, got ${describeValue(value)}`,
        { limit: name, value },
      );
    }
  }
  return limits;
}
