import { LOOP_CHILD_ID } from '../base/actor-ids.js';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';
import {
  emptyLoopRegistry,
  type LoopRegistration,
  type LoopRegistrations,
  type LoopRegistry,
  loopRegistryOf,
  registeredLoops,
  registrationOf,
  someRegistration,
  withoutFinishedTrees,
  withRegistration,
} from '../loop/registry.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import type { CheckedSession } from './check-snapshot.js';
import { decodeEnvelope, SYSTEM_RECORD_ID } from './envelope.js';
import type { MigrationRegistry } from './migrations.js';
import { systemRecordSchema } from './snapshot-schemas.js';

/** What `rb.start()` found in the store. */
export interface StartReport {
  /**
   * Sessions restored at start. Always empty since sessions became virtual actors
   * (DESIGN §7): a stored session is activated when it is used or woken, not at start.
   * Kept so that code written for 0.1 still compiles.
   */
  readonly restored: readonly string[];
  /** How many stored sessions wait for a wake-up (a deadline, a worker's end): each is activated then. */
  readonly wakeUps: number;
  /** Records that could not be read (the `$system` record), with why; they stay in the store, untouched. */
  readonly failed: readonly { readonly sessionId: string; readonly error: RoleboxError }[];
}

/** A stored session that passed every check. */
export interface RestorableSession extends CheckedSession {
  readonly sessionId: string;
}

/**
 * The system record: what the system actor keeps besides its sessions, the loop registry
 * (its registrations flat; the root keeps them in buckets, see {@link LoopRegistry}).
 */
export interface SystemRecord {
  readonly context: { readonly loopRegistry: { readonly loops: LoopRegistrations } };
}

/** The system record of `registry` (what the persister writes as `$system`). */
export function systemRecordOf(registry: LoopRegistry): SystemRecord {
  return { context: { loopRegistry: { loops: registeredLoops(registry) } } };
}

/** Checks the system record. Throws: `invalid_snapshot` naming what is wrong. */
function checkSystemRecord(snapshot: unknown): SystemRecord {
  const result = systemRecordSchema.safeParse(snapshot);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new RoleboxError(
      'invalid_snapshot',
      `stored record ${describeValue(SYSTEM_RECORD_ID)} cannot be restored: ${issue?.path.map(String).join('.') || '(root)'}: ${issue?.message}; loops are registered again from the sessions that restore`,
      { recordId: SYSTEM_RECORD_ID },
    );
  }
  return snapshot as SystemRecord;
}

/**
 * Splits sessions into those whose systemIds no other session claims and those that share
 * one (a record copied under another key, a child naming another session's actor). Of the
 * sessions sharing an id, the one `owner` names keeps it; when it names none, every one of
 * them is refused, since which is genuine cannot be told. `live` names the live session
 * that already holds an id, if any (restoring one session into a running system).
 */
export function withoutSharedSystemIds(
  sessions: readonly RestorableSession[],
  known: {
    readonly owner?: (systemId: string) => string | undefined;
    readonly live?: (systemId: string) => string | undefined;
  } = {},
): {
  unique: RestorableSession[];
  clashes: { sessionId: string; error: RoleboxError }[];
} {
  const owners = new Map<string, string[]>();
  for (const session of sessions) {
    for (const systemId of session.systemIds) {
      const list = owners.get(systemId) ?? [];
      list.push(session.sessionId);
      owners.set(systemId, list);
    }
  }
  const unique: RestorableSession[] = [];
  const clashes: { sessionId: string; error: RoleboxError }[] = [];
  for (const session of sessions) {
    let clash: { systemId: string; other: string } | undefined;
    for (const systemId of session.systemIds) {
      const claimants = owners.get(systemId) ?? [];
      const owner = known.owner?.(systemId);
      const other =
        known.live?.(systemId) ??
        (owner !== undefined && claimants.includes(owner)
          ? owner === session.sessionId
            ? undefined
            : owner
          : claimants.find((id) => id !== session.sessionId));
      if (other !== undefined) {
        clash = { systemId, other };
        break;
      }
    }
    if (!clash) {
      unique.push(session);
      continue;
    }
    clashes.push({
      sessionId: session.sessionId,
      error: new RoleboxError(
        'invalid_snapshot',
        `stored session ${describeValue(session.sessionId)} cannot be restored: actor ${clash.systemId} is also held by session ${describeValue(clash.other)}`,
        { sessionId: session.sessionId, systemId: clash.systemId, other: clash.other },
      ),
    });
  }
  return { unique, clashes };
}

