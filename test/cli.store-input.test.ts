// One exit-code rule for a --store that is no store: every command that reads or opens the
// store refuses it as bad input (invalid_argument, exit 2) and names the file; exit 3
// (store_failed) is left to a save that fails while work runs. Real CLI processes.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { USAGE_EXIT_CODE } from '../src/cli/exit-codes.js';
import { runCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const NOT_A_STORE = 'this is a text file, not a SQLite database\n'.repeat(200);

let dir: string;
let store: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-store-input-'));
  store = join(dir, 'notes.txt');
  await writeFile(store, NOT_A_STORE);
});

afterEach(async () => {
  await killTracked();
  await rm(dir, { recursive: true, force: true });
});

const COMMANDS: readonly (readonly [name: string, args: readonly string[]])[] = [
  ['status', ['status']],
  ['show', ['show', 'some-session']],
  ['chart', ['chart', 'some-session']],
  ['inspect', ['inspect', '--port', '0']],
  ['resume', ['resume', '--worker', 'true']],
  ['loop', ['loop', '|loop:1| a task', '--worker', 'true']],
  ['mcp', ['mcp']],
];

describe('a --store that is no database', () => {
  for (const [name, args] of COMMANDS) {
    it(`rolebox ${name}: exit 2, invalid_argument naming the file, the file unchanged`, async () => {
      const result = await runCli([...args, '--store', store], { cwd: dir, input: '' });
      expect(result.stderr).toMatch(
        /--store "[^"]*notes\.txt" is not a rolebox store: .*\[invalid_argument\]/,
      );
      expect(result.stderr).not.toMatch(/store_failed/);
      expect(result.code).toBe(USAGE_EXIT_CODE);
      expect(await readFile(store, 'utf8')).toBe(NOT_A_STORE);
    });
  }
});
