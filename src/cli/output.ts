import { isRoleboxError } from '../errors.js';
import type { HostEvent } from '../rolebox/host-events.js';
import { crashPoint } from './crash-points.js';

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

/** `12.3s` / `4m 05s`: an elapsed time for a human. */
export function formatElapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  return `${minutes}m ${String(seconds).padStart(2, '0')}s`;
}

/**
 * Prints a loop's life: its notes on stdout and, on stderr, a progress line at each round
 * start (round n/N, elapsed) plus a heartbeat while a round runs long. Nothing is printed
 * ahead of the store (SPEC §6): each line waits until `saved` resolves for the state that
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
  heartbeatMs = 10_000,
): { stop(): void; printed(): Promise<void> } {
  const startedAt = Date.now();
  let current: { sessionId: string; loopId: string; round: number; at: number } | undefined;
  // Lines wait here until a save that began after they arrived has finished; the lines one
  // save made durable are written together (one write per stream), so a kill lands before
  // or after all of them, never between a round's note and the loop's closing note.
  type Line = { stream: 'out' | 'err'; text: string; point: string; sessionId: string };
  let pending: Line[] = [];
  /** The lines waiting for the save in progress. */
  let saving: Line[] = [];
  /** Lines of a session dropped before they were printed (another process owns it now). */
  const dropped = new WeakSet<Line>();
  let draining: Promise<void> | undefined;
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
      const batch = saving.filter((line) => !dropped.has(line));
      const out = batch.filter((line) => line.stream === 'out').map((line) => line.text);
      const err = batch.filter((line) => line.stream === 'err').map((line) => line.text);
      if (out.length > 0) output.out(out.join('\n'));
      if (err.length > 0) output.err(err.join('\n'));
      for (const line of batch) crashPoint(line.point);
    }
    saving = [];
    draining = undefined;
  };
  const durably = (line: Line) => {
    pending.push(line);
    draining ??= drain();
  };
  const unsubscribe = on((event) => {
    if (event.type === 'note')
      durably({ stream: 'out', text: event.text, point: 'note', sessionId: event.sessionId });
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
