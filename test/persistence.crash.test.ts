import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ChildLine, runJsonLinesChild } from './support/json-lines-child.js';
import { killTaskGroups, killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

type Line = ChildLine;

/** A rolebox child process, and the JSON lines it has printed so far. */
const run = (args: string[], env: Record<string, string>) =>
  runJsonLinesChild('crash-child.ts', args, env);

/** Resolves once `path` exists, re-checking as the event loop turns. */
async function fileAppears(path: string): Promise<void> {
  for (let i = 0; i < 4_000 && !existsSync(path); i++)
    await new Promise((resolve) => setTimeout(resolve, 5));
  if (!existsSync(path)) throw new Error(`${path} never appeared`);
}

const note = (text: string) => (line: Line) =>
  line.type === 'note' && String(line.text).startsWith(text);
const roundStarted = (round: number) => (line: Line) =>
  line.type === 'round_started' && line.round === round;

describe('crash safety: SIGKILL mid-loop, restart, nothing lost or duplicated', () => {
  let dir: string;
  let gates: string;
  let env: Record<string, string>;
  let args: (mode: string, delayMs?: number) => string[];
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-crash-'));
    gates = join(dir, 'gates');
    await mkdir(gates);
    env = { GATES: gates };
    // A worker that waits for its gate file, logs that it ran, and answers.
    const worker =
      'while [ ! -f "$GATES/$ROLEBOX_ROUND" ]; do sleep 0.02; done; echo "round $ROLEBOX_ROUND" >> "$GATES/runs.log"; echo "answer $ROLEBOX_ROUND"';
    args = (mode, delayMs = 0) => [
      mode,
      join(dir, 'state.db'),
      join(dir, 'tasks'),
      worker,
      String(delayMs),
    ];
  });

  afterEach(async () => {
    children.splice(0);
    await killTracked();
    // Stop any worker still waiting for its gate.
    for (const round of [1, 2, 3]) await writeFile(join(gates, String(round)), '');
    killTaskGroups(join(dir, 'tasks'));
    await rm(dir, { recursive: true, force: true });
  });

  const open = (round: number) => writeFile(join(gates, String(round)), '');
  const runs = () =>
    existsSync(join(gates, 'runs.log'))
      ? readFileSync(join(gates, 'runs.log'), 'utf8').trim().split('\n')
      : [];

  /** The second process: restores, reconciles and finishes the loop as the gates open. */
  async function resumeAndFinish(before: Line[], delayMs = 0) {
    const second = run(args('resume', delayMs), env);
    children.push(second.process);
    expect(await second.waitFor((line) => line.type === 'started')).toMatchObject({
      // Nothing restored at start: the loop's wake-up activates its session.
      restored: [],
      wakeUps: 1,
      failed: 0,
    });
    for (const round of [1, 2, 3]) await open(round);
    const finished = await second.waitFor((line) => line.type === 'loop_finished');
    expect(finished).toEqual({ type: 'loop_finished', phase: 'complete' });
    expect(await second.exited).toEqual({ code: 0, signal: null });
    const notes = [...before, ...second.lines].flatMap((line) =>
      line.type === 'note' ? [String(line.text)] : [],
    );
    // Every round completed exactly once, across both processes; each worker ran once.
    for (const round of [1, 2, 3])
      expect(
        notes.filter((text) => text.startsWith(`[loop-progress round ${round}/3 completed`)),
      ).toHaveLength(1);
    expect(runs().sort()).toEqual(['round 1', 'round 2', 'round 3']);
    const closing = notes.at(-1) as string;
    expect(closing.split('\n')[0]).toBe('[loop-progress loop complete]');
    expect(closing.split('\n')[1]).toMatch(
      /^Rounds: r1:t_\w+\([\d.]+s,completed\), r2:t_\w+\([\d.]+s,completed\), r3:t_\w+\([\d.]+s,completed\)$/,
    );
    expect(notes.filter((text) => text.startsWith('[loop-progress loop started'))).toHaveLength(1);
  }

  it('killed while the worker is still running', async () => {
    const first = run(args('start'), env);
    children.push(first.process);
    await first.waitFor(roundStarted(1));
    first.process.kill('SIGKILL');
    await first.exited;
    expect(runs()).toEqual([]);
    await resumeAndFinish(first.lines);
  });

  it('killed after the worker finished, before the loop advanced', async () => {
    const first = run(args('start'), env);
    children.push(first.process);
    const started = await first.waitFor(roundStarted(1));
    first.process.kill('SIGKILL');
    await first.exited;
    // The worker finishes while no rolebox process is running.
    await open(1);
    await fileAppears(join(dir, 'tasks', String(started.taskId), 'exit'));
    expect(runs()).toEqual(['round 1']);
    await resumeAndFinish(first.lines);
  });

  it('killed during the inter-round delay', async () => {
    await open(1);
    const first = run(args('start', 1_500), env);
    children.push(first.process);
    await first.waitFor(note('[loop-progress round 1/3 completed'));
    first.process.kill('SIGKILL');
    await first.exited;
    expect(first.lines.some(roundStarted(2))).toBe(false);
    await resumeAndFinish(first.lines, 1_500);
  });
});
