import { isRoleboxError, type RoleboxError } from '../errors.js';
import type { FunctionCatalog } from '../function/catalog.js';
import type { LoopRegistry } from '../loop/registry.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import { checkSessionSnapshot, type SnapshotMachines } from './check-snapshot.js';
import { decodeEnvelope, isForeignRecordId, SYSTEM_RECORD_ID } from './envelope.js';
import type { MigrationRegistry } from './migrations.js';

/** What `rb.start()` restored from the store, and what it could not. */
export interface StartReport {
  /** Sessions restored, by id. */
  readonly restored: readonly string[];
  /** Records that could not be restored, with why (they stay in the store, untouched). */
  readonly failed: readonly { readonly sessionId: string; readonly error: RoleboxError }[];
}

/** A stored session that passed every check. */
export interface RestorableSession {
  readonly sessionId: string;
  readonly snapshot: { readonly context: { readonly createdAt: number } } & Record<string, unknown>;
}

/** The system record: what the system actor keeps besides its sessions. */
export interface SystemRecord {
  readonly context: { readonly loopRegistry: LoopRegistry };
}

/**
 * Reads every record, decodes and checks each session independently: a bad record is
 * reported and skipped, the others restore.
 * Throws: `store_failed` when the store itself cannot be read.
 */
export async function loadStoredSessions(
  store: SnapshotStore,
  machines: SnapshotMachines,
  catalog: FunctionCatalog,
  migrations: MigrationRegistry,
): Promise<{
  sessions: RestorableSession[];
  loopRegistry: LoopRegistry;
  failed: StartReport['failed'];
}> {
  const records = await store.loadAll();
  const sessions: RestorableSession[] = [];
  const failed: { sessionId: string; error: RoleboxError }[] = [];
  let loopRegistry: LoopRegistry = { loops: {} };
  for (const record of records) {
    if (isForeignRecordId(record.id)) continue;
    try {
      const envelope = decodeEnvelope(record.id, record.data, migrations);
      if (record.id === SYSTEM_RECORD_ID) {
        loopRegistry =
          (envelope.snapshot as unknown as SystemRecord).context?.loopRegistry ?? loopRegistry;
        continue;
      }
      checkSessionSnapshot(record.id, envelope.snapshot, machines, catalog);
      sessions.push({
        sessionId: record.id,
        snapshot: envelope.snapshot as RestorableSession['snapshot'],
      });
    } catch (error) {
      if (!isRoleboxError(error)) throw error;
      failed.push({ sessionId: record.id, error });
    }
  }
  return { sessions, loopRegistry, failed };
}

/**
 * The persisted snapshot of a whole system made of stored sessions: the root actor is
 * restored from it in one pass (children by their string key), which keeps restoring N
 * sessions linear.
 */
export function buildSystemSnapshot(
  sessions: readonly RestorableSession[],
  loopRegistry: LoopRegistry,
): unknown {
  return {
    status: 'active',
    value: {},
    historyValue: {},
    context: {
      sessions: Object.fromEntries(
        sessions.map(({ sessionId, snapshot }) => [
          sessionId,
          { openedAt: snapshot.context.createdAt },
        ]),
      ),
      loopRegistry,
    },
    children: Object.fromEntries(
      sessions.map(({ sessionId, snapshot }) => [
        `session:${sessionId}`,
        { snapshot, src: 'session', systemId: `session:${sessionId}`, syncSnapshot: false },
      ]),
    ),
  };
}
