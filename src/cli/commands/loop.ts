import type { SqliteSnapshotStore } from '../../adapters/sqlite-snapshot-store.js';
import { describeValue, isRoleboxError, RoleboxError } from '../../errors.js';
import { parseLoopCommand } from '../../loop/parse-loop-command.js';
import { isTerminalLoopPhase, type LoopState } from '../../loop/types.js';
import type { Dispatcher } from '../../ports/dispatcher.js';
import type { SnapshotStore } from '../../ports/snapshot-store.js';
import { createRolebox, type Rolebox } from '../../rolebox/rolebox.js';
import { crashPoint } from '../crash-points.js';
import {
  FAILURE_EXIT_CODE,
  OK_EXIT_CODE,
  SIGINT_EXIT_CODE,
  SIGTERM_EXIT_CODE,
  STORE_FAILED_EXIT_CODE,
} from '../exit-codes.js';
import { resolveInspect } from '../inspector-option.js';
import { LOOP_RUN_SLOT, loopRunSlotValue, readStoredLoops } from '../loop-runs.js';
import { LoopWorkerDispatcher } from '../loop-worker-dispatcher.js';
import { followLoops, type NoteEvent, type Output } from '../output.js';
import { type OwnSessionsStore, ownSessionsStore } from '../own-sessions-store.js';
import { type RoundShown, readRound, roundFromLoop } from '../round-output.js';
import { openStoreFile } from '../store-file.js';

/** Options shared by the commands that run loops. */
export interface RunOptions {
  readonly store: string;
  readonly tasks: string;
  readonly delay?: number;
  readonly roundTimeout?: number;
  readonly inspect?: string | boolean;
}

/** Exit code when the store cannot be written: the work stopped there (SPEC §6). */
export { STORE_FAILED_EXIT_CODE };

/** Exit codes: complete 0, error or interrupted 1, cancelled 130 (as after Ctrl-C). */
export function exitCodeFor(phases: readonly string[]): number {
  if (phases.some((phase) => phase === 'error' || phase === 'interrupted'))
    return FAILURE_EXIT_CODE;
  if (phases.some((phase) => phase === 'cancelled')) return SIGINT_EXIT_CODE;
  return OK_EXIT_CODE;
}

/**
 * Builds the rolebox a loop command runs with: the SQLite store (seen through `viewOf` when
 * given, e.g. {@link ownSessionsStore}), a dispatcher that runs each loop with its own
 * worker (the caller assigns them) and the limits from the options.
 */
export async function cliRolebox(
  options: RunOptions,
  output: Output,
  viewOf?: (store: SqliteSnapshotStore) => SnapshotStore,
) {
  const inspect = await resolveInspect(options.inspect, output);
  const sqlite = openStoreFile(options.store);
  const view = viewOf ? viewOf(sqlite) : sqlite;
  const dispatcher = new LoopWorkerDispatcher({
    stateDir: options.tasks,
    // The dispatcher's own named points (`before-key`, `before-spawn`, `after-spawn`).
    onDispatchPoint: crashPoint,
  });
  const rb: Rolebox = createRolebox({
    store: view,
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
    await sqlite.close();
    await inspect?.server?.stop();
  };
  return { rb, store: sqlite, dispatcher, close };
}

/** A command's view of its loops' progress, subscribed before anything can happen. */
export type LoopFollower = ReturnType<typeof followLoops>;

/**
 * Starts printing the loops' progress (durably: see {@link followLoops}), with what each
 * round produced when `dispatcher` (the one that runs the rounds) is given. Call it before
 * `rb.start()` or `startLoop`, so no note is missed.
 */
export function followRolebox(
  rb: Rolebox,
  output: Output,
  totals: (loopId: string) => number | undefined,
  options: { readonly json?: boolean; readonly dispatcher?: Dispatcher } = {},
): LoopFollower {
  const { dispatcher } = options;
  return followLoops(
    (handler) => rb.on('*', handler),
    totals,
    output,
    () => rb.flush(),
    {
      ...(options.json ? { json: true } : {}),
      ...(dispatcher ? { roundOf: (note: NoteEvent) => roundOfNote(rb, dispatcher, note) } : {}),
    },
  );
}

/**
 * What the round a note is about produced, from the loop's state while the note is fresh:
 * at once for a completed round (the loop's summary is its output); a failed round's
 * output is read from the dispatcher.
 */
function roundOfNote(
  rb: Rolebox,
  dispatcher: Dispatcher,
  note: NoteEvent,
): RoundShown | Promise<RoundShown> | undefined {
  if (note.round === undefined) return undefined;
  let loop: LoopState | undefined;
  try {
    loop = rb.session(note.sessionId).view().loop ?? undefined;
  } catch {
    return undefined; // the session is gone from here (taken over): its owner prints it
  }
  const record =
    loop?.id === note.loopId ? loop.rounds.find((round) => round.round === note.round) : undefined;
  if (!loop || !record) return undefined;
  const where = { session: note.sessionId, loop: note.loopId };
  return roundFromLoop(dispatcher, where, record, loop) ?? readRound(dispatcher, where, record);
}

/** The `--json` line that ends a loop's output: how it ended and the exit code. */
export function resultJson(rb: Rolebox, loopId: string, sessionId: string, exitCode: number) {
  let loop: LoopState | undefined;
  try {
    loop = rb.session(sessionId).view().loop ?? undefined;
  } catch {
    loop = undefined;
  }
  const state = loop?.id === loopId ? loop : undefined;
  return JSON.stringify({
    type: 'result',
    session: sessionId,
    loop: loopId,
    ...(state
      ? {
          phase: state.phase,
          rounds: state.rounds.length,
          total: state.total,
          ...(state.errorReason === undefined ? {} : { error: state.errorReason }),
          ...(state.lastSummary === undefined ? {} : { summary: state.lastSummary }),
        }
      : {}),
    exitCode,
  });
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
        finish(SIGINT_EXIT_CODE);
      }
    };
    // SIGTERM (a supervisor stopping us) leaves at once, like a second Ctrl-C.
    const onSigterm = () => finish(SIGTERM_EXIT_CODE);
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

