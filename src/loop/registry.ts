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

/** Registrations by loop id, flat: what the `$system` record stores (plain JSON). */
export type LoopRegistrations = Readonly<Record<string, LoopRegistration>>;

/**
 * The system actor's loop bookkeeping: every loop of every tree that still has an
 * unfinished loop. A tree whose loops have all finished is dropped. The registrations are
 * kept in buckets (by a hash of the loop id) because each round reports its worker session
 * here: an update copies one bucket and the list of buckets, not every loop, so a round
 * costs the same with ten loops running or thousands (a flat record copied whole made a
 * round's cost grow with the loops running: 190 µs of it at 1 000). Plain JSON; the
 * `$system` record stores the registrations flat ({@link registeredLoops}).
 */
export interface LoopRegistry {
  /** Registrations by bucket ({@link loopRegistryBucketOf}), then by loop id; no empty bucket. */
  readonly buckets: Readonly<Record<string, LoopRegistrations>>;
}

/**
 * How many buckets the registrations spread over. A change copies one bucket and the list
 * of the buckets in use: at most 64 entries plus a sixty-fourth of the loops.
 */
export const LOOP_REGISTRY_BUCKETS = 64;

/** The bucket a loop's registration lives in (FNV-1a of its id): the same on every process. */
export function loopRegistryBucketOf(loopId: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < loopId.length; i++) {
    hash ^= loopId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return String((hash >>> 0) % LOOP_REGISTRY_BUCKETS);
}

/** A registry with no loop. */
export function emptyLoopRegistry(): LoopRegistry {
  return { buckets: {} };
}

/** The registry holding `loops` (as the `$system` record stores them). */
export function loopRegistryOf(loops: LoopRegistrations): LoopRegistry {
  const grouped = new Map<string, [string, LoopRegistration][]>();
  for (const entry of Object.entries(loops)) {
    const key = loopRegistryBucketOf(entry[0]);
    const group = grouped.get(key);
    if (group) group.push(entry);
    else grouped.set(key, [entry]);
  }
  // fromEntries makes own properties, `__proto__` included.
  return {
    buckets: Object.fromEntries(
      [...grouped].map(([key, group]) => [key, Object.fromEntries(group)]),
    ),
  };
}

/** Every registration by loop id, flat: what the `$system` record stores. */
export function registeredLoops(registry: LoopRegistry): LoopRegistrations {
  return Object.fromEntries(
    Object.values(registry.buckets).flatMap((bucket) => Object.entries(bucket)),
  );
}

/**
 * Calls `visit` with each registration and its loop id, bucket by bucket, until it returns
 * true (reads only: nothing is copied).
 */
export function someRegistration(
  registry: LoopRegistry,
  visit: (loopId: string, registration: LoopRegistration) => boolean | undefined,
): boolean {
  for (const bucket of Object.values(registry.buckets))
    for (const loopId of Object.keys(bucket))
      if (visit(loopId, bucket[loopId] as LoopRegistration)) return true;
  return false;
}

/** The registration of loop `loopId`, or undefined when the registry has none. */
export function registrationOf(
  registry: LoopRegistry,
  loopId: string,
): LoopRegistration | undefined {
  const bucket = ownValue(registry.buckets, loopRegistryBucketOf(loopId));
  return bucket === undefined ? undefined : ownValue(bucket, loopId);
}

/** The registry with `registration` stored for loop `loopId` (one bucket copied). */
export function withRegistration(
  registry: LoopRegistry,
  loopId: string,
  registration: LoopRegistration,
): LoopRegistry {
  const key = loopRegistryBucketOf(loopId);
  // Computed keys in a literal make own properties, `__proto__` included (a plain
  // assignment would set the prototype); defineProperty would be twice as slow.
  return {
    buckets: {
      ...registry.buckets,
      [key]: { ...ownValue(registry.buckets, key), [loopId]: registration },
    },
  };
}

