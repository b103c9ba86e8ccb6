import { isForeignRecordId, SYSTEM_RECORD_ID } from '../persistence/envelope.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';

/**
 * The slot where `rolebox loop` records how the session's loop was started (a
 * {@link LoopRun}, naming the loop). It is set in the same tick as the loop starts, so the
 * first save that holds the loop holds it too.
 */
export const LOOP_RUN_SLOT = 'cli.loop';

/**
 * The slot where rolebox before the per-loop record kept the session's worker command. A
 * store written then is still resumed with it (it was set just before the session's loop
 * started, so it is that loop's).
 */
export const SESSION_WORKER_SLOT = 'cli.worker';

/** The slot where rolebox before the per-loop record kept `--delay` and `--round-timeout`. */
export const SESSION_LIMITS_SLOT = 'cli.limits';

/** How one loop was started by `rolebox loop`: its worker command and the limits given. */
export interface LoopRun {
  readonly loopId: string;
  readonly worker: string;
  readonly delay?: number;
  readonly roundTimeout?: number;
}

/** A stored session's unfinished loop and, when the store says, how it was started. */
export interface StoredLoop {
  readonly sessionId: string;
  /** Undefined when the record cannot be read: opening the session says why. */
  readonly loopId?: string;
  /**
   * The loop's worker and limits: from its own record, or (`from: 'session'`) from the
   * session's record an older rolebox wrote. Undefined when neither is there.
   */
  readonly run?: Omit<LoopRun, 'loopId'> & { readonly from: 'loop' | 'session' };
}

/** What {@link readStoredLoops} found in a store. */
export interface StoredLoops {
  /** The unfinished loops (and unreadable session records), in the store's order. */
  readonly loops: readonly StoredLoop[];
  /** Whether any session, finished or not, records a worker command. */
  readonly anyWorker: boolean;
}

/** The value of {@link LOOP_RUN_SLOT} for a loop (plain JSON, as slots are). */
export function loopRunSlotValue(run: LoopRun): LoopRun {
  return {
    loopId: run.loopId,
    worker: run.worker,
    ...(run.delay === undefined ? {} : { delay: run.delay }),
    ...(run.roundTimeout === undefined ? {} : { roundTimeout: run.roundTimeout }),
  };
}

/** A number read from a slot, when it is one. */
function numberIn(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

/**
 * How the loop `loopId` was started, from a session's slots: the loop's own record when it
 * names this loop, else the session's older record. A record naming another loop (an
 * earlier one of the session) is never used for this one.
 */
export function loopRunIn(
  slots: Readonly<Record<string, unknown>> | undefined,
  loopId: string | undefined,
): StoredLoop['run'] {
  const own = slots?.[LOOP_RUN_SLOT] as Partial<Record<keyof LoopRun, unknown>> | undefined;
  if (own && typeof own === 'object') {
    if (own.loopId === loopId && typeof own.worker === 'string') {
      const delay = numberIn(own.delay);
      const roundTimeout = numberIn(own.roundTimeout);
      return {
        worker: own.worker,
        ...(delay === undefined ? {} : { delay }),
        ...(roundTimeout === undefined ? {} : { roundTimeout }),
        from: 'loop',
      };
    }
    // The session's own record is about another loop: the older one below is older still.
    return undefined;
  }
  const worker = slots?.[SESSION_WORKER_SLOT];
  if (typeof worker !== 'string') return undefined;
  const limits = (slots?.[SESSION_LIMITS_SLOT] ?? {}) as {
    delay?: unknown;
    roundTimeout?: unknown;
  };
  const delay = numberIn(limits.delay);
  const roundTimeout = numberIn(limits.roundTimeout);
  return {
    worker,
    ...(delay === undefined ? {} : { delay }),
    ...(roundTimeout === undefined ? {} : { roundTimeout }),
    from: 'session',
  };
}

/** The worker command a session's slots record for its latest loop, whichever that is. */
export function latestWorkerIn(slots: Readonly<Record<string, unknown>> | undefined) {
  const own = slots?.[LOOP_RUN_SLOT] as { worker?: unknown } | undefined;
  const worker = own && typeof own === 'object' ? own.worker : slots?.[SESSION_WORKER_SLOT];
  return typeof worker === 'string' ? worker : undefined;
}

/**
 * Reads, without starting anything, the stored sessions whose loop is unfinished (their
 * context names an active loop) and how each loop was started. A record that cannot be
 * parsed is listed without a loop, so that opening it says why.
 */
export async function readStoredLoops(store: SnapshotStore): Promise<StoredLoops> {
  const loops: StoredLoop[] = [];
  let anyWorker = false;
  for (const record of await store.loadAll()) {
    if (record.id === SYSTEM_RECORD_ID || isForeignRecordId(record.id)) continue;
    let context: { activeLoopId?: unknown; slots?: Record<string, unknown> } | undefined;
    try {
      context = (
        JSON.parse(record.data) as {
          snapshot?: { context?: { activeLoopId?: unknown; slots?: Record<string, unknown> } };
        }
      ).snapshot?.context;
    } catch {
      loops.push({ sessionId: record.id });
      continue;
    }
    const slots = context?.slots ?? undefined;
    if (latestWorkerIn(slots) !== undefined) anyWorker = true;
    const loopId = context?.activeLoopId;
    if (typeof loopId !== 'string') continue;
    const run = loopRunIn(slots, loopId);
    loops.push({ sessionId: record.id, loopId, ...(run ? { run } : {}) });
  }
  return { loops, anyWorker };
}
