import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { track } from './processes.js';

const root = join(import.meta.dirname, '..', '..');

/** A JSON line a child process printed: its `type` and whatever else it carries. */
export type ChildLine = { type: string; [key: string]: unknown };

/** How a child process ended: its exit code, or the signal that killed it. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A child process that prints one JSON object per line, as the crash tests' children do. */
export interface JsonLinesChild {
  readonly process: ChildProcess;
  /** Every line printed so far, parsed. */
  readonly lines: ChildLine[];
  /**
   * The first line (already printed or still to come) of type `match`, or that `match`
   * accepts; fails, with the child's stderr, if the process ends first.
   */
  waitFor(match: string | ((line: ChildLine) => boolean)): Promise<ChildLine>;
  /** Settles when the process has ended. */
  readonly exited: Promise<ChildExit>;
  /** What the process wrote to stderr so far. */
  stderr(): string;
}

/**
 * Runs test script `script` (a path under test/support) with `args` in Node itself, with tsx
 * as a loader: one process, so SIGKILL kills the rolebox in it (the tsx command would run
 * Node as a child and survive its own death). `ROLEBOX_CRASH_AT` is cleared unless `env`
 * sets it. The process is tracked, so `killTracked` ends it with the test.
 */
export function runJsonLinesChild(
  script: string,
  args: readonly string[],
  env: Record<string, string> = {},
): JsonLinesChild {
  const child = track(
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--conditions=rolebox-source',
        join(root, 'test', 'support', script),
        ...args,
      ],
      {
        cwd: root,
        env: { ...process.env, ROLEBOX_CRASH_AT: '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ),
  );
  const lines: ChildLine[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const waiters: { accepts: (line: ChildLine) => boolean; resolve: (line: ChildLine) => void }[] =
    [];
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (text) => {
    const line = JSON.parse(text) as ChildLine;
    lines.push(line);
    for (const waiter of [...waiters])
      if (waiter.accepts(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
  });
  const exited = new Promise<ChildExit>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const waitFor = (match: string | ((line: ChildLine) => boolean)) => {
    const accepts = typeof match === 'string' ? (line: ChildLine) => line.type === match : match;
    const seen = lines.find(accepts);
    if (seen) return Promise.resolve(seen);
    const what = typeof match === 'string' ? match : 'the line waited for';
    return Promise.race([
      new Promise<ChildLine>((resolve) => waiters.push({ accepts, resolve })),
      exited.then(({ code, signal }) => {
        throw new Error(`process ended (${code ?? signal}) before ${what}; stderr: ${stderr}`);
      }),
    ]);
  };
  return { process: child, lines, waitFor, exited, stderr: () => stderr };
}