/** The most bytes `rolebox loop -` reads from stdin. */
export const STDIN_TEXT_MAX_BYTES = 1024 * 1024;

/**
 * The loop command `rolebox loop -` reads from stdin, all of it (trailing white space
 * dropped). Throws: `invalid_argument` when stdin is a terminal (nothing was piped in), is
 * empty, or holds more than {@link STDIN_TEXT_MAX_BYTES}.
 */
export async function readLoopTextFromStdin(
  stdin: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin,
): Promise<string> {
  const example = 'e.g. echo "|loop:3| summarise the logs" | rolebox loop - --worker <command>';
  if (stdin.isTTY)
    throw new RoleboxError(
      'invalid_argument',
      `loop - reads the loop command from stdin, but stdin is a terminal; pipe it in, ${example}`,
    );
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    bytes += buffer.length;
    if (bytes > STDIN_TEXT_MAX_BYTES)
      throw new RoleboxError(
        'invalid_argument',
        `loop - read more than ${STDIN_TEXT_MAX_BYTES} bytes from stdin; a loop command is at most that`,
        { bytes },
      );
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8').trimEnd();
  if (text.trim() === '')
    throw new RoleboxError(
      'invalid_argument',
      `loop - found nothing on stdin; it expects the loop command there, ${example}`,
    );
  return text;
}

/**
 * `rolebox loop "|loop:3| task" --worker "cmd"` (or `-`: the text from stdin): runs a loop
 * with the command dispatcher and the SQLite store, printing its notes and what each round
 * produced (each once it is stored), or JSON lines with `json`. Returns the exit code.
 */
export async function runLoopCommand(
  argument: string,
  options: RunOptions & { worker: string; session?: string; json?: boolean },
  output: Output,
): Promise<number> {
  const text = argument === '-' ? await readLoopTextFromStdin() : argument;
  const command = parseLoopCommand(text);
  if (command.clamped)
    output.err(`» ${command.requested} rounds asked for; loops run at most ${command.iterations}`);
  // Only this loop's session is woken here: any other stored loop is `rolebox resume`'s,
  // which runs it with its own worker.
  let own!: OwnSessionsStore;
  const { rb, store, dispatcher, close } = await cliRolebox(options, output, (sqlite) => {
    own = ownSessionsStore(sqlite);
    return own;
  });
  const total = command.iterations;
  // Listening before the loop starts, so its start note is printed too.
  const follower = followRolebox(rb, output, () => total, {
    dispatcher,
    ...(options.json ? { json: true } : {}),
  });
  // The exit code once known: after SIGTERM, how to go on is said once all is saved.
  let left: number | undefined;
  try {
    dispatcher.check(options.worker);
    const unfinished = (await readStoredLoops(store)).loops.filter(
      (loop) => loop.loopId !== undefined,
    );
    const taken = unfinished.find((loop) => loop.sessionId === options.session);
    if (taken)
      throw new RoleboxError(
        'invalid_argument',
        `session ${describeValue(taken.sessionId)} already runs loop ${describeValue(taken.loopId)}, unfinished; \`rolebox resume\` goes on with it (or pass another --session)`,
        { sessionId: taken.sessionId, loopId: taken.loopId },
      );
    await rb.start();
    const session = await rb.openSession(options.session ? { id: options.session } : {});
    own.drive(session.id);
    const started = session.startLoop(text);
    if (!started.ok)
      throw new RoleboxError('invalid_argument', `the loop was refused: ${started.reason}`);
    // In the same tick as the loop starts, so the save that holds the loop holds its worker
    // (and the limits given, which `rolebox resume` keeps): rounds of this loop run this
    // worker, whichever process runs them.
    dispatcher.assign(started.loopId, options.worker);
    session.setSlot(
      LOOP_RUN_SLOT,
      loopRunSlotValue({
        loopId: started.loopId,
        worker: options.worker,
        ...(options.delay === undefined ? {} : { delay: options.delay }),
        ...(options.roundTimeout === undefined ? {} : { roundTimeout: options.roundTimeout }),
      }),
    );
    // The acknowledgement says the loop exists: only once it is stored.
    await rb.flush();
    await follower.printed();
    output.err(
      `» session ${session.id}, loop ${started.loopId}: ${command.iterations} round(s), ${command.mode} mode`,
    );
    if (unfinished.length > 0)
      output.err(
        unfinished.length === 1
          ? '» 1 other stored loop is unfinished; `rolebox resume` goes on with it'
          : `» ${unfinished.length} other stored loops are unfinished; \`rolebox resume\` goes on with them`,
      );
    crashPoint('ack');
    const code = await waitForLoops(rb, new Map([[started.loopId, session.id]]), output, follower);
    left = code;
    if (options.json) output.out(resultJson(rb, started.loopId, session.id, code));
    return code;
  } finally {
    follower.stop();
    await close();
    sayHowToGoOn(left, output);
  }
}

/**
 * After SIGTERM, once the store is closed (everything saved): says how to go on, as the
 * first Ctrl-C does. Not said when the close failed: main then reports `store_failed`.
 */
export function sayHowToGoOn(code: number | undefined, output: Output): void {
  if (code === SIGTERM_EXIT_CODE)
    output.err('» left on SIGTERM with everything saved; `rolebox resume` goes on');
}
