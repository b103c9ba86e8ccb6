import type { HostEvent } from '../host-events.js';

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
 * Prints a loop's life: its notes on stdout as they come, and on stderr a progress line at
 * each round start (round n/N, elapsed) plus a heartbeat while a round runs long. A round's
 * line is printed once `saved` resolves, so what it reports survives a crash.
 * Returns: a function that stops the heartbeat.
 */
export function followLoops(
  on: (handler: (event: HostEvent) => void) => () => void,
  totals: (loopId: string) => number | undefined,
  output: Output,
  saved: () => Promise<void> = () => Promise.resolve(),
  heartbeatMs = 10_000,
): () => void {
  const startedAt = Date.now();
  let current: { loopId: string; round: number; at: number } | undefined;
  const unsubscribe = on((event) => {
    if (event.type === 'note') output.out(event.text);
    if (event.type === 'round_started') {
      current = { loopId: event.loopId, round: event.round, at: Date.now() };
      const line = `» round ${event.round}/${totals(event.loopId) ?? '?'} running (task ${event.taskId}) · elapsed ${formatElapsed(Date.now() - startedAt)}`;
      saved().then(
        () => output.err(line),
        (error: Error) => output.err(`${line} (not saved: ${error.message})`),
      );
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
  return () => {
    clearInterval(timer);
    unsubscribe();
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
