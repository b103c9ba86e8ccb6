import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { runCli, startCli } from './support/cli.js';
import { killTaskGroups, killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

// `rolebox loop` killed with SIGKILL at a named point (ROLEBOX_CRASH_AT), then
// `rolebox resume`: across both processes every round runs once, every note is printed once.

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-cli-crash-'));
});
afterEach(async () => {
  await killTracked();
  killTaskGroups(join(dir, '.rolebox', 'tasks'));
  await rm(dir, { recursive: true, force: true });
});

const WORKER =
  'cat > /dev/null; echo "round $ROLEBOX_ROUND" >> "$RUNS"; echo "answer $ROLEBOX_ROUND"';
const SIGKILLED = 137;

describe('rolebox loop killed at a named point, then resumed', () => {
  it.each([
    ['right after the acknowledgement', 'ack', 0],
    ['right after the start note', 'note:1', 0],
    ['right after the first round note, during the inter-round delay', 'note:2', 400],
    ['right after the second round note', 'note:3', 0],
    ['right after the last round note (and the closing note with it)', 'note:4', 0],
    ['right after a round started', 'round:2', 0],
    ['while the second worker is being started, before its task is claimed', 'before-key:2', 0],
    ['after the task is claimed, before the worker is spawned', 'before-spawn:2', 0],
    ['between spawning the worker and its pid', 'after-spawn:2', 0],
  ])('%s (%s)', async (_label, point, delay) => {
    const env = { RUNS: join(dir, 'runs.log') };
    const args = ['loop', '|loop:3| step', '--worker', WORKER, '--delay', String(delay)];
    const first = await runCli(args, { cwd: dir, env: { ...env, ROLEBOX_CRASH_AT: point } });
    expect(first.code, first.stderr).toBe(SIGKILLED);
    const second = await runCli(['resume'], { cwd: dir, env });
    expect([0], second.stderr).toContain(second.code);
    const notes = `${first.stdout}${second.stdout}`.split('\n').filter((line) => line !== '');
    // No line twice, every round once, one start and one end.
    expect(new Set(notes).size).toBe(notes.length);
    for (const round of [1, 2, 3])
      expect(
        notes.filter((line) => line.startsWith(`[loop-progress round ${round}/3 completed`)),
      ).toHaveLength(1);
    expect(notes.filter((line) => line.startsWith('[loop-progress loop started'))).toHaveLength(1);
    expect(notes.filter((line) => line === '[loop-progress loop complete]')).toHaveLength(1);
    // Each worker ran exactly once.
    const runs = readFileSync(join(dir, 'runs.log'), 'utf8').trim().split('\n');
    expect(runs.sort()).toEqual(['round 1', 'round 2', 'round 3']);
    // What the first process acknowledged is what it had stored.
    if (first.stderr.includes('» session '))
      expect(existsSync(join(dir, '.rolebox', 'state.db'))).toBe(true);
  });
});

describe('rolebox loop on a store that cannot be written', () => {
  it('stops at the first failed save, names the store and the cause, exits 3; resume finishes the loop later', async () => {
    const env = { RUNS: join(dir, 'runs.log'), GATES: dir };
    const worker =
      'cat > /dev/null; while [ ! -f "$GATES/gate-$ROLEBOX_ROUND" ]; do sleep 0.02; done; echo "round $ROLEBOX_ROUND" >> "$RUNS"; echo "answer $ROLEBOX_ROUND"';
    const loop = startCli(['loop', '|loop:3| step', '--worker', worker, '--delay', '0'], {
      cwd: dir,
      env,
    });
    await loop.line(/» round 1\/3 running/);
    // Another process holds the write lock: every save now fails (after SQLite's busy wait).
    const blocker = new Database(join(dir, '.rolebox', 'state.db'));
    blocker.exec('BEGIN EXCLUSIVE');
    await writeFile(join(dir, 'gate-1'), '');
    const code = await loop.exited;
    blocker.exec('ROLLBACK');
    blocker.close();
    expect(code).toBe(3);
    expect(loop.stderr()).toMatch(
      /rolebox: the snapshot store could not save session\(s\) s_\w+: snapshot store "\.rolebox\/state\.db": write failed: database is locked; .* \[store_failed\]/,
    );
    // The work stopped there: the note of the unsaved round was never printed, no round 2.
    expect(loop.stdout()).not.toContain('round 1/3 completed');
    expect(readFileSync(join(dir, 'runs.log'), 'utf8').trim().split('\n')).toEqual(['round 1']);
    // Once the store can be written, resume picks the finished round up and goes on.
    await writeFile(join(dir, 'gate-2'), '');
    await writeFile(join(dir, 'gate-3'), '');
    const resumed = await runCli(['resume'], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('[loop-progress round 1/3 completed');
    expect(resumed.stdout).toContain('[loop-progress loop complete]');
    expect(readFileSync(join(dir, 'runs.log'), 'utf8').trim().split('\n').sort()).toEqual([
      'round 1',
      'round 2',
      'round 3',
    ]);
  });
});

describe('rolebox resume with a record it must refuse', () => {
  it('goes on with the healthy sessions, says which record it refused and why, exits 1', async () => {
    const env = { RUNS: join(dir, 'runs.log') };
    const first = await runCli(
      ['loop', '|loop:2| step', '--worker', WORKER, '--delay', '0', '--session', 'healthy'],
      { cwd: dir, env: { ...env, ROLEBOX_CRASH_AT: 'ack' } },
    );
    expect(first.code).toBe(SIGKILLED);
    // A second record: a copy of the healthy one under another id, its loop still naming the
    // healthy session (restored as it was, both would claim one loop actor: the root would die).
    const store = new SqliteSnapshotStore(join(dir, '.rolebox', 'state.db'));
    const envelope = JSON.parse((await store.load('healthy')) as string);
    envelope.sessionId = 'broken';
    envelope.snapshot.context.sessionId = 'broken';
    // Edited by hand: without its checksum the record gets the full check (the clash).
    delete envelope.checksum;
    store.putRaw('broken', JSON.stringify(envelope));
    await store.close();
    const resumed = await runCli(['resume'], { cwd: dir, env });
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toMatch(
      /» could not restore broken: stored session "broken" cannot be restored: /,
    );
    expect(resumed.stdout).toContain('[loop-progress loop complete]');
    expect(readFileSync(join(dir, 'runs.log'), 'utf8').trim().split('\n').sort()).toEqual([
      'round 1',
      'round 2',
    ]);
  });
});
