import { FUNCTION_MACHINE_VERSION } from '../../machines/function.machine.js';
import { SESSION_MACHINE_VERSION } from '../../machines/session.machine.js';
import { SYSTEM_MACHINE_VERSION } from '../../machines/system.machine.js';
import { SYSTEM_ACTOR_ID } from '../base/actor-ids.js';
import { RoleboxError } from '../errors.js';
import { type LoopRegistrations, loopRegistryOf } from '../loop/registry.js';
import { DEFAULT_SHARDS, shardActorId, shardIndexOf } from '../system/shards.js';
import { comparableSnapshot, type JournalEntry, type RecordedRun } from './journal.js';
import { migrateMachineSnapshot } from './machine-migrations.js';

type Json = Record<string, unknown>;

/** How many shards the system of a recorded run had (version 1 had none: it gets the default). */
export function shardsOfRun(run: RecordedRun): number {
  if (run.machineVersions.system < 2) return DEFAULT_SHARDS;
  const shards = (run.initial as { context?: { shards?: unknown } }).context?.shards;
  return typeof shards === 'number' && Number.isInteger(shards) && shards > 0
    ? shards
    : DEFAULT_SHARDS;
}

/**
 * A run recorded on an older system machine, in the shape system machine 4 has (DESIGN §7):
 * each session under its shard, a shard present only while it holds a session (version 2
 * spawned all of them at start, version 1 had none and kept sessions under the root and in
 * its context), the loop registry in buckets (version 3 and before kept it flat). A restore
 * the runtime handed straight to a shard that held nothing then is handed to the root
 * (`system.restore_session`), which spawns that shard first, as today's runtime does; a
 * journaled registry replacement carries buckets too; every other event is unchanged
 * (targets are named by systemId).
 *
 * @param pristineRoot the persisted snapshot of a new root (no shards, no sessions).
 */
export function upgradeRecordedRun(run: RecordedRun, pristineRoot: unknown): RecordedRun {
  const from = run.machineVersions.system;
  if (from >= SYSTEM_MACHINE_VERSION) return run;
  const upgrade = (snapshot: unknown, comparable: boolean): unknown => {
    const lazy =
      from < 3
        ? withoutEmptyShards(from < 2 ? sessionsUnderShards(snapshot, pristineRoot) : snapshot)
        : snapshot;
    const bucketed = withRegistryBuckets(lazy);
    return comparable && from < 2 ? comparableSnapshot(bucketed) : bucketed;
  };
  return {
    ...run,
    machineVersions: { ...run.machineVersions, system: SYSTEM_MACHINE_VERSION },
    initial: upgrade(run.initial, false),
    journal: run.journal.map((entry) => ({
      ...withBucketedRegistryEvent(restoreThroughRoot(entry)),
      after: upgrade(entry.after, true),
    })),
  };
}

/** A flat loop registry (`{ loops }`, system machine 3 and before) in buckets; any other value as is. */
function bucketedRegistry(registry: unknown): unknown {
  const loops = (registry as { loops?: unknown } | undefined)?.loops;
  return isTree(loops) ? loopRegistryOf(loops as LoopRegistrations) : registry;
}

/** A root snapshot whose loop registry is kept in buckets (system machine 4). */
function withRegistryBuckets(snapshot: unknown): unknown {
  const root = snapshot as SnapshotTree;
  if (!isTree(root?.context)) return snapshot;
  return {
    ...root,
    context: { ...root.context, loopRegistry: bucketedRegistry(root.context.loopRegistry) },
  };
}

/** A journaled `system.set_loop_registry` carrying the registry in buckets (system machine 4). */
function withBucketedRegistryEvent(entry: JournalEntry): JournalEntry {
  if (entry.event.type !== 'system.set_loop_registry') return entry;
  return {
    ...entry,
    event: { ...entry.event, loopRegistry: bucketedRegistry(entry.event.loopRegistry) },
  };
}

type SnapshotTree = Json & { context?: Json; children?: Record<string, Json> };

/** A version-1 root snapshot with its sessions moved under their shards (spawned for them). */
function sessionsUnderShards(snapshot: unknown, pristineRoot: unknown): unknown {
  const root = snapshot as SnapshotTree;
  const shaped = structuredClone(pristineRoot) as Json & {
    context: Json & { shards: number };
    children: Record<string, Json>;
  };
  shaped.status = root.status;
  shaped.value = root.value;
  shaped.historyValue = root.historyValue;
  shaped.context = { ...shaped.context, loopRegistry: root.context?.loopRegistry };
  for (const [childId, child] of Object.entries(root.children ?? {})) {
    const sessionId = childId.startsWith('session:') ? childId.slice('session:'.length) : '';
    const index = shardIndexOf(sessionId, shaped.context.shards);
    const shard = shaped.children[shardActorId(index)] ?? emptyShardChild(index);
    shaped.children[shardActorId(index)] = shard;
    (shard.snapshot as { children: Record<string, unknown> }).children[childId] = child;
  }
  return shaped;
}

