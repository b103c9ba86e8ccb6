// Effects survive a crash (issue 24 items 1-3) through real processes and the SQLite store:
// a process is killed with SIGKILL at a named point (ROLEBOX_CRASH_AT) and a second one,
// on the same file, opens the session. Every effect runs to completion, a recorded result
// is applied once and its handler not called again, and the flow reaches the state it
// would have reached without the crash.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { plainEffectIds } from './support/effect-ids.js';
import { runJsonLinesChild } from './support/json-lines-child.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

/** An effect-child process: its JSON lines, a wait for one, and how it ended. */
const run = (args: string[], env: Record<string, string> = {}) =>
  runJsonLinesChild('effect-child.ts', args, env);

const REACHED = {
  type: 'reached',
  where: 'review_artifact',
  pending: 0,
  artifacts: 1,
  workerEvents: ['worker_started', 'worker_completed'],
};

describe('effects after SIGKILL: run to completion, a recorded result applied once', () => {
  let dir: string;
  let db: string;
  let calls: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-effects-crash-'));
    db = join(dir, 'state.db');
    calls = join(dir, 'calls.txt');
  });
  afterEach(async () => {
    await killTracked();
    await rm(dir, { recursive: true, force: true });
  });

  const callLines = () => (existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : []);

  /** Process 1 dies at `point`; process 2 resumes; returns what process 2 reached. */
  async function killAtThenResume(point: string) {
    const first = run(['start', db, calls, 'worker'], { ROLEBOX_CRASH_AT: point });
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const callsBefore = callLines().filter((line) => line !== '');
    const second = run(['resume', db, calls, 'worker']);
    const reached = await second.waitFor('reached');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    return { callsBefore, reached, second };
  }

  it('killed after the emitting step was saved, before any handler ran: the next process runs it once', async () => {
    const { callsBefore, reached, second } = await killAtThenResume('effect-saved');
    expect(callsBefore).toEqual([]);
    const resumed = second.lines.find((line) => line.type === 'resumed') as unknown as {
      pending: string[];
    };
    expect(plainEffectIds(resumed)).toEqual({ type: 'resumed', pending: ['S:e2'] });
    // The id the first process stored is the one the handler ran under.
    const [id] = resumed.pending;
    expect(callLines()).toEqual([`${id} 1 ${id}`]);
    expect(reached).toEqual(REACHED);
  });

  it('killed while the handler runs: called again with the same idempotency key, applied once', async () => {
    const { callsBefore, reached } = await killAtThenResume('effect-running');
    expect(plainEffectIds(callsBefore)).toEqual(['S:e2 1 S:e2']);
    const again = callLines();
    expect(again).toHaveLength(2);
    const key = callsBefore[0]?.split(' ')[2];
    expect(again.every((line) => line.endsWith(` ${key}`))).toBe(true);
    expect(reached).toEqual(REACHED);
  });

  it('killed after the result was recorded, before it was applied: applied on restart, the handler not called again', async () => {
    const { callsBefore, reached } = await killAtThenResume('effect-result-saved');
    expect(plainEffectIds(callsBefore)).toEqual(['S:e2 1 S:e2']);
    expect(callLines(), 'the handler ran once in all').toEqual(callsBefore);
    expect(reached).toEqual(REACHED);
  });

  it('the probe: no handler in process 1 (killed after the approval); process 2 runs that effect once', async () => {
    const first = run(['start', db, calls, 'none']);
    const approved = await first.waitFor('approved');
    expect(plainEffectIds(approved)).toEqual({ type: 'approved', effectIds: ['S:e2'] });
    const [id] = (approved as unknown as { effectIds: string[] }).effectIds;
    first.process.kill('SIGKILL');
    await first.exited;
    const second = run(['resume', db, calls, 'worker']);
    const reached = await second.waitFor('reached');
    expect(callLines()).toEqual([`${id} 1 ${id}`]);
    expect(reached).toEqual(REACHED);
  });
});
