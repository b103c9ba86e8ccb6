/** What the system remembers of every loop it started: enough to check ancestry and tree size. */
export interface LoopRegistration {
  readonly originSessionId: string;
  /** Set when the loop was started from a worker session of another loop. */
  readonly parentLoopId?: string;
  /** The loop at the top of this loop's tree (itself for a root loop). */
  readonly rootLoopId: string;
  /** SHA-256 of the normalised base prompt. */
  readonly fingerprint: string;
  /** True once the loop reached a terminal phase. */
  readonly finished: boolean;
}

/** The system actor's loop bookkeeping. Plain JSON. */
export interface LoopRegistry {
  readonly loops: Readonly<Record<string, LoopRegistration>>;
  /** Worker session id → the loop whose round runs in it. */
  readonly workerSessions: Readonly<Record<string, string>>;
}

/** The verdict on a loop registration. */
export type LoopRegistrationCheck =
  | { readonly ok: true; readonly parentLoopId?: string; readonly rootLoopId?: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Decides whether a new loop may start in `originSessionId` (SPEC §3.4). Refused when the
 * session already has a loop that is not finished; when the prompt's fingerprint equals an
 * ancestor's (the session is a worker of another loop, which makes the new loop its
 * child); or when the loop tree would exceed `maxTreeLoops`.
 */
export function checkLoopRegistration(
  registry: LoopRegistry,
  request: { readonly originSessionId: string; readonly fingerprint: string },
  maxTreeLoops: number,
): LoopRegistrationCheck {
  for (const [loopId, loop] of Object.entries(registry.loops)) {
    if (loop.originSessionId === request.originSessionId && !loop.finished) {
      return {
        ok: false,
        reason: `session ${request.originSessionId} already has a running loop (${loopId})`,
      };
    }
  }
  const parentLoopId = registry.workerSessions[request.originSessionId];
  if (parentLoopId === undefined) return { ok: true };

  const seen = new Set<string>();
  for (
    let ancestorId: string | undefined = parentLoopId;
    ancestorId !== undefined && !seen.has(ancestorId);
  ) {
    seen.add(ancestorId);
    const ancestor: LoopRegistration | undefined = registry.loops[ancestorId];
    if (!ancestor) break;
    if (ancestor.fingerprint === request.fingerprint) {
      return {
        ok: false,
        reason: `recursive loop: the prompt is the same as ancestor loop ${ancestorId}'s`,
      };
    }
    ancestorId = ancestor.parentLoopId;
  }
  const rootLoopId = registry.loops[parentLoopId]?.rootLoopId ?? parentLoopId;
  const treeSize = Object.values(registry.loops).filter(
    (loop) => loop.rootLoopId === rootLoopId,
  ).length;
  if (treeSize + 1 > maxTreeLoops) {
    return {
      ok: false,
      reason: `loop tree limit reached: tree ${rootLoopId} already has ${treeSize} loops (limit ${maxTreeLoops})`,
    };
  }
  return { ok: true, parentLoopId, rootLoopId };
}
