import { isRoleboxError } from '../errors.js';
import type { HostEvent } from '../rolebox/host-events.js';
import { crashPoint } from './crash-points.js';
import { type RoundShown, roundJson, roundOutputLines } from './round-output.js';

/** Where the CLI writes: stdout for results and notes, stderr for progress and errors. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

/** The process's own streams. */
export const processOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/**
 * Makes a closed stdout (its reader went away: `rolebox loop … | head`) count as SIGTERM,
 * so the command stops as it does on SIGTERM (a loop is left with everything saved, a server
 * stops) instead of dying on a stack trace. Later writes to it are dropped.
 */
export function stopOnClosedStdout(): void {
  let closed = false;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (closed) return;
    if (error.code !== 'EPIPE') throw error;
    closed = true;
    process.kill(process.pid, 'SIGTERM');
  });
}

/**
 * `15 min`, `2 s`, `250 ms`: a configured duration, exactly (never rounded), in the largest
 * unit that divides it.
 */
export function formatMs(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1_000 && ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/** `12.3s` / `4m 05s`: an elapsed time for a human. */
export function formatElapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  return `${minutes}m ${String(seconds).padStart(2, '0')}s`;
}

/** A `note` host event. */
export type NoteEvent = Extract<HostEvent, { type: 'note' }>;

/** How {@link followLoops} prints. */
export interface FollowOptions {
  /** One JSON object per line on stdout instead of text (the shapes are in the README). */
  readonly json?: boolean;
  /**
   * What the round a note is about produced (see `note.round`), printed under the note.
   * Called when the note arrives, so it can read the loop's state as it is then. Known at
   * once, it is printed with the note; one still being read (a failed round's output, from
   * its file) is printed once it is read, after the lines saved with it: a note never waits
   * for a file, so a kill right after a round lands where it did without the output.
   */
  readonly roundOf?: (note: NoteEvent) => RoundShown | Promise<RoundShown | undefined> | undefined;
  /** How often a round that runs long is reported on stderr (default 10 s). */
  readonly heartbeatMs?: number;
}

/**
 * Prints a loop's life: its notes on stdout, each followed by what the round it reports
 * produced (see {@link FollowOptions.roundOf}), and, on stderr, a progress line at each
 * round start (round n/N, elapsed) plus a heartbeat while a round runs long. With `json`,
 * stdout gets one JSON object per note and per round instead. Nothing is printed ahead of
 * the store (SPEC §6): each line waits until `saved` resolves for the state that
 * produced it, so a kill never prints a note twice across a restart; lines keep their order.
 * A line whose state could not be saved is not printed (the failure is reported instead),
 * nor one whose session was dropped before it was printed: its save was refused because
 * another process owns the session now, and that process prints what it stores.
 * Returns: `stop` (ends the heartbeat, stops listening) and `printed` (resolves once every
 * line received so far is out).
 */
