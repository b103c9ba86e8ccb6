import { existsSync } from 'node:fs';
import { SqliteSnapshotStore } from '../../adapters/sqlite-snapshot-store.js';
import { describeValue, isRoleboxError, RoleboxError } from '../../errors.js';
import { isTerminalLoopPhase } from '../../loop/types.js';
import type { SessionHandle } from '../../rolebox/session-handle.js';
import { DEFAULT_LIMITS } from '../../system/limits.js';
import { FAILURE_EXIT_CODE, OK_EXIT_CODE } from '../exit-codes.js';
import { formatMs, type Output } from '../output.js';
import {
  cliRolebox,
  followRolebox,
  LIMITS_SLOT,
  type RunOptions,
  resultJson,
  WORKER_SLOT,
  waitForLoops,
} from './loop.js';

/** How the stored loops were started: the worker command and the `--delay` / `--round-timeout` given. */
interface RecordedRun {
  readonly worker?: string;
  readonly delay?: number;
  readonly roundTimeout?: number;
}

/** Reads how the stored sessions' loops were started (the first session that says). */
async function recordedRun(storePath: string): Promise<RecordedRun> {
  const store = new SqliteSnapshotStore(storePath);
  try {
    for (const record of await store.loadAll()) {
      const slots = (
        JSON.parse(record.data) as { snapshot?: { context?: { slots?: Record<string, unknown> } } }
      ).snapshot?.context?.slots;
      const worker = slots?.[WORKER_SLOT];
      if (typeof worker !== 'string') continue;
      const limits = (slots?.[LIMITS_SLOT] ?? {}) as { delay?: unknown; roundTimeout?: unknown };
      return {
        worker,
        ...(typeof limits.delay === 'number' ? { delay: limits.delay } : {}),
        ...(typeof limits.roundTimeout === 'number' ? { roundTimeout: limits.roundTimeout } : {}),
      };
    }
    return {};
  } catch {
    return {};
  } finally {
    await store.close();
  }
}

/**
 * The stored sessions whose loop is still running (their context names it), in the
 * store's order; a record that cannot be read is listed too, so that opening it says why.
 */
async function sessionsWithLoops(store: SqliteSnapshotStore): Promise<string[]> {
  const ids: string[] = [];
  for (const record of await store.loadAll()) {
    if (record.id.startsWith('$')) continue;
    try {
      const context = (
        JSON.parse(record.data) as {
          snapshot?: { context?: { activeLoopId?: unknown } };
        }
      ).snapshot?.context;
      if (context?.activeLoopId == null) continue;
    } catch {
      // unreadable: opening it reports why
    }
    ids.push(record.id);
  }
  return ids;
}

/**
 * `rolebox resume`: activates every stored session, reconciles its loop with the
 * dispatcher's tasks, and waits for the loops to finish, printing as `rolebox loop` does
 * (with `json`, a result line per loop at the end). Returns the exit code.
 */
export async function runResumeCommand(
  options: RunOptions & { worker?: string; json?: boolean },
  output: Output,
): Promise<number> {
  // A mistyped --store must not quietly create an empty database and report nothing to do.
  if (!existsSync(options.store)) {
    throw new RoleboxError(
      'invalid_argument',
      `no store at ${describeValue(options.store)}: nothing to resume (rolebox loop creates it; pass --store <file> for another one)`,
      { store: options.store },
    );
  }
  const recorded = await recordedRun(options.store);
  const worker = options.worker ?? recorded.worker;
  if (!worker) {
    throw new RoleboxError(
      'invalid_argument',
      `no worker command is recorded in ${describeValue(options.store)}; pass --worker "<command>"`,
    );
  }
  // The loop goes on as it was started, unless this command says otherwise.
  const delay = options.delay ?? recorded.delay;
  const roundTimeout = options.roundTimeout ?? recorded.roundTimeout;
  const given = (ms: number | undefined, fallback: number) =>
    ms === undefined ? `${formatMs(fallback)} (default)` : formatMs(ms);
  output.err(
    `» worker: ${worker} · delay between rounds: ${given(delay, DEFAULT_LIMITS.interRoundDelayMs)} · round timeout: ${given(roundTimeout, DEFAULT_LIMITS.roundTimeoutMs)}`,
  );
  const { rb, store, dispatcher, close } = await cliRolebox(
    {
      ...options,
      ...(delay === undefined ? {} : { delay }),
      ...(roundTimeout === undefined ? {} : { roundTimeout }),
    },
    worker,
    output,
  );
  /** The loops resumed: their totals (for the notes) and their sessions. */
  const loops = new Map<string, { total: number; sessionId: string }>();
  // Listening before the restore, so nothing a restored loop says right away is missed.
  const follower = followRolebox(rb, output, (loopId) => loops.get(loopId)?.total, {
    dispatcher,
    ...(options.json ? { json: true } : {}),
  });
  try {
    const report = await rb.start();
    for (const failure of report.failed)
      output.err(`» could not read ${failure.sessionId}: ${failure.error.message}`);
    // Sessions are activated on demand: open each stored session that runs a loop (which
    // claims it, restores it and reconciles its loop with the dispatcher's tasks). A record
    // that cannot be restored, or a loop another live process drives, does not stop the
    // others: they go on, and the exit code says so.
    let refused = report.failed.length;
    for (const sessionId of await sessionsWithLoops(store)) {
      let loop: ReturnType<SessionHandle['view']>['loop'];
      try {
        loop = (await rb.openSession({ id: sessionId, ifOpen: 'reuse' })).view().loop;
      } catch (error) {
        refused++;
        if (isRoleboxError(error, 'session_owned_elsewhere'))
          output.err(`» not resuming ${sessionId}: ${error.message}`);
        else if (isRoleboxError(error))
          output.err(`» could not restore ${sessionId}: ${error.message}`);
        else throw error;
        continue;
      }
      if (loop && !isTerminalLoopPhase(loop.phase)) {
        loops.set(loop.id, { total: loop.total, sessionId });
        output.err(
          `» resuming loop ${loop.id} in session ${sessionId}: round ${loop.current}/${loop.total}, ${loop.phase}`,
        );
      }
    }
    if (loops.size === 0) {
      follower.stop();
      output.err('» nothing to resume (no stored loop is running)');
      return refused > 0 ? FAILURE_EXIT_CODE : OK_EXIT_CODE;
    }
    const waited = await waitForLoops(
      rb,
      new Map([...loops].map(([loopId, { sessionId }]) => [loopId, sessionId])),
      output,
      follower,
    );
    const code = refused > 0 && waited === OK_EXIT_CODE ? FAILURE_EXIT_CODE : waited;
    if (options.json)
      for (const [loopId, { sessionId }] of loops)
        output.out(resultJson(rb, loopId, sessionId, code));
    return code;
  } finally {
    follower.stop();
    await close();
  }
}
