// Approval deadlines survive a crash (issue 25 item 4) through real processes, the real
// clock and the SQLite store: a process is killed with SIGKILL at a named point
// (ROLEBOX_CRASH_AT) around a request's expiry, and a second one on the same file finds
// the request expired exactly once: an expiry applied but not saved fires again at start
// (it is not lost), and one saved is never sent again.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { killTracked, PROCESS_TEST_TIMEOUT_MS, track } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const root = join(import.meta.dirname, '..');
const child = join(import.meta.dirname, 'support', 'deadline-child.ts');

type Line = { type: string; [key: string]: unknown };

/** A deadline-child process run to its end: its JSON lines and how it ended. */
async function run(args: string[], env: Record<string, string> = {}) {
  const process_ = track(
    spawn(process.execPath, ['--import', 'tsx', '--conditions=rolebox-source', child, ...args], {
      cwd: root,
      env: { ...process.env, ROLEBOX_CRASH_AT: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const lines: Line[] = [];
  let stderr = '';
  process_.stderr?.on('data', (chunk) => (stderr += chunk));
  createInterface({ input: process_.stdout as NodeJS.ReadableStream }).on('line', (text) =>
    lines.push(JSON.parse(text) as Line),
  );
  const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve) => process_.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { lines, ...ended, stderr };
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