export function followLoops(
  on: (handler: (event: HostEvent) => void) => () => void,
  totals: (loopId: string) => number | undefined,
  output: Output,
  saved: () => Promise<void> = () => Promise.resolve(),
  options: FollowOptions = {},
): { stop(): void; printed(): Promise<void> } {
  const heartbeatMs = options.heartbeatMs ?? 10_000;
  const startedAt = Date.now();
  let current: { sessionId: string; loopId: string; round: number; at: number } | undefined;
  // Lines wait here until a save that began after they arrived has finished; the lines one
  // save made durable are written together (one write per stream), so a kill lands before
  // or after all of them, never between a round's note and the loop's closing note. The
  // output of a failed round may still be on its way (read from its file): it follows.
  type Line = {
    stream: 'out' | 'err';
    text: string | Promise<string | undefined>;
    point?: string;
    sessionId: string;
  };
  let pending: Line[] = [];
  /** The lines waiting for the save in progress. */
  let saving: Line[] = [];
  /** Lines of a session dropped before they were printed (another process owns it now). */
  const dropped = new WeakSet<Line>();
  let draining: Promise<void> | undefined;
  /** Writes lines together (one write per stream), but none of a dropped session. */
  const write = (lines: readonly { line: Line; text: string | undefined }[]) => {
    const batch = lines.filter(({ line, text }) => text !== undefined && !dropped.has(line));
    const out = batch.filter(({ line }) => line.stream === 'out').map(({ text }) => text);
    const err = batch.filter(({ line }) => line.stream === 'err').map(({ text }) => text);
    if (out.length > 0) output.out(out.join('\n'));
    if (err.length > 0) output.err(err.join('\n'));
    for (const { line } of batch) if (line.point) crashPoint(line.point);
  };
  const drain = async () => {
    // What one command causes arrives in one turn (a round's note and the closing note):
    // let it all arrive, so it is saved and printed together.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (pending.length > 0) {
      saving = pending;
      pending = [];
      try {
        await saved();
      } catch {
        continue; // not stored, so not printed; the failure is reported on its own
      }
      const ready = saving.filter((line) => typeof line.text === 'string');
      const reading = saving.filter((line) => typeof line.text !== 'string');
      write(ready.map((line) => ({ line, text: line.text as string })));
      const read = await Promise.all(reading.map((line) => line.text));
      write(reading.map((line, index) => ({ line, text: read[index] })));
    }
    saving = [];
    draining = undefined;
  };
  const durably = (line: Line) => {
    pending.push(line);
    draining ??= drain();
  };
  /** A note's line, then what its round produced: with it when known, else once read. */
  const onNote = (event: NoteEvent) => {
    const note = options.json
      ? JSON.stringify({
          type: 'note',
          session: event.sessionId,
          loop: event.loopId,
          ...(event.round === undefined ? {} : { round: event.round }),
          text: event.text,
        })
      : event.text;
    const round = options.roundOf?.(event);
    const { sessionId } = event;
    const lines = (shown: RoundShown) =>
      (options.json ? [JSON.stringify(roundJson(shown))] : roundOutputLines(shown)).join('\n');
    if (round === undefined || round instanceof Promise) {
      durably({ stream: 'out', text: note, point: 'note', sessionId });
      if (round)
        durably({
          stream: 'out',
          text: round.then((shown) => (shown ? lines(shown) : undefined)).catch(() => undefined),
          sessionId,
        });
      return;
    }
    durably({ stream: 'out', text: `${note}\n${lines(round)}`, point: 'note', sessionId });
  };
  const unsubscribe = on((event) => {
    if (event.type === 'note') onNote(event);
    if (event.type === 'round_started') {
      current = {
        sessionId: event.sessionId,
        loopId: event.loopId,
        round: event.round,
        at: Date.now(),
      };
      const text = `» round ${event.round}/${totals(event.loopId) ?? '?'} running (task ${event.taskId}) · elapsed ${formatElapsed(Date.now() - startedAt)}`;
      durably({ stream: 'err', text, point: 'round', sessionId: event.sessionId });
    }
    // Reported while the refused save is answered, so before the lines wait no longer.
    if (event.type === 'error' && isRoleboxError(event.error, 'session_owned_elsewhere')) {
      const { sessionId } = event;
      for (const line of [...saving, ...pending])
        if (line.sessionId === sessionId) dropped.add(line);
      if (sessionId !== undefined && current?.sessionId === sessionId) current = undefined;
    }
    if (event.type === 'loop_finished') current = undefined;
  });
  const timer = setInterval(() => {
    if (current) {
      output.err(
        `» round ${current.round}/${totals(current.loopId) ?? '?'} still running · ${formatElapsed(Date.now() - current.at)} this round · elapsed ${formatElapsed(Date.now() - startedAt)}`,
      );
    }
  }, heartbeatMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      unsubscribe();
    },
    printed: () => draining ?? Promise.resolve(),
  };
}

/** Resolves at the first Ctrl-C (SIGINT) or SIGTERM, so a long-running command can clean up. */
export function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}
