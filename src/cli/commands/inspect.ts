import { existsSync } from 'node:fs';
import {
  type InspectorServer,
  type InspectorServerOptions,
  startInspectorServer,
} from '../../../inspector/server.js';
import type { MachineDefinitions } from '../../../inspector/snapshot-actors.js';
import { addStoreSource, type StoredSessionRecord } from '../../../inspector/store-source.js';
import { describeValue, isRoleboxError, RoleboxError } from '../../errors.js';
import { decodeEnvelope, isForeignRecordId, SYSTEM_RECORD_ID } from '../../persistence/envelope.js';
import { persistedMachineSchema } from '../../persistence/snapshot-schemas.js';
import { machinesFor } from '../../rolebox/build-machines.js';
import { resolveRoleboxOptions } from '../../rolebox/options.js';
import { OK_EXIT_CODE } from '../exit-codes.js';
import { type Output, untilInterrupted } from '../output.js';
import { openStoreFile } from '../store-file.js';

/** The built-in machines' configs as JSON, as a live app sends them: the charts of stored and replayed actors. */
export function machineDefinitions(): MachineDefinitions {
  const machines = machinesFor(resolveRoleboxOptions({}));
  return {
    system: JSON.stringify(machines.system.config),
    session: JSON.stringify(machines.session.config),
    function: JSON.stringify(machines.function.config),
    loop: JSON.stringify(machines.loop.config),
  };
}

/**
 * Every session record of the store at `path`, read without starting anything: its
 * persisted snapshot, or why it cannot be read (listed, never a crash).
 * Throws: `invalid_argument` when there is no store there, or the file is no SQLite store.
 */
export async function readStoredRecords(path: string): Promise<StoredSessionRecord[]> {
  // Opening a missing path would create an empty store: refused instead.
  if (!existsSync(path))
    throw new RoleboxError('invalid_argument', `--store: no store at ${describeValue(path)}`, {
      path,
    });
  const store = openStoreFile(path);
  let rows: { id: string; data: string }[];
  try {
    rows = await store.loadAll();
  } finally {
    await store.close();
  }
  return rows
    .filter((row) => row.id !== SYSTEM_RECORD_ID && !isForeignRecordId(row.id))
    .map((row): StoredSessionRecord => {
      try {
        const snapshot = decodeEnvelope(row.id, row.data).snapshot;
        const checked = persistedMachineSchema.safeParse(snapshot);
        if (!checked.success)
          return {
            id: row.id,
            error: `not a session snapshot: ${checked.error.issues[0]?.path.join('.') || '(root)'}: ${checked.error.issues[0]?.message}`,
          };
        return { id: row.id, snapshot };
      } catch (error) {
        if (!isRoleboxError(error)) throw error;
        return { id: row.id, error: error.message };
      }
    });
}

/** The one-line state of a stored session for the terminal: its state value, or why it is unreadable. */
function describeRecord(record: StoredSessionRecord): string {
  if ('error' in record) return `unreadable: ${record.error}`;
  const value = (record.snapshot as { value?: unknown }).value;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Starts an inspector, saying what to do about a port in use. */
export async function startCliInspector(
  options: InspectorServerOptions,
  output: Output,
): Promise<InspectorServer> {
  try {
    return await startInspectorServer({
      ...options,
      log: (message) => output.err(`» ${message}`),
    });
  } catch (error) {
    // No fallback here: whoever asked for this port may have told others where to look.
    if (isRoleboxError(error, 'port_in_use'))
      throw new RoleboxError(
        'port_in_use',
        `${error.message}; pass another --port, or --port 0 for any free one`,
        error.details,
      );
    throw error;
  }
}

/**
 * `rolebox inspect`: runs the inspector until Ctrl-C or SIGTERM. `appOrigin` lists the
 * browser origins allowed to stream to it; with `json`, one `{"type":"listening",…}` line
 * says where it is. A port in use is `port_in_use` (exit 2): no other port is taken
 * behind the user's back. With `store`, the sessions stored there are listed on stdout and
 * shown in the page, read-only (a live app streaming to it shows its own, live). Returns
 * the exit code. Throws: as {@link readStoredRecords}.
 */
export async function runInspectCommand(
  options: { port: number; host: string; appOrigin?: string[]; json?: boolean; store?: string },
  output: Output,
): Promise<number> {
  // Read first: a bad store is refused before anything listens.
  const stored = options.store === undefined ? undefined : await readStoredRecords(options.store);
  const server = await startCliInspector(
    {
      port: options.port,
      host: options.host,
      ...(options.appOrigin ? { appOrigins: options.appOrigin } : {}),
    },
    output,
  );
  if (stored && options.store !== undefined) {
    addStoreSource(server, {
      name: `store ${options.store}`,
      sessions: stored,
      definitions: machineDefinitions(),
    });
  }
  if (options.json) {
    output.out(
      JSON.stringify({
        type: 'listening',
        url: server.url,
        wsUrl: server.wsUrl,
        port: server.port,
        token: server.token,
      }),
    );
    if (stored)
      output.out(
        JSON.stringify({
          type: 'stored',
          sessions: stored.map((record) =>
            'error' in record ? { id: record.id, error: record.error } : { id: record.id },
          ),
        }),
      );
  } else {
    if (stored) {
      output.out(`${stored.length} stored session(s) in ${options.store}, shown read-only:`);
      for (const record of stored) output.out(`  ${record.id}  ${describeRecord(record)}`);
    }
    output.out(`inspector: ${server.url}`);
    output.out(
      `apps stream to ${server.wsUrl}  (createRolebox({ inspect: { url: '${server.wsUrl}' } }), or --inspect ${server.wsUrl})`,
    );
  }
  await untilInterrupted();
  await server.stop();
  return OK_EXIT_CODE;
}
