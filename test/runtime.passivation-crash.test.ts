import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSessionIds, workerRuns } from './support/passivation-load.js';
import { killTaskGroups, killTracked, track } from './support/processes.js';

// The passivation load scenario (20 sessions, 3-round loops, 0.2 s shell workers, SQLite,
// maxLiveSessions 5, idleMs shorter than a round) in a child process SIGKILLed at random
// moments, then resumed from the store by a new process until every loop has ended: every
// loop completes and every round's worker runs exactly once, across all the processes.

const root = join(import.meta.dirname, '..');
const child = join(import.meta.dirname, 'support', 'passivation-load-child.ts');
const KILLS = 3;
// Starting Node with tsx alone can take seconds on a loaded machine; four processes.
const TEST_TIMEOUT_MS = 300_000;

type Line = { type: string; [key: string]: unknown };

/** A scenario process on `dir`, with the lines it has printed. */
function start(dir: string, idleMs: number) {
  // Node itself with tsx as a loader: one process, so that SIGKILL kills the rolebox.
  const process_ = track(
    spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=rolebox-source', child, dir, String(idleMs)],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  const lines: Line[] = [];
  let stderr = '';
  process_.stderr?.on('data', (chunk) => (stderr += chunk));
  const started = new Promise<void>((resolve) =>
    createInterface({ input: process_.stdout as NodeJS.ReadableStream }).on('line', (text) => {
      const line = JSON.parse(text) as Line;
      lines.push(line);
      if (line.type === 'started') resolve();
    }),
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    process_.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { process: process_, lines, started, exited, stderr: () => stderr };
}

/** How many worker runs are logged in `dir` so far. */
const runCount = (dir: string) =>
  [...workerRuns(dir).values()].reduce((sum, rounds) => sum + rounds.length, 0);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('passivation under SIGKILL: killed at random moments, resumed, every loop finishes once', () => {
  let dir: string;
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-passivation-crash-'));
  });

  afterEach(async () => {
    children.splice(0);
    await killTracked();
    killTaskGroups(join(dir, 'tasks'));
    await rm(dir, { recursive: true, force: true });
  });

  it.each([50, 150])(
    `idleMs %i: ${KILLS} SIGKILLs, then a resume; all 20 loops complete, each round's worker run once`,
    async (idleMs) => {
      const targets = Array.from({ length: KILLS }, () => 1 + Math.floor(Math.random() * 45)).sort(
        (a, b) => a - b,
      );
      const kills: {
        afterRuns: number;
        afterMs: number;
        killed: boolean;
        finishedBefore: number;
      }[] = [];
      const finished = new Set<string>();
      for (let kill = 0; kill < KILLS; kill++) {
        const run = start(dir, idleMs);
        children.push(run.process);
        await Promise.race([run.started, run.exited]);
        // A random moment in the scenario's progress: once a random number of the 60 worker
        // runs are logged, and a random while after (rounds in flight, loops between rounds).
        // At most 45 runs and 150 ms: with 15 or more rounds of 0.2 s still to start, the
        // work is not over before the kill. A kill at 56 runs and 300 ms once found every
        // loop finished (a fast run), which tests nothing.
        const afterRuns = targets[kill] as number;
        while (run.process.exitCode === null && runCount(dir) < afterRuns) await sleep(20);
        const afterMs = Math.floor(Math.random() * 150);
        await sleep(afterMs);
        run.process.kill('SIGKILL');
        const { signal, code } = await run.exited;
        for (const line of run.lines)
          if (line.type === 'loop_finished') finished.add(String(line.sessionId));
        kills.push({
          afterRuns,
          afterMs,
          killed: signal === 'SIGKILL',
          finishedBefore: finished.size,
        });
        // Killed, or it had already finished everything (the stderr says why if not).
        expect({ signal, code, stderr: signal ? '' : run.stderr() }).toMatchObject(
          signal ? { signal: 'SIGKILL' } : { code: 0 },
        );
      }
      const last = start(dir, idleMs);
      children.push(last.process);
      const { code } = await last.exited;
      expect({ code, stderr: last.stderr() }).toEqual({ code: 0, stderr: '' });
      const done = last.lines.find((line) => line.type === 'done') as
        | { ended: Record<string, string> }
        | undefined;
      const context = JSON.stringify({ kills });
      if (process.env.ROLEBOX_REPORT_KILLS) console.log(context);
      // The kills landed while there was work left.
      expect(
        kills.map((kill) => kill.killed),
        context,
      ).toEqual(kills.map(() => true));
      expect(done?.ended, context).toEqual(
        Object.fromEntries(loadSessionIds(20).map((id) => [id, 'complete'])),
      );
      const runs = workerRuns(dir);
      expect(runs.size, context).toBe(20);
      for (const rounds of runs.values()) expect(rounds, context).toEqual([1, 2, 3]);
    },
    TEST_TIMEOUT_MS,
  );
});