/** A loop actor's context as far as the registry needs it. */
interface RegisteredLoopContext {
  readonly id: string;
  readonly parentLoopId?: string;
  readonly promptFingerprint: string;
  readonly rounds: readonly { readonly workerSessionId: string }[];
}

/**
 * The registry after a restore: each restored session's loops agree with what the session
 * runs. A registration whose origin restored without it is finished (and its tree dropped
 * when it was the last), a live loop missing from the registry is registered from its own
 * context. Registrations of sessions that did not restore are kept for when they do.
 * Unchanged, the registry itself is returned (the caller tells the root only of a change);
 * an activation costs a scan that copies nothing, and one bucket copied per registration
 * that changes, however many loops are registered.
 */
export function reconcileLoopRegistry(
  registry: LoopRegistry,
  sessions: readonly RestorableSession[],
): LoopRegistry {
  const running = new Map<string, RegisteredLoopContext & { originSessionId: string }>();
  const restored = new Set<string>();
  for (const { sessionId, snapshot } of sessions) {
    restored.add(sessionId);
    const { activeLoopId } = snapshot.context;
    if (activeLoopId === null) continue;
    const loop = snapshot.children[LOOP_CHILD_ID]?.snapshot.context;
    if (loop)
      running.set(activeLoopId, {
        ...(loop as unknown as RegisteredLoopContext),
        originSessionId: sessionId,
      });
  }
  const stale: [string, LoopRegistration][] = [];
  someRegistration(registry, (loopId, registration) => {
    if (
      !registration.finished &&
      restored.has(registration.originSessionId) &&
      !running.has(loopId)
    )
      stale.push([loopId, registration]);
    return false;
  });
  let next = registry;
  const finishedRoots = new Set<string>();
  for (const [loopId, registration] of stale) {
    next = withRegistration(next, loopId, { ...registration, finished: true });
    finishedRoots.add(registration.rootLoopId);
  }
  for (const [loopId, loop] of running) {
    const registered = registrationOf(next, loopId);
    if (registered) {
      if (registered.finished)
        next = withRegistration(next, loopId, { ...registered, finished: false });
      continue;
    }
    const parent =
      loop.parentLoopId === undefined ? undefined : registrationOf(next, loop.parentLoopId);
    next = withRegistration(next, loopId, {
      originSessionId: loop.originSessionId,
      ...(loop.parentLoopId === undefined ? {} : { parentLoopId: loop.parentLoopId }),
      rootLoopId: parent?.rootLoopId ?? loop.parentLoopId ?? loopId,
      fingerprint: loop.promptFingerprint,
      workerSessionIds: [...new Set(loop.rounds.map((round) => round.workerSessionId))],
      finished: false,
    });
  }
  // A tree whose loops have all finished is dropped, as finishLoop does: only a tree a loop
  // was finished in here can have become one (the record's own were dropped when read).
  return finishedRoots.size === 0 ? next : withoutFinishedTrees(next, finishedRoots);
}

/**
 * The persisted snapshot the root starts from: no shards (each is spawned with its first
 * session, which is activated on demand) and the loop registry read from the store.
 */
export function rootSnapshotWith(loopRegistry: LoopRegistry, shards: number): unknown {
  return {
    status: 'active',
    value: {},
    historyValue: {},
    context: { shards, loopRegistry },
    children: {},
  };
}

/**
 * Reads the system record (the loop registry). A record that cannot be read is reported
 * and an empty registry used: running loops register again as their sessions activate.
 * Throws: `store_failed` when the store cannot be read.
 */
export async function loadLoopRegistry(
  store: SnapshotStore,
  migrations: MigrationRegistry,
): Promise<{ loopRegistry: LoopRegistry; failed: StartReport['failed'] }> {
  const text = await store.load(SYSTEM_RECORD_ID);
  if (text === undefined) return { loopRegistry: emptyLoopRegistry(), failed: [] };
  try {
    const envelope = decodeEnvelope(SYSTEM_RECORD_ID, text, migrations);
    const { loops } = checkSystemRecord(envelope.snapshot).context.loopRegistry;
    // A tree whose loops have all finished is dropped here once (two processes writing the
    // record in turn can leave one), so that a restore need not look for them.
    return { loopRegistry: withoutFinishedTrees(loopRegistryOf(loops)), failed: [] };
  } catch (error) {
    if (!isRoleboxError(error)) throw error;
    return { loopRegistry: emptyLoopRegistry(), failed: [{ sessionId: SYSTEM_RECORD_ID, error }] };
  }
}