/** The persisted child entry of shard `index` holding no session (as XState persists it). */
function emptyShardChild(index: number): Json {
  return {
    snapshot: { status: 'active', value: {}, historyValue: {}, context: { index }, children: {} },
    src: 'shard',
    systemId: shardActorId(index),
    syncSnapshot: false,
  };
}

/** A root snapshot without the shards that hold no session (system machine 3 stops them). */
function withoutEmptyShards(snapshot: unknown): unknown {
  const root = snapshot as SnapshotTree;
  if (!root?.children) return snapshot;
  const kept = Object.entries(root.children).filter(
    ([childId, child]) =>
      !childId.startsWith('shard:') ||
      Object.keys((child.snapshot as SnapshotTree | undefined)?.children ?? {}).length > 0,
  );
  return { ...root, children: Object.fromEntries(kept) };
}

/** A restore journaled as sent to a shard, as sent to the root (which spawns the shard if needed). */
function restoreThroughRoot(entry: JournalEntry): JournalEntry {
  const input = entry.event.input as
    | { sessionId?: unknown; at?: unknown; restore?: unknown }
    | undefined;
  if (
    !entry.target.startsWith('shard:') ||
    entry.event.type !== 'shard.spawn' ||
    input?.restore === undefined
  )
    return entry;
  return {
    ...entry,
    target: SYSTEM_ACTOR_ID,
    event: {
      type: 'system.restore_session',
      sessionId: input.sessionId,
      openedAt: input.at,
      snapshot: input.restore,
    },
  };
}

/**
 * A run recorded on an older session machine, its sessions in today's shape: each session
 * subtree of every recorded system snapshot (the initial one and each entry's `after`) is
 * brought up by the session and function migrations stored records go through (`MACHINE_MIGRATIONS`),
 * e.g. version 1's child ids `fn:<sessionId>:<name>` and `loop:<loopId>` become `fn:<name>`
 * and `loop`. The events are unchanged: they name their targets by systemId, which did not
 * change. Sessions are found under the root or its shards, so it runs before or after
 * {@link upgradeRecordedRun}.
 */
export function upgradeRecordedSessions(run: RecordedRun): RecordedRun {
  const from = run.machineVersions.session;
  const fromFunction = run.machineVersions.function;
  if (from >= SESSION_MACHINE_VERSION && fromFunction >= FUNCTION_MACHINE_VERSION) return run;
  const refuse = (machine: string, version: number, current: number): never => {
    throw new RoleboxError(
      'invalid_argument',
      `the recorded run's ${machine} machine version ${version} is older than ${current} and no migration brings it up`,
      { from: version, current },
    );
  };
  // Functions live inside their session's record: their migrations run on it, after the
  // session's own (as a stored record's do, src/persistence/envelope.ts).
  const migrateSession = (session: Json): Json => {
    const migrated =
      migrateMachineSnapshot('session', session, from, SESSION_MACHINE_VERSION) ??
      refuse('session', from, SESSION_MACHINE_VERSION);
    return (
      migrateMachineSnapshot('function', migrated, fromFunction, FUNCTION_MACHINE_VERSION) ??
      refuse('function', fromFunction, FUNCTION_MACHINE_VERSION)
    );
  };
  const upgrade = (node: unknown): unknown => {
    if (typeof node !== 'object' || node === null) return node;
    const tree = node as Json & { children?: Record<string, Json> };
    if (!tree.children) return node;
    const children: Record<string, Json> = {};
    for (const [childId, child] of Object.entries(tree.children)) {
      const inner = child?.snapshot;
      children[childId] = childId.startsWith('shard:')
        ? { ...child, snapshot: upgrade(inner) }
        : childId.startsWith('session:') && typeof inner === 'object' && inner !== null
          ? { ...child, snapshot: migrateSession(inner as Json) }
          : child;
    }
    return { ...tree, children };
  };
  return {
    ...run,
    machineVersions: {
      ...run.machineVersions,
      session: SESSION_MACHINE_VERSION,
      function: FUNCTION_MACHINE_VERSION,
    },
    initial: upgrade(run.initial),
    journal: run.journal.map((entry) => ({
      ...withRestoredSession(entry, migrateSession),
      after: upgrade(entry.after),
    })),
  };
}

/**
 * An entry whose event restores a stored session (`system.restore_session`, or a shard
 * spawned with `input.restore`) with that session brought up too: the runtime migrates a
 * stored record before it restores it, so the recorded snapshot must be in today's shape.
 */
function withRestoredSession(entry: JournalEntry, migrate: (session: Json) => Json): JournalEntry {
  const event = entry.event as Json & { snapshot?: unknown; input?: Json & { restore?: unknown } };
  if (event.type === 'system.restore_session' && isTree(event.snapshot))
    return { ...entry, event: { ...event, snapshot: migrate(event.snapshot) } };
  if (event.type === 'shard.spawn' && event.input && isTree(event.input.restore))
    return {
      ...entry,
      event: { ...event, input: { ...event.input, restore: migrate(event.input.restore) } },
    };
  return entry;
}

function isTree(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
