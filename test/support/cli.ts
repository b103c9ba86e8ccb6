import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { track } from './processes.js';

/** The `rolebox` command of this checkout. */
export const ROLEBOX_BIN = join(import.meta.dirname, '..', '..', 'bin', 'rolebox.js');

/** A running `rolebox` child process and what it has printed so far. */
export interface CliProcess {
  readonly process: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first line on stdout or stderr that matches; fails if the process ends first. */
  line(pattern: RegExp): Promise<string>;
  /** The exit code (or 128 + signal number when a signal ended it). */
  readonly exited: Promise<number>;
}

const SIGNAL_NUMBERS: Record<string, number> = { SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/**
 * Starts `node bin/rolebox.js ...args` in `cwd`: Node itself with the launcher, one
 * process, so a signal sent to it reaches rolebox. Its stdin holds `input` (default: nothing).
 */
export function startCli(
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; input?: string },
): CliProcess {
  const child = track(
    spawn(process.execPath, [ROLEBOX_BIN, ...args], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  // What it reads on stdin (nothing unless told), then the end of it.
  child.stdin.on('error', () => {}); // it may end before it read all of it
  child.stdin.end(options.input ?? '');
  let stdout = '';
  let stderr = '';
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.pattern.test(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  createInterface({ input: child.stdout }).on('line', onLine);
  createInterface({ input: child.stderr }).on('line', onLine);
  const exited = new Promise<number>((resolve) =>
    child.on('close', (code, signal) => resolve(code ?? 128 + (SIGNAL_NUMBERS[signal ?? ''] ?? 0))),
  );
  return {
    process: child,
    stdout: () => stdout,
    stderr: () => stderr,
    line: (pattern) => {
      const seen = lines.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return Promise.race([
        new Promise<string>((resolve) => waiters.push({ pattern, resolve })),
        exited.then((code) => {
          throw new Error(
            `rolebox ended (${code}) before a line matched ${pattern}\nstdout: ${stdout}\nstderr: ${stderr}`,
          );
        }),
      ]);
    },
    exited,
  };
}

/** Runs `rolebox ...args` to the end. */
export async function runCli(
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; input?: string },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = startCli(args, options);
  const code = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}
