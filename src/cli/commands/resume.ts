import { existsSync } from 'node:fs';
import { describeValue, isRoleboxError, RoleboxError } from '../../errors.js';
import { isTerminalLoopPhase } from '../../loop/types.js';
import type { SessionHandle } from '../../rolebox/session-handle.js';
import { DEFAULT_LIMITS } from '../../system/limits.js';
import { FAILURE_EXIT_CODE, OK_EXIT_CODE } from '../exit-codes.js';
import { readStoredLoops, type StoredLoop, type StoredLoops } from '../loop-runs.js';
import { formatMs, type Output } from '../output.js';
import { openStoreFile } from '../store-file.js';
import {
  cliRolebox,
  followRolebox,
  type RunOptions,
  resultJson,
  sayHowToGoOn,
  waitForLoops,
} from './loop.js';

/** What `rolebox resume` goes on with: each loop's worker, and the limits for all of them. */
interface ResumePlan {
  /** The unfinished loops (and unreadable records), in the store's order. */
  readonly stored: readonly StoredLoop[];
  /** The worker of each unfinished loop. */
  readonly workers: ReadonlyMap<string, string>;
  readonly delay?: number;
  readonly roundTimeout?: number;
}

/** Reads what the store says of its unfinished loops, without starting anything. */
async function readStored(storePath: string): Promise<StoredLoops> {
  const store = openStoreFile(storePath);
  try {
    return await readStoredLoops(store);
  } finally {
    await store.close();
  }
}

/**
 * Each unfinished loop's worker: the one it was started with (its own record, else the
 * session's an older rolebox wrote), `--worker` only for a loop whose own is not recorded.
 * The limits are those given, else those the loops were started with (one set for the
 * process: when the loops disagree, the longest, and it says so).
 * Throws: `invalid_argument` when a loop's worker is unknown and no `--worker` is given,
 * or the store records no worker at all.
 */
function planResume(
  found: StoredLoops,
  options: RunOptions & { worker?: string },
  output: Output,
): ResumePlan {
  const store = describeValue(options.store);
  const loops = found.loops.filter((loop) => loop.loopId !== undefined);
  if (loops.length === 0 && !found.anyWorker && options.worker === undefined)
    throw new RoleboxError(
      'invalid_argument',
      `no worker command is recorded in ${store}; pass --worker "<command>"`,
    );
  const workers = new Map<string, string>();
  for (const { sessionId, loopId, run } of loops) {
    if (loopId === undefined) continue;
    const own = run?.from === 'loop' ? run.worker : undefined;
    const worker = own ?? options.worker ?? run?.worker;
    if (worker === undefined)
      throw new RoleboxError(
        'invalid_argument',
        `no worker command is recorded in ${store} for loop ${loopId} (session ${sessionId}, started by an earlier rolebox); pass --worker "<command>"`,
        { sessionId, loopId },
      );
    if (own !== undefined && options.worker !== undefined && options.worker !== own)
      output.err(
        `» loop ${loopId} keeps the worker it was started with (${own}); --worker is for loops whose own is not recorded`,
      );
    workers.set(loopId, worker);
  }
  const limit = (name: 'delay' | 'roundTimeout', flag: string, given: number | undefined) => {
    if (given !== undefined) return given;
    const recorded = [
      ...new Set(loops.flatMap(({ run }) => (run?.[name] === undefined ? [] : [run[name]]))),
    ].sort((a, b) => a - b);
    // The longest: no loop goes on faster, or has a round cut short sooner, than it asked.
    const longest = recorded.at(-1);
    if (recorded.length > 1)
      output.err(
        `» the loops were started with different ${flag} (${recorded.map(formatMs).join(', ')}); all of them go on with the longest, ${formatMs(longest as number)} (pass ${flag} to choose)`,
      );
    return longest;
  };
  const delay = limit('delay', '--delay', options.delay);
  const roundTimeout = limit('roundTimeout', '--round-timeout', options.roundTimeout);
  return {
    stored: found.loops,
    workers,
    ...(delay === undefined ? {} : { delay }),
    ...(roundTimeout === undefined ? {} : { roundTimeout }),
  };
}

/**
 * `rolebox resume`: activates every stored session that runs a loop, reconciles its loop
 * with the worker tasks, and waits for the loops to finish, each running the worker it was
 * started with, printing as `rolebox loop` does (with `json`, a result line per loop at
 * the end). Returns the exit code.
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
  const plan = planResume(await readStored(options.store), options, output);
  const { delay, roundTimeout } = plan;
  const distinct = new Set(plan.workers.values());
  if (distinct.size > 0) {
    const given = (ms: number | undefined, fallback: number) =>
      ms === undefined ? `${formatMs(fallback)} (default)` : formatMs(ms);
    const workers =
      distinct.size === 1
        ? `worker: ${[...distinct][0]}`
        : `workers: each loop its own (${distinct.size} commands)`;
    output.err(
      `» ${workers} · delay between rounds: ${given(delay, DEFAULT_LIMITS.interRoundDelayMs)} · round timeout: ${given(roundTimeout, DEFAULT_LIMITS.roundTimeoutMs)}`,
    );
  }
  const { rb, dispatcher, close } = await cliRolebox(
    {
      ...options,
      ...(delay === undefined ? {} : { delay }),
      ...(roundTimeout === undefined ? {} : { roundTimeout }),
    },
    output,
  );
  /** The loops resumed: their totals (for the notes) and their sessions. */
  const loops = new Map<string, { total: number; sessionId: string }>();
  // Listening before the restore, so nothing a restored loop says right away is missed.
  const follower = followRolebox(rb, output, (loopId) => loops.get(loopId)?.total, {
    dispatcher,
    ...(options.json ? { json: true } : {}),
  });
  // The exit code once known: after SIGTERM, how to go on is said once all is saved.
  let left: number | undefined;
  try {
    // Before anything is woken: a round of a loop runs the worker that loop was started with.
    for (const [loopId, worker] of plan.workers) dispatcher.assign(loopId, worker);
    const report = await rb.start();
    for (const failure of report.failed)
      output.err(`» could not read ${failure.sessionId}: ${failure.error.message}`);
    // Sessions are activated on demand: open each stored session that runs a loop (which
    // claims it, restores it and reconciles its loop with the dispatcher's tasks). A record
    // that cannot be restored, or a loop another live process drives, does not stop the
    // others: they go on, and the exit code says so.
    let refused = report.failed.length;
    for (const { sessionId } of plan.stored) {
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
        const worker = distinct.size > 1 ? ` · worker: ${dispatcher.workerOf(loop.id)}` : '';
        output.err(
          `» resuming loop ${loop.id} in session ${sessionId}: round ${loop.current}/${loop.total}, ${loop.phase}${worker}`,
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
    left = code;
    if (options.json)
      for (const [loopId, { sessionId }] of loops)
        output.out(resultJson(rb, loopId, sessionId, code));
    return code;
  } finally {
    follower.stop();
    await close();
    sayHowToGoOn(left, output);
  }
}
