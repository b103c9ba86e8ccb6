// `rolebox show` lists a stored session's pending effects (issue 24 item 6): each with its
// id, type, status, attempts and last error, as text and as `--json`, read from the store
// without starting anything.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { readShownSession, runShowCommand, showJson } from '../src/cli/commands/show.js';
import type { Output } from '../src/cli/output.js';
import { createRolebox } from '../src/index.js';
import { runCli } from './support/cli.js';
import { plainEffectIds } from './support/effect-ids.js';
import {
  EFFECTS_STORE_RETRY_MS,
  EFFECTS_STORE_START,
  writeStoreWithEffects,
} from './support/effects-store.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-show-effects-'));
});

afterEach(async () => {
  await killTracked();
  await rm(dir, { recursive: true, force: true });
});

function captured(): Output & { lines(): string[] } {
  const lines: string[] = [];
  return { out: (line) => lines.push(...line.split('\n')), err: () => {}, lines: () => lines };
}

describe('rolebox show: pending effects', () => {
  it('lists each with its id, type, status, attempts and last error (first line)', async () => {
    const path = join(dir, 'state.db');
    await writeStoreWithEffects(path);

    const down = await readShownSession('down', { store: path, tasks: join(dir, 'tasks') });
    expect(plainEffectIds(down.pendingEffects)).toEqual([
      expect.objectContaining({
        id: 'down:e1',
        status: 'pending',
        attempts: 1,
        lastError: expect.stringContaining('model down'),
        nextAttemptAt: EFFECTS_STORE_START + EFFECTS_STORE_RETRY_MS,
      }),
    ]);
    const output = captured();
    expect(await runShowCommand('down', { store: path, tasks: join(dir, 'tasks') }, output)).toBe(
      0,
    );
    const lines = output.lines();
    const at = lines.indexOf('effects:   1 not settled');
    expect(at, lines.join('\n')).toBeGreaterThan(0);
    expect(lines.slice(at + 1)).toEqual([
      expect.stringMatching(/^ {2}ID\s+TYPE\s+STATUS\s+ATTEMPTS\s+LAST ERROR$/),
      expect.stringMatching(/^ {2}-+/),
      expect.stringMatching(
        /^ {2}down:[0-9a-z]{12}:e1\s+invoke_main_agent\s+pending \(next attempt at 1970-01-01T00:01:01\.000Z\)\s+1\s+model down …$/,
      ),
    ]);

    // The approved worker: no handler, so pending and never attempted; e1 was settled.
    const poet = await readShownSession('poet', { store: path, tasks: join(dir, 'tasks') });
    expect(plainEffectIds(showJson(poet).pendingEffects)).toEqual([
      { id: 'poet:e2', type: 'run_worker', status: 'pending', attempts: 0 },
    ]);
  });

  it('prints them with --json from the command line, and nothing of them for a session without', async () => {
    const path = join(dir, 'state.db');
    await writeStoreWithEffects(path);
    const shown = await runCli(['show', 'down', '--store', path, '--json'], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(plainEffectIds(JSON.parse(shown.stdout).pendingEffects)).toEqual([
      {
        id: 'down:e1',
        type: 'invoke_main_agent',
        status: 'pending',
        attempts: 1,
        lastError: expect.stringContaining('model down'),
        nextAttemptAt: EFFECTS_STORE_START + EFFECTS_STORE_RETRY_MS,
      },
    ]);
    // A session whose effects are all settled reads as before: no effects key, no section.
    const store = new SqliteSnapshotStore(path);
    const rb = createRolebox({ store });
    await rb.start();
    await rb.openSession({ id: 'quiet' });
    await rb.stop();
    await store.close();
    const quiet = await readShownSession('quiet', { store: path, tasks: join(dir, 'tasks') });
    expect(quiet.pendingEffects).toEqual([]);
    expect(showJson(quiet)).not.toHaveProperty('pendingEffects');
    const output = captured();
    await runShowCommand('quiet', { store: path, tasks: join(dir, 'tasks') }, output);
    expect(output.lines().some((line) => line.startsWith('effects:'))).toBe(false);
  });
});
