import { CommandDispatcher } from '../../adapters/command-dispatcher.js';
import { SqliteSnapshotStore } from '../../adapters/sqlite-snapshot-store.js';
import { isRoleboxError, RoleboxError } from '../../errors.js';
import { parseLoopCommand } from '../../loop/parse-loop-command.js';
import { isTerminalLoopPhase } from '../../loop/types.js';
import { createRolebox, type Rolebox } from '../../rolebox/rolebox.js';
import { crashPoint } from '../crash-points.js';
import { resolveInspect } from '../inspector-option.js';
import { followLoops, type Output } from '../output.js';

/** The slot where the CLI remembers a session's worker command, for `rolebox resume`. */
export const WORKER_SLOT = 'cli.worker';

/** The slot where the CLI remembers `--delay` and `--round-timeout`, so `rolebox resume` keeps them. */
export const LIMITS_SLOT = 'cli.limits';

/** Options shared by the commands that run loops. */
export interface RunOptions {
  readonly store: string;
  readonly tasks: string;
  readonly delay?: number;
  readonly roundTimeout?: number;
  readonly inspect?: string | boolean;
}

/** Exit code when the store cannot be written: the work stopped there (SPEC §6). */
export const STORE_FAILED_EXIT_CODE = 3;

/** Exit codes: complete 0, error or interrupted 1, cancelled 130 (as after Ctrl-C). */
export function exitCodeFor(phases: readonly string[]): number {
  if (phases.some((phase) => phase === 'error' || phase === 'interrupted')) return 1;
  if (phases.some((phase) => phase === 'cancelled')) return 130;
  return 0;
}

/**
 * Builds the rolebox a loop command runs with: the SQLite store, the command dispatcher
 * and the limits from the options.
 */
export async function cliRolebox(options: RunOptions, worker: string, output: Output) {
  const inspect = await resolveInspect(options.inspect, output);
  const store = new SqliteSnapshotStore(options.store);
  const dispatcher = new CommandDispatcher({
    command: worker,
    stateDir: options.tasks,
    // The dispatcher's own named points (`before-key`, `before-spawn`, `after-spawn`).
    onDispatchPoint: crashPoint,
  });
  const rb = createRolebox({
    store,
    dispatcher,
    // Saved as soon as anything changes: a shell command can be killed at any moment.
    saveDebounceMs: 0,
    limits: {
      ...(options.delay === undefined ? {} : { interRoundDelayMs: options.delay }),
      ...(options.roundTimeout === undefined ? {} : { roundTimeoutMs: options.roundTimeout }),
    },
    ...(inspect ? { inspect: { url: inspect.url } } : {}),
  });
  const close = async () => {
    await rb.stop();
    await store.close();
    await inspect?.server?.stop();
  };
  return { rb, store, close };
}

/** A command's view of its loops' progress, subscribed before anything can happen. */
export type LoopFollower = ReturnType<typeof followLoops>;

/**
 * Starts printing the loops' progress (durably: see {@link followLoops}). Call it before
 * `rb.start()` or `startLoop`, so no note is missed.
 */
export function followRolebox(
  rb: Rolebox,
  output: Output,
  totals: (loopId: string) => number | undefined,
): LoopFollower {
  return followLoops(
    (handler) => rb.on('*', handler),
    totals,
    output,
    () => rb.flush(),
  );
}

/**
 * Waits until every loop in `loopIds` has finished and every line about it is printed. The
 * first Ctrl-C stops the loops (the stop-loop command); a second one leaves at once with
 * everything saved, for `rolebox resume` (so does SIGTERM, exit 143). A store that cannot
 * be written stops the work with {@link STORE_FAILED_EXIT_CODE}.
 * Returns: the exit code.
 */
