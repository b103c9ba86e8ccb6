// examples/writing-agent.ts killed with SIGKILL at the effect runner's named points
// (ROLEBOX_CRASH_AT, src/base/crash-point.ts), then run again on the same SQLite store: the
// flow finishes as it would have without the kill, and every model call is logged with its
// effect id. A kill before the handler ran or after its result was saved makes no model call
// twice; a kill while the handler runs may repeat that one effect's call (same key), no other.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { plainEffectIds } from './support/effect-ids.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS, track } from './support/processes.js';

vi.setConfig({ testTimeout: 2 * PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const root = join(import.meta.dirname, '..');
const dirs: string[] = [];
afterEach(async () => {
  await killTracked();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Every model call of the flow, once: the effect id and the agent. */
const ONCE = ['haiku:e1 main', 'haiku:e2 poet', 'haiku:e3 main', 'haiku:e4 poet', 'haiku:e5 main'];

/** Runs the example once (one node process, its own group); answers how it ended and stdout. */
async function runExample(env: NodeJS.ProcessEnv) {
  const child = track(
    spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=rolebox-source', 'examples/writing-agent.ts'],
      { cwd: root, env: { ...process.env, ...env }, detached: true },
    ),
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
  );
  return { code, signal, stdout, stderr };
}

describe('the writing-agent example resumed after a SIGKILL', () => {
  it.each([
    ['effect-saved:1', 'before the first handler ran'],
    ['effect-saved:4', "before the revision's worker ran"],
    ['effect-result-saved:2', "after the poet's first draft was saved, before it was applied"],
    ['effect-result-saved:5', "after the main agent's finish was saved, before it was applied"],
    ['effect-running:3', 'while the main agent ran after the revision'],
  ])(
    'killed at %s (%s): the flow finishes, each model call made once per effect',
    async (point) => {
      const dir = mkdtempSync(join(tmpdir(), 'rolebox-writing-crash-'));
      dirs.push(dir);
      const paths = {
        WRITING_AGENT_STORE: join(dir, 'state.db'),
        WRITING_AGENT_CALLS: join(dir, 'calls.log'),
      };
      const killed = await runExample({ ...paths, ROLEBOX_CRASH_AT: point });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect(killed.stdout).not.toContain('session done');

      const resumed = await runExample({ ...paths, WRITING_AGENT_RESUME: '1' });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(/session done\nfacts: haiku: Maple leaves let go\n$/);

      const made = existsSync(paths.WRITING_AGENT_CALLS)
        ? readFileSync(paths.WRITING_AGENT_CALLS, 'utf8').trim().split('\n')
        : [];
      // One incarnation across the kill: every key carries the nonce it was opened with.
      expect(new Set(made.map((call) => call.split(':')[1])).size, made.join('\n')).toBe(1);
      const calls = plainEffectIds(made);
      if (point.startsWith('effect-running')) {
        // The handler that was running when the process died is called again, with its key.
        expect([...new Set(calls)]).toEqual(ONCE);
        const repeated = calls.filter((call, index) => calls.indexOf(call) !== index);
        expect(repeated.length).toBeLessThanOrEqual(1);
        if (repeated.length === 1) expect(repeated).toEqual(['haiku:e3 main']);
      } else {
        expect(calls).toEqual(ONCE);
      }
    },
  );
});