/** The registry without the registrations of `loopIds` (a bucket left empty is dropped). */
export function withoutLoops(registry: LoopRegistry, loopIds: Iterable<string>): LoopRegistry {
  const changed = new Map<string, LoopRegistrations>();
  for (const loopId of loopIds) {
    const key = loopRegistryBucketOf(loopId);
    const bucket = changed.get(key) ?? ownValue(registry.buckets, key);
    if (bucket === undefined || !Object.hasOwn(bucket, loopId)) continue;
    // The rest is a new object: the bucket in the registry is left as it was.
    const { [loopId]: _dropped, ...rest } = bucket;
    changed.set(key, rest);
  }
  if (changed.size === 0) return registry;
  // Built afresh rather than with `delete`: an object that loses a key turns slow to copy
  // (V8 gives it a dictionary), and the bucket list is copied on every round's report.
  const buckets: Record<string, LoopRegistrations> = {};
  for (const key in registry.buckets) {
    if (!Object.hasOwn(registry.buckets, key)) continue;
    const next = changed.get(key) ?? (registry.buckets[key] as LoopRegistrations);
    if (!isEmpty(next)) buckets[key] = next;
  }
  return { buckets };
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
 * A session that is a worker of several unfinished loops (a dispatcher that reuses one
 * worker session) makes the new loop a child of the one whose latest round ran there, and
 * among several such, of the one with the smallest id: a rule that does not depend on the
 * order the registry keeps its loops in, so every process picks the same parent.
 */
export function checkLoopRegistration(
  registry: LoopRegistry,
  request: { readonly originSessionId: string; readonly fingerprint: string },
  maxTreeLoops: number,
): LoopRegistrationCheck {
  let parentLoopId: string | undefined;
  let parentIsLatest = false;
  let running: string | undefined;
  someRegistration(registry, (loopId, loop) => {
    if (loop.finished) return false;
    if (loop.originSessionId === request.originSessionId) running = loopId;
    else if (loop.workerSessionIds.includes(request.originSessionId)) {
      const latest = loop.workerSessionIds.at(-1) === request.originSessionId;
      if (
        parentLoopId === undefined ||
        (latest && !parentIsLatest) ||
        (latest === parentIsLatest && loopId < parentLoopId)
      ) {
        parentLoopId = loopId;
        parentIsLatest = latest;
      }
    }
    return running !== undefined;
  });
  if (running !== undefined)
    return {
      ok: false,
      reason: `session ${request.originSessionId} already has a running loop (${running})`,
    };
  if (parentLoopId === undefined) return { ok: true };

  const seen = new Set<string>();
  for (
    let ancestorId: string | undefined = parentLoopId;
    ancestorId !== undefined && !seen.has(ancestorId);
  ) {
    seen.add(ancestorId);
    const ancestor: LoopRegistration | undefined = registrationOf(registry, ancestorId);
    if (!ancestor) break;
    if (ancestor.fingerprint === request.fingerprint) {
      return {
        ok: false,
        reason: `recursive loop: the prompt is the same as ancestor loop ${ancestorId}'s`,
      };
    }
    ancestorId = ancestor.parentLoopId;
  }
  const rootLoopId = registrationOf(registry, parentLoopId)?.rootLoopId ?? parentLoopId;
  // The seed's concurrency limit: loops of the tree still running, not every loop it ever ran.
  let unfinished = 0;
  someRegistration(registry, (_, loop) => {
    if (loop.rootLoopId === rootLoopId && !loop.finished) unfinished++;
    return false;
  });
  if (unfinished + 1 > maxTreeLoops) {
    return {
      ok: false,
      reason: `loop tree limit reached: tree ${rootLoopId} already has ${unfinished} unfinished loops (limit ${maxTreeLoops})`,
    };
  }
  return { ok: true, parentLoopId, rootLoopId };
}

/**
 * The registry with a loop marked finished, and its whole tree dropped once every loop in
 * it has finished (once per loop: the tree is found by a scan that copies nothing).
 */
export function finishLoop(registry: LoopRegistry, loopId: string): LoopRegistry {
  const loop = registrationOf(registry, loopId);
  if (!loop) return registry;
  // One scan: another loop of the tree still runs (mark this one), or the tree goes.
  const tree: string[] = [];
  const running = someRegistration(registry, (id, entry) => {
    if (entry.rootLoopId !== loop.rootLoopId) return false;
    tree.push(id);
    return !entry.finished && id !== loopId;
  });
  return running
    ? withRegistration(registry, loopId, { ...loop, finished: true })
    : withoutLoops(registry, tree);
}

/**
 * The registry without the trees (of `roots`, or all) whose loops have all finished: a scan
 * that copies nothing, then one copy per bucket that loses a loop.
 */
export function withoutFinishedTrees(
  registry: LoopRegistry,
  roots?: ReadonlySet<string>,
): LoopRegistry {
  const trees = new Map<string, string[]>();
  const unfinished = new Set<string>();
  someRegistration(registry, (loopId, loop) => {
    if (roots && !roots.has(loop.rootLoopId)) return false;
    if (!loop.finished) unfinished.add(loop.rootLoopId);
    const tree = trees.get(loop.rootLoopId);
    if (tree) tree.push(loopId);
    else trees.set(loop.rootLoopId, [loopId]);
    return false;
  });
  const dropped = [...trees].flatMap(([root, loopIds]) => (unfinished.has(root) ? [] : loopIds));
  return dropped.length === 0 ? registry : withoutLoops(registry, dropped);
}

/** The registry with a worker session recorded on its loop. */
export function addWorkerSession(
  registry: LoopRegistry,
  loopId: string,
  workerSessionId: string,
): LoopRegistry {
  const loop = registrationOf(registry, loopId);
  if (!loop || loop.workerSessionIds.includes(workerSessionId)) return registry;
  return withRegistration(registry, loopId, {
    ...loop,
    workerSessionIds: [...loop.workerSessionIds, workerSessionId],
  });
}

/** The unfinished loops started from a worker session of loop `loopId`, with their sessions. */
export function childLoopsOf(
  registry: LoopRegistry,
  loopId: string,
): { loopId: string; sessionId: string }[] {
  const children: { loopId: string; sessionId: string }[] = [];
  someRegistration(registry, (childId, child) => {
    if (child.parentLoopId === loopId && !child.finished)
      children.push({ loopId: childId, sessionId: child.originSessionId });
    return false;
  });
  return children;
}

/** True when `record` has no key (without making an array of its keys). */
function isEmpty(record: LoopRegistrations): boolean {
  for (const key in record) if (Object.hasOwn(record, key)) return false;
  return true;
}
