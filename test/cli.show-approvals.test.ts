// `rolebox show` prints a stored session's approval requests (issue 25 item 5): open ones
// first, each with what it asked, when, how it ended, who resolved it with which note and the
// version the answer saw, as text and as `--json`, read from the store without starting anything.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { approvalLines } from '../src/cli/approval-output.js';
import { readShownSession, runShowCommand, showJson } from '../src/cli/commands/show.js';
import type { Output } from '../src/cli/output.js';
import { APPROVALS_STORE_START, writeStoreWithApprovals } from './support/approvals-store.js';
import { runCli } from './support/cli.js';
import { writeStoreWithEffects } from './support/effects-store.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-show-approvals-'));
});

afterEach(async () => {
  await killTracked();
  await rm(dir, { recursive: true, force: true });
});

function captured(): Output & { lines(): string[] } {
  const lines: string[] = [];
  return { out: (line) => lines.push(...line.split('\n')), err: () => {}, lines: () => lines };
}

const at = (seconds: number) => new Date(APPROVALS_STORE_START + seconds * 1_000).toISOString();

describe('rolebox show: approvals', () => {
  it('prints the trail as a table, open requests first', async () => {
    const path = join(dir, 'state.db');
    await writeStoreWithApprovals(path);
    const output = captured();
    const options = { store: path, tasks: join(dir, 'tasks') };
    expect(await runShowCommand('release', options, output)).toBe(0);
    const lines = output.lines();
    const start = lines.indexOf('approvals: 2 open, 2 resolved');
    expect(start, lines.join('\n')).toBeGreaterThan(0);
    const rows = lines.slice(start + 1).map((line) => line.trim().split(/ {2,}/));
    expect(rows).toEqual([
      [
        'ID',
        'STATUS',
        'TYPE',
        'OPENED AT',
        'VERSION',
        'RESOLVED AT',
        'BY',
        'SEEN',
        'ASKED',
        'NOTE',
      ],
      [expect.stringMatching(/^-+$/), ...Array(9).fill(expect.stringMatching(/^-+$/))],
      [
        'deploy:r2',
        'open',
        'need_approval',
        at(3),
        '2',
        '-',
        '-',
        '-',
        'step 2: drop old tables',
        '-',
      ],
      [
        'review:r2',
        'open',
        'need_approval',
        at(3),
        '2',
        '-',
        '-',
        '-',
        'step 2: drop old tables',
        '-',
      ],
      [
        'deploy:r1',
        // session.approve / session.reject: the host ended both.
        'answered (host)',
        'need_approval',
        at(0),
        '1',
        at(1),
        'ana',
        '1',
        'step 1: migrate db',
        'backup checked',
      ],
      [
        'review:r1',
        'rejected (host)',
        'need_approval',
        at(0),
        '1',
        at(2),
        'bo',
        '-',
        'step 1: migrate db',
        'no rollback plan',
      ],
    ]);
    // The header still comes first.
    expect(lines[0]).toBe('session:   release');
  });

  it('--json has the same records; a session without requests has no approvals key', async () => {
    const path = join(dir, 'state.db');
    await writeStoreWithApprovals(path);
    const shown = await runCli(['show', 'release', '--store', path, '--json'], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    const json = JSON.parse(shown.stdout) as { approvals: Record<string, unknown>[] };
    expect(json.approvals.map((request) => `${request.id} ${request.status}`)).toEqual([
      'deploy:r2 open',
      'review:r2 open',
      'deploy:r1 answered',
      'review:r1 rejected',
    ]);
    expect(json.approvals[2]).toEqual({
      id: 'deploy:r1',
      function: 'deploy',
      type: 'need_approval',
      payload: { reason: 'step 1: migrate db' },
      openedAt: APPROVALS_STORE_START,
      version: 1,
      status: 'answered',
      answeredAt: APPROVALS_STORE_START + 1_000,
      answeredBy: 'ana',
      note: 'backup checked',
      seenVersion: 1,
      answeredByHost: true,
    });

    const other = join(dir, 'effects.db');
    await writeStoreWithEffects(other);
    const quiet = await readShownSession('down', { store: other, tasks: join(dir, 'tasks') });
    expect(quiet.approvals).toEqual([]);
    expect(showJson(quiet)).not.toHaveProperty('approvals');
    const text = captured();
    await runShowCommand('down', { store: other, tasks: join(dir, 'tasks') }, text);
    expect(text.lines().some((line) => line.startsWith('approvals:'))).toBe(false);
  });

  it('keeps each row on one line: a long or multi-line question or note is cut and marked', () => {
    const lines = approvalLines([
      {
        id: 'deploy:r1',
        function: 'deploy',
        type: 'blocked',
        payload: { reason: `${'x'.repeat(80)}` },
        openedAt: 0,
        version: 1,
        status: 'rejected',
        answeredAt: 1_000,
        note: 'first line\nsecond line',
      },
      {
        id: 'deploy:r2',
        function: 'deploy',
        type: 'need_clarification',
        payload: { which: 'db' },
        openedAt: 2_000,
        version: 2,
        status: 'open',
      },
    ]);
    expect(lines[1]).toBe('approvals: 1 open, 1 resolved');
    expect(lines).toHaveLength(6);
    // Resolved without answeredByHost (an agent's answer, or a record from before): bare.
    expect(lines[4]?.trim().split(/ {2,}/)[1]).toBe('rejected');
    const [first, second] = lines.slice(4).map((line) => line.trim().split(/ {2,}/));
    expect(first?.slice(-2)).toEqual([`${'x'.repeat(59)}…`, 'first line …']);
    expect(first?.[6]).toBe('-');
    expect(second?.slice(-2)).toEqual(['{"which":"db"}', '-']);
  });
});
