// A tool held for approval survives a crash (issue 25 item 3) through real processes and the
// SQLite store: process 1 opens the session, its agent calls deploy_tool, the host answers
// the request; process 1 is killed with SIGKILL (at a named crash point, ROLEBOX_CRASH_AT, or
// by the test) and process 2, on the same file, opens the session, whose agent effect runs
// again. An approved call runs exactly once in all; a rejected one never runs.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runJsonLinesChild } from './support/json-lines-child.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

/** A tool-approval-child process: its JSON lines, a wait for one, and how it ended. */
const run = (args: string[], env: Record<string, string> = {}) =>
  runJsonLinesChild('tool-approval-child.ts', args, env);

describe('a tool held for approval after SIGKILL: approved runs once, rejected never', () => {
  let dir: string;
  let db: string;
  let runs: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-tool-approval-crash-'));
    db = join(dir, 'state.db');
    runs = join(dir, 'runs.txt');
  });
  afterEach(async () => {
    await killTracked();
    await rm(dir, { recursive: true, force: true });
  });

  const runLines = () =>
    existsSync(runs) ? readFileSync(runs, 'utf8').trim().split('\n').filter(Boolean) : [];

  /** Process 2 on the same store: what it found, and where its agent's effect ended. */
  async function resume() {
    const second = run(['resume', db, runs]);
    const resumed = await second.waitFor('resumed');
    const reached = await second.waitFor('reached');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    return { resumed, reached };
  }

  it('killed between the approval and the execution (tool-approved): the next process runs the tool once', async () => {
    const first = run(['start', db, runs, 'approve'], { ROLEBOX_CRASH_AT: 'tool-approved' });
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(first.lines.map((line) => line.type)).toContain('requested');
    expect(runLines(), 'not run before the kill').toEqual([]);

    const { resumed, reached } = await resume();
    expect(resumed).toEqual({ type: 'resumed', request: 'answered' });
    expect(runLines()).toEqual(['deploy:r1 prod']);
    expect(reached).toEqual({
      type: 'reached',
      phase: 'done',
      request: 'answered',
      output: { output: 'deployed to prod' },
      pending: 0,
    });
  });

  it('rejected, then killed before the waiting call saw it: the next process refuses, the tool never runs', async () => {
    // Process 1 looks at its request once a minute: it is killed before it looks again.
    const first = run(['start', db, runs, 'reject', '60000']);
    expect(await first.waitFor('answered')).toEqual({ type: 'answered', status: 'rejected' });
    first.process.kill('SIGKILL');
    await first.exited;

    const { resumed, reached } = await resume();
    expect(resumed).toEqual({ type: 'resumed', request: 'rejected' });
    expect(reached).toMatchObject({
      type: 'reached',
      request: 'rejected',
      output: null,
      pending: 0,
    });
    expect(runLines()).toEqual([]);
  });

  it('killed after the tool ran, before its output was recorded (tool-ran): run again under the same key (at least once)', async () => {
    const first = run(['start', db, runs, 'approve'], { ROLEBOX_CRASH_AT: 'tool-ran' });
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(runLines()).toEqual(['deploy:r1 prod']);

    const { reached } = await resume();
    expect(runLines()).toEqual(['deploy:r1 prod', 'deploy:r1 prod']);
    expect(reached).toMatchObject({ output: { output: 'deployed to prod' }, pending: 0 });
  });
});
