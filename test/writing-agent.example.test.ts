// examples/writing-agent.ts, run as a user runs it (`npm run example:writing-agent`): the whole
// writing flow on the AI SDK's mock models, the agents carried out by agentEffects, the session
// in a SQLite store. Every model call is recorded with its effect id: one call per effect.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { plainEffectIds } from './support/effect-ids.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS, track } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const root = join(import.meta.dirname, '..');
const dirs: string[] = [];
afterEach(async () => {
  await killTracked();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs the example with its store and call log in a fresh folder; answers stdout and the log. */
async function runExample(): Promise<{ stdout: string; calls: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'rolebox-writing-agent-'));
  dirs.push(dir);
  const env = {
    ...process.env,
    WRITING_AGENT_STORE: join(dir, 'state.db'),
    WRITING_AGENT_CALLS: join(dir, 'calls.log'),
  };
  // Its own process group (detached), so that killTracked ends npm, tsx and node alike.
  const child = track(
    spawn('npm', ['run', 'example:writing-agent', '--silent'], { cwd: root, env, detached: true }),
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect(code, stderr).toBe(0);
  const calls = readFileSync(env.WRITING_AGENT_CALLS, 'utf8').trim().split('\n');
  return { stdout, calls };
}

describe('npm run example:writing-agent', () => {
  it('intake, decision, approval, worker, review, revision, worker, acceptance, finish', async () => {
    const { stdout, calls } = await runExample();
    expect(plainEffectIds(stdout)).toBe(
      [
        'user: A haiku about autumn leaves',
        'main → decide {"kind":"run_worker","workerId":"poet","requiresApproval":true,"instruction":"a haiku about autumn leaves"}',
        'user: approved haiku:e1',
        'poet → write_artifact {"content":"Autumn leaves drift down / unasked, the wind lets them go / the branch keeps its bark","summary":"a first draft"}',
        'poet wrote art-1: "Autumn leaves drift down / unasked, the wind lets them go / the branch keeps its bark"',
        'user: shorter, and about maple leaves',
        'user: Please revise it as I said.',
        'main → decide {"kind":"run_worker","workerId":"poet","instruction":"shorter, and about maple leaves"}',
        'poet → write_artifact {"content":"Maple leaves let go","summary":"shorter, maples"}',
        'poet wrote art-2: "Maple leaves let go"',
        'user: accepted art-2',
        'main → decide {"kind":"finish","summary":"The haiku is written."}',
        'session done',
        'facts: haiku: Maple leaves let go',
        '',
      ].join('\n'),
    );
    // One model call per effect, each effect's id once: three main-agent calls, two poet runs.
    expect(plainEffectIds(calls)).toEqual([
      'haiku:e1 main',
      'haiku:e2 poet',
      'haiku:e3 main',
      'haiku:e4 poet',
      'haiku:e5 main',
    ]);
  });
});
