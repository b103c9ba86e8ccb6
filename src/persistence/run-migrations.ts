import { FUNCTION_MACHINE_VERSION } from '../../machines/function.machine.js';
import { SESSION_MACHINE_VERSION } from '../../machines/session.machine.js';
import { RoleboxError } from '../errors.js';
import { DEFAULT_SHARDS, shardIndexOf } from '../system/shards.js';
import { comparableSnapshot, type RecordedRun } from './journal.js';
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
 * A run recorded on system machine 1 (sessions were the root's children, and the root's
 * context listed them), in the shape system machine 2 has: each session under its shard
 * (DESIGN §7), the root's context without sessions. The events are unchanged: they went to
 * the root and to the sessions' actors by systemId, which did not change.
 *
 * @param pristineRoot the persisted snapshot of a new root with its shards and no sessions
 * (the shape of the shard actors is the machine's to say, not this function's).
 */
export function upgradeRecordedRun(run: RecordedRun, pristineRoot: unknown): RecordedRun {
  if (run.machineVersions.system >= 2) return run;
  const upgrade = (snapshot: unknown, comparable: boolean): unknown => {
    const root = snapshot as Json & { context?: Json; children?: Record<string, unknown> };
    const shaped = structuredClone(pristineRoot) as Json & {
      context: Json & { shards: number };
      children: Record<string, { snapshot: { children: Record<string, unknown> } }>;
    };
    shaped.status = root.status;
    shaped.value = root.value;
    shaped.historyValue = root.historyValue;
    shaped.context = { ...shaped.context, loopRegistry: root.context?.loopRegistry };
    for (const [childId, child] of Object.entries(root.children ?? {})) {
      const sessionId = childId.startsWith('session:') ? childId.slice('session:'.length) : '';
      const shard = shaped.children[`shard:${shardIndexOf(sessionId, shaped.context.shards)}`];
      if (shard) shard.snapshot.children[childId] = child;
    }
    return comparable ? comparableSnapshot(shaped) : shaped;
  };
  return {
    ...run,
    machineVersions: { ...run.machineVersions, system: 2 },
    initial: upgrade(run.initial, false),
    journal: run.journal.map((entry) => ({ ...entry, after: upgrade(entry.after, true) })),
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
    journal: run.journal.map((entry) => ({ ...entry, after: upgrade(entry.after) })),
  };
}
