import type { z } from 'zod';
import { loopStateOf } from '../../../machines/loop.machine.js';
import { functionChildId, LOOP_CHILD_ID } from '../../base/actor-ids.js';
import { topStateOf } from '../../base/state-value.js';
import { describeValue, isRoleboxError, RoleboxError } from '../../errors.js';
import { isTerminalLoopPhase, type LoopState } from '../../loop/types.js';
import { decodeEnvelope, isForeignRecordId, SYSTEM_RECORD_ID } from '../../persistence/envelope.js';
import {
  functionContextSchema,
  loopContextSchema,
  persistedMachineSchema,
  sessionContextSchema,
} from '../../persistence/snapshot-schemas.js';
import { approvalTrail } from '../../rolebox/approvals-view.js';
import { runtimePhaseOf } from '../../rolebox/views.js';
import type { PendingEffect } from '../../session/runtime-types.js';
import { type ApprovalRequest, readRequests } from '../../signal/approval-requests.js';
import type { Output } from '../output.js';
import { openExistingStoreFile } from '../store-file.js';

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

/** One stored session as `rolebox show` shows it: its status row, its loop, its slots. */
export interface StoredSession {
  readonly status: SessionStatus;
  /** The loop that runs, else the last one that ran; undefined when it never ran one. */
  readonly loop?: LoopState;
  /** The session's slots (where the CLI keeps the worker command). */
  readonly slots: unknown;
  /** The session machine's state value (what `rolebox chart` highlights). */
  readonly value: unknown;
  /** The effects it emitted and has not settled yet, oldest first (its outbox). */
  readonly pendingEffects: readonly PendingEffect[];
  /** Its approval requests, open first (`view().approvals`, SPEC §9). */
  readonly approvals: readonly ApprovalRequest[];
}

/**
 * Reads one session from the store without starting anything.
 * Throws: `invalid_argument` when there is no store, `unknown_session` when it holds no
 * session `sessionId`, `invalid_snapshot` when its record cannot be read.
 */
export async function readStoredSession(
  storePath: string,
  sessionId: string,
): Promise<StoredSession> {
  const store = openExistingStoreFile(storePath);
  try {
    const data =
      sessionId === SYSTEM_RECORD_ID || isForeignRecordId(sessionId)
        ? undefined
        : await store.load(sessionId);
    if (data === undefined)
      throw new RoleboxError(
        'unknown_session',
        `no session ${describeValue(sessionId)} in ${describeValue(storePath)} (rolebox status lists them)`,
        { sessionId },
      );
    return readSession(sessionId, decodeEnvelope(sessionId, data).snapshot);
  } finally {
    await store.close();
  }
}

/**
 * Reads the store and describes every session without starting anything: no loop moves,
 * no worker is touched. A record that cannot be read is listed with why.
 */
export async function readStatus(storePath: string): Promise<SessionStatus[]> {
  const store = openExistingStoreFile(storePath);
  try {
    const rows: SessionStatus[] = [];
    for (const record of await store.loadAll()) {
      if (record.id === SYSTEM_RECORD_ID || isForeignRecordId(record.id)) continue;
      try {
        rows.push(readSession(record.id, decodeEnvelope(record.id, record.data).snapshot).status);
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

/** A stored session snapshot, read through the stored shapes. Throws: `invalid_snapshot`. */
function readSession(sessionId: string, stored: unknown): StoredSession {
  const read = <T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> => {
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    throw new RoleboxError(
      'invalid_snapshot',
      `stored session ${describeValue(sessionId)}: ${where}: ${issue?.path.map(String).join('.') || '(root)'}: ${issue?.message}`,
      { sessionId },
    );
  };
  const snapshot = read(persistedMachineSchema, stored, 'session');
  const context = read(sessionContextSchema, snapshot.context, 'session context');
  const childOf = (id: string) =>
    Object.hasOwn(snapshot.children, id) ? snapshot.children[id] : undefined;
  const functions = [
    ...context.liveFunctions.map((name) => {
      const child = childOf(functionChildId(name));
      return { name, phase: child ? topStateOf(child.snapshot.value) : '?', live: true };
    }),
    ...Object.entries(context.retiredFunctions).map(([name, retired]) => ({
      name,
      phase: retired.phase,
      live: false,
    })),
  ];
  const liveLoop = context.activeLoopId === null ? undefined : childOf(LOOP_CHILD_ID);
  const loop: LoopState | null = liveLoop
    ? loopStateOf({
        value: liveLoop.snapshot.value,
        context: read(loopContextSchema, liveLoop.snapshot.context, 'loop context'),
      })
    : context.lastLoop;
  const status: SessionStatus = {
    session: sessionId,
    phase: runtimePhaseOf(snapshot.value),
    ...(context.waitingReason ? { waiting: context.waitingReason.kind } : {}),
    functions,
    ...(loop ? { loop: { id: loop.id, phase: loop.phase, round: roundLabel(loop) } } : {}),
  };
  return {
    status,
    ...(loop ? { loop } : {}),
    slots: context.slots,
    value: snapshot.value,
    pendingEffects: context.pendingEffects as PendingEffect[],
    approvals: approvalTrail([
      ...context.liveFunctions.map((name) => {
        const child = childOf(functionChildId(name));
        const fn = child && read(functionContextSchema, child.snapshot.context, `function ${name}`);
        return { requests: fn ? readRequests(fn.kv) : [] };
      }),
      ...Object.values(context.retiredFunctions).map((retired) => ({
        requests: readRequests(retired.context.kv),
      })),
    ]),
  };
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
export function roundLabel(loop: LoopState): string {
  const round = isTerminalLoopPhase(loop.phase) ? loop.rounds.length : loop.current;
  return `${round}/${loop.total}`;
}
