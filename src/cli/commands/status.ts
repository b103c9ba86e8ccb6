import { existsSync } from 'node:fs';
import { loopStateOf } from '../../../machines/loop.machine.js';
import { SqliteSnapshotStore } from '../../adapters/sqlite-snapshot-store.js';
import { topStateOf } from '../../base/state-value.js';
import { describeValue, isRoleboxError, RoleboxError } from '../../errors.js';
import type { LoopContext } from '../../loop/machine-types.js';
import { isTerminalLoopPhase, type LoopState } from '../../loop/types.js';
import { decodeEnvelope, isForeignRecordId, SYSTEM_RECORD_ID } from '../../persistence/envelope.js';
import { runtimePhaseOf } from '../../rolebox/views.js';
import type { Output } from '../output.js';

/** One stored session as `rolebox status` shows it. */
export interface SessionStatus {
  readonly session: string;
  readonly phase: string;
  readonly waiting?: string;
  readonly functions: readonly {
    readonly name: string;
    readonly phase: string;
    readonly live: boolean;
  }[];
  readonly loop?: { readonly id: string; readonly phase: string; readonly round: string };
  readonly error?: string;
}

interface StoredChild {
  src: string;
  snapshot: { value: unknown; context: Record<string, unknown> };
}

/**
 * Reads the store and describes every session without starting anything: no loop moves,
 * no worker is touched.
 */
export async function readStatus(storePath: string): Promise<SessionStatus[]> {
  if (!existsSync(storePath))
    throw new RoleboxError('invalid_argument', `no store at ${describeValue(storePath)}`);
  const store = new SqliteSnapshotStore(storePath);
  try {
    const rows: SessionStatus[] = [];
    for (const record of await store.loadAll()) {
      if (record.id === SYSTEM_RECORD_ID || isForeignRecordId(record.id)) continue;
      try {
        const snapshot = decodeEnvelope(record.id, record.data).snapshot as {
          value: unknown;
          context: {
            waitingReason?: { kind?: string } | null;
            retiredFunctions?: Record<string, { phase: string }>;
            lastLoop?: LoopState | null;
          };
          children: Record<string, StoredChild>;
        };
        const children = Object.values(snapshot.children ?? {});
        const functions = [
          ...children
            .filter((child) => child.src === 'function')
            .map((child) => ({
              name: String(child.snapshot.context.name),
              phase: topStateOf(child.snapshot.value),
              live: true,
            })),
          ...Object.entries(snapshot.context.retiredFunctions ?? {}).map(([name, retired]) => ({
            name,
            phase: retired.phase,
            live: false,
          })),
        ];
        const liveLoop = children.find((child) => child.src === 'loop');
        const loop = liveLoop
          ? loopStateOf(liveLoop.snapshot as unknown as { value: unknown; context: LoopContext })
          : snapshot.context.lastLoop;
        rows.push({
          session: record.id,
          phase: runtimePhaseOf(snapshot.value),
          ...(snapshot.context.waitingReason?.kind
            ? { waiting: snapshot.context.waitingReason.kind }
            : {}),
          functions,
          ...(loop ? { loop: { id: loop.id, phase: loop.phase, round: roundLabel(loop) } } : {}),
        });
      } catch (error) {
        if (!isRoleboxError(error)) throw error;
        rows.push({ session: record.id, phase: '?', functions: [], error: error.message });
      }
    }
    return rows;
  } finally {
    await store.close();
  }
}

/** Lays rows out as a plain-text table. */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] as number))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join(
    '\n',
  );
}

/** `rolebox status`: the stored sessions, their functions and loops. Returns the exit code. */
export async function runStatusCommand(
  options: { store: string; json?: boolean },
  output: Output,
): Promise<number> {
  const rows = await readStatus(options.store);
  if (options.json) {
    output.out(JSON.stringify(rows, null, 2));
    return 0;
  }
  if (rows.length === 0) {
    output.out(`no sessions in ${options.store}`);
    return 0;
  }
  output.out(
    formatTable(
      ['SESSION', 'PHASE', 'FUNCTIONS', 'LOOP'],
      rows.map((row) => [
        row.session,
        row.error
          ? `unreadable: ${row.error}`
          : row.waiting
            ? `${row.phase} (${row.waiting})`
            : row.phase,
        row.functions.map((fn) => `${fn.name}=${fn.phase}${fn.live ? '' : '*'}`).join(', ') || '-',
        row.loop ? `${row.loop.id} ${row.loop.phase} ${row.loop.round}` : '-',
      ]),
    ),
  );
  if (rows.some((row) => row.functions.some((fn) => !fn.live))) output.out('(* no longer live)');
  return 0;
}

/**
 * `2/3`: the round in progress of a running loop; of a finished one, the last round it
 * started (its `current` has moved past it).
 */
function roundLabel(loop: LoopState): string {
  const round = isTerminalLoopPhase(loop.phase) ? loop.rounds.length : loop.current;
  return `${round}/${loop.total}`;
}
