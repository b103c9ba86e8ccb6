import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { createRolebox } from '../src/index.js';
import { runCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

let dir: string;
const cli = (...args: string[]) => runCli(args, { cwd: dir });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-chart-'));
});

afterEach(async () => {
  await killTracked();
  await rm(dir, { recursive: true, force: true });
});

/** A store in `dir` holding session `writer`, waiting for its intake. */
async function storeWithSession(): Promise<string> {
  const path = join(dir, 'state.db');
  const store = new SqliteSnapshotStore(path);
  const rb = createRolebox({ store });
  await rb.start();
  const session = await rb.openSession({ id: 'writer' });
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
    intakePrompt: 'What shall I write?',
  });
  await rb.stop();
  await store.close();
  return path;
}

describe('rolebox chart', () => {
  it('prints a machine as Mermaid text by default', async () => {
    const result = await cli('chart', 'function');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.startsWith('stateDiagram-v2\n')).toBe(true);
    expect(result.stdout).toContain('state "gated" as function_gated');
    expect(result.stdout).toContain('function_gated --> function_active : fn.resume');
    expect(result.stderr).toBe('');
  });

  it('writes a machine as SVG with --out, and says where on stderr', async () => {
    const result = await cli('chart', 'loop', '--format', 'svg', '--out', 'loop.svg');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('» svg chart of loop written to loop.svg');
    const svg = await readFile(join(dir, 'loop.svg'), 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('>awaiting_worker</text>');
  });

  it("draws a stored session's machine with its current state highlighted, in both formats", async () => {
    const store = await storeWithSession();
    const mermaid = await cli('chart', 'writer', '--store', store);
    expect(mermaid.code, mermaid.stderr).toBe(0);
    expect(mermaid.stdout).toContain(
      'class session,session_waiting_user,session_waiting_user_intake active',
    );
    const svg = await cli('chart', 'writer', '--store', store, '--format', 'svg');
    expect(svg.code, svg.stderr).toBe(0);
    expect(svg.stdout).toMatch(
      /<g class="state atomic active" data-state-id="session\.waiting_user\.intake"/,
    );
    const json = await cli('chart', 'writer', '--store', store, '--json');
    expect(JSON.parse(json.stdout)).toEqual({
      machine: 'session',
      session: 'writer',
      format: 'mermaid',
      active: ['session', 'session.waiting_user', 'session.waiting_user.intake'],
      text: mermaid.stdout,
    });
  });

  it('--json with --out names the file instead of printing the chart', async () => {
    const result = await cli('chart', 'session', '--format', 'svg', '--out', 's.svg', '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      machine: 'session',
      format: 'svg',
      active: [],
      out: 's.svg',
    });
    expect(existsSync(join(dir, 's.svg'))).toBe(true);
  });

  it.each([
    [
      'an unknown session',
      ['nobody'],
      /^rolebox: "nobody" is no machine \(machines: system, shard, session, function, loop\) and no session in ".*state\.db" \(rolebox status lists them\) \[unknown_session\]$/m,
    ],
    [
      'an unknown machine and no store',
      ['sesion', '--store', 'nowhere.db'],
      /^rolebox: "sesion" is no machine \(machines: system, shard, session, function, loop\), and there is no store at "nowhere.db" to find a session in \[invalid_argument\]$/m,
    ],
    [
      'an unknown format',
      ['function', '--format', 'png', '--out', 'f.png'],
      /^rolebox: --format must be mermaid or svg, got "png" \[invalid_argument\]$/m,
    ],
    [
      'an --out that cannot be written',
      ['function', '--out', 'no/such/dir/f.svg'],
      /^rolebox: --out "no\/such\/dir\/f.svg" cannot be written \(ENOENT\) \[invalid_argument\]$/m,
    ],
  ])('refuses %s: exit 2, nothing written', async (_name, args, message) => {
    const store = await storeWithSession();
    const result = await cli(
      'chart',
      ...args,
      ...(args.includes('--store') ? [] : ['--store', store]),
    );
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
    expect(existsSync(join(dir, 'f.png'))).toBe(false);
  });
});