export async function waitForLoops(
  rb: Rolebox,
  loops: ReadonlyMap<string, string>,
  output: Output,
  follower: LoopFollower,
): Promise<number> {
  const loopIds = new Set(loops.keys());
  const phases: string[] = [];
  let interrupted = 0;
  return new Promise<number>((resolve) => {
    const onSigint = () => {
      interrupted++;
      if (interrupted === 1) {
        output.err(
          '» stopping (stop-loop); press Ctrl-C again to leave now, then `rolebox resume` to go on',
        );
        for (const sessionId of rb.sessions()) {
          const session = rb.session(sessionId);
          const loop = session.view().loop;
          if (loop && !isTerminalLoopPhase(loop.phase)) session.message('/stop-loop');
        }
      } else {
        finish(130);
      }
    };
    // SIGTERM (a supervisor stopping us) leaves at once, like a second Ctrl-C.
    const onSigterm = () => finish(143);
    let finished = false;
    let storeFailed = false;
    const finish = (code: number, drain = false) => {
      if (finished) return;
      finished = true;
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigterm);
      offFinished();
      const done = () => {
        offError();
        follower.stop();
        // The closing note's own save may be the one that failed.
        resolve(storeFailed ? STORE_FAILED_EXIT_CODE : code);
      };
      // The closing note is printed once it is stored; leaving at once (a signal) does not wait.
      if (drain) follower.printed().then(done, done);
      else done();
    };
    const offFinished = rb.on('loop_finished', (event) => {
      if (!loopIds.has(event.loopId)) return;
      loopIds.delete(event.loopId);
      phases.push(event.phase);
      if (loopIds.size === 0) finish(exitCodeFor(phases), true);
    });
    const offError = rb.on('error', (event) => {
      // Another process took the session over (this one stalled beyond its lease): its loop
      // goes on there; here it is over, and the exit code says it did not finish here.
      if (isRoleboxError(event.error, 'session_owned_elsewhere') && event.sessionId) {
        for (const [loopId, sessionId] of loops) {
          if (sessionId !== event.sessionId || !loopIds.has(loopId)) continue;
          loopIds.delete(loopId);
          phases.push('interrupted');
          output.err(
            `» loop ${loopId} is driven by another process now (session ${sessionId} was taken over); this one let it go`,
          );
        }
        if (loopIds.size === 0) finish(exitCodeFor(phases), true);
        return;
      }
      if (!isRoleboxError(event.error, 'store_failed')) return;
      storeFailed = true;
      output.err(`rolebox: ${event.error.message} [store_failed]`);
      output.err(
        '» a round already running keeps running; `rolebox resume` picks it up once the store can be written',
      );
      finish(STORE_FAILED_EXIT_CODE);
    });
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigterm);
    if (loopIds.size === 0) finish(0, true);
  });
}

/**
 * `rolebox loop "|loop:3| task" --worker "cmd"`: runs a loop with the command dispatcher
 * and the SQLite store, printing its notes (each once it is stored). Returns the exit code.
 */
export async function runLoopCommand(
  text: string,
  options: RunOptions & { worker: string; session?: string },
  output: Output,
): Promise<number> {
  const command = parseLoopCommand(text);
  if (command.clamped)
    output.err(`» ${command.requested} rounds asked for; loops run at most ${command.iterations}`);
  const { rb, close } = await cliRolebox(options, options.worker, output);
  const total = command.iterations;
  // Listening before the loop starts, so its start note is printed too.
  const follower = followRolebox(rb, output, () => total);
  try {
    await rb.start();
    const session = await rb.openSession(options.session ? { id: options.session } : {});
    session.setSlot(WORKER_SLOT, options.worker);
    session.setSlot(LIMITS_SLOT, {
      ...(options.delay === undefined ? {} : { delay: options.delay }),
      ...(options.roundTimeout === undefined ? {} : { roundTimeout: options.roundTimeout }),
    });
    const started = session.startLoop(text);
    if (!started.ok)
      throw new RoleboxError('invalid_argument', `the loop was refused: ${started.reason}`);
    // The acknowledgement says the loop exists: only once it is stored.
    await rb.flush();
    await follower.printed();
    output.err(
      `» session ${session.id}, loop ${started.loopId}: ${command.iterations} round(s), ${command.mode} mode`,
    );
    crashPoint('ack');
    return await waitForLoops(rb, new Map([[started.loopId, session.id]]), output, follower);
  } finally {
    follower.stop();
    await close();
  }
}
