// Approval deadlines survive a crash (issue 25 item 4) through real processes, the real
// clock and the SQLite store: a process is killed with SIGKILL at a named point
// (ROLEBOX_CRASH_AT) around a request's expiry, and a second one on the same file finds
// the request expired exactly once: an expiry applied but not saved fires again at start
// (it is not lost), and one saved is never sent again.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ChildLine, runJsonLinesChild } from './support/json-lines-child.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

type Line = ChildLine;

/** A deadline-child process run to its end: its JSON lines and how it ended. */
async function run(args: string[], env: Record<string, string> = {}) {
  const child = runJsonLinesChild('deadline-child.ts', args, env);
  const ended = await child.exited;
  return { lines: child.lines, ...ended, stderr: child.stderr() };
}

const types = (lines: readonly Line[]) => lines.map((line) => line.type);

describe('an approval deadline after SIGKILL: expired once, never lost', () => {
  let dir: string;
  let db: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-deadline-crash-'));
    db = join(dir, 'state.db');
  });
  afterEach(async () => {
    await killTracked();
    await rm(dir, { recursive: true, force: true });
  });

  it('without a crash: one expiry, then nothing on restart', async () => {
    const first = await run(['start', db]);
    expect(first.code, first.stderr).toBe(0);
    expect(types(first.lines)).toEqual(['asked', 'expired', 'state']);
    expect(first.lines.at(-1)).toEqual({
      type: 'state',
      statuses: ['deploy:r1 expired'],
      phase: 'gated',
    });
    const second = await run(['resume', db]);
    expect(types(second.lines), second.stderr).toEqual(['state']);
  });

  it('killed with the expiry applied but not saved: the next process expires it, once', async () => {
    const first = await run(['start', db], { ROLEBOX_CRASH_AT: 'request-expired' });
    expect(first.signal, first.stderr).toBe('SIGKILL');
    expect(types(first.lines)).toEqual(['asked']);
    const second = await run(['resume', db]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.lines).toEqual([
      { type: 'expired', requests: ['deploy:r1'] },
      { type: 'state', statuses: ['deploy:r1 expired'], phase: 'gated' },
    ]);
    const third = await run(['resume', db]);
    expect(types(third.lines), third.stderr).toEqual(['state']);
  });

  it('killed once the expiry is saved: the next process does not send it again', async () => {
    const first = await run(['start', db], { ROLEBOX_CRASH_AT: 'expiry-saved' });
    expect(first.signal, first.stderr).toBe('SIGKILL');
    expect(types(first.lines)).toEqual(['asked', 'expired']);
    const second = await run(['resume', db]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.lines).toEqual([
      { type: 'state', statuses: ['deploy:r1 expired'], phase: 'gated' },
    ]);
  });
});
