import { ownValue } from '../base/own-keys.js';

/** What the system remembers of a loop while its tree is live: enough to check ancestry and tree size. */
export interface LoopRegistration {
  readonly originSessionId: string;
  /** Set when the loop was started from a worker session of another loop. */
  readonly parentLoopId?: string;
  /** The loop at the top of this loop's tree (itself for a root loop). */
  readonly rootLoopId: string;
  /** SHA-256 of the normalised base prompt. */
  readonly fingerprint: string;
  /** The sessions this loop's rounds ran in (a loop started in one of them is a child). */
  readonly workerSessionIds: readonly string[];
  /** True once the loop reached a terminal phase. */
  readonly finished: boolean;
}

/**
 * The system actor's loop bookkeeping: every loop of every tree that still has an
 * unfinished loop. A tree whose loops have all finished is dropped, so the registry (and
 * the cost of updating it) stays proportional to the live loops. Plain JSON.
 */
export interface LoopRegistry {
  readonly loops: Readonly<Record<string, LoopRegistration>>;
}

/** The verdict on a loop registration. */
export type LoopRegistrationCheck =
  | { readonly ok: true; readonly parentLoopId?: string; readonly rootLoopId?: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Decides whether a new loop may start in `originSessionId` (SPEC §3.4). Refused when the
 * session already has a loop that is not finished; when the prompt's fingerprint equals an
 * ancestor's (the session is a worker of an unfinished loop, which makes the new loop its
 * child); or when the loop tree would have more than `maxTreeLoops` unfinished loops.
 */
export function checkLoopRegistration(
  registry: LoopRegistry,
  request: { readonly originSessionId: string; readonly fingerprint: string },
  maxTreeLoops: number,
): LoopRegistrationCheck {
  let parentLoopId: string | undefined;
  for (const [loopId, loop] of Object.entries(registry.loops)) {
    if (loop.finished) continue;
    if (loop.originSessionId === request.originSessionId) {
      return {
        ok: false,
        reason: `session ${request.originSessionId} already has a running loop (${loopId})`,
      };
    }
    if (loop.workerSessionIds.includes(request.originSessionId)) parentLoopId = loopId;
  }
  if (parentLoopId === undefined) return { ok: true };

  const seen = new Set<string>();
  for (
    let ancestorId: string | undefined = parentLoopId;
    ancestorId !== undefined && !seen.has(ancestorId);
  ) {
    seen.add(ancestorId);
    const ancestor: LoopRegistration | undefined = ownValue(registry.loops, ancestorId);
    if (!ancestor) break;
    if (ancestor.fingerprint === request.fingerprint) {
      return {
        ok: false,
        reason: `recursive loop: the prompt is the same as ancestor loop ${ancestorId}'s`,
      };
    }
    ancestorId = ancestor.parentLoopId;
  }
  const rootLoopId = ownValue(registry.loops, parentLoopId)?.rootLoopId ?? parentLoopId;
  // The seed's concurrency limit: loops of the tree still running, not every loop it ever ran.
  const running = Object.values(registry.loops).filter(
    (loop) => loop.rootLoopId === rootLoopId && !loop.finished,
  ).length;
  if (running + 1 > maxTreeLoops) {
    return {
      ok: false,
      reason: `loop tree limit reached: tree ${rootLoopId} already has ${running} unfinished loops (limit ${maxTreeLoops})`,
    };
  }
  return { ok: true, parentLoopId, rootLoopId };
}

/** The registry with a loop marked finished, and its whole tree dropped once every loop in it has finished. */
export function finishLoop(registry: LoopRegistry, loopId: string): LoopRegistry {
  const loop = ownValue(registry.loops, loopId);
  if (!loop) return registry;
  const loops = { ...registry.loops, [loopId]: { ...loop, finished: true } };
  const tree = Object.entries(loops).filter(([, entry]) => entry.rootLoopId === loop.rootLoopId);
  if (tree.every(([, entry]) => entry.finished)) for (const [id] of tree) delete loops[id];
  return { loops };
}

/** The registry with a worker session recorded on its loop. */
export function addWorkerSession(
  registry: LoopRegistry,
  loopId: string,
  workerSessionId: string,
): LoopRegistry {
  const loop = ownValue(registry.loops, loopId);
  if (!loop || loop.workerSessionIds.includes(workerSessionId)) return registry;
  return {
    loops: {
      ...registry.loops,
      [loopId]: { ...loop, workerSessionIds: [...loop.workerSessionIds, workerSessionId] },
    },
  };
}
