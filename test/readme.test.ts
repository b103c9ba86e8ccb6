import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

/** The fenced blocks of the README, in order, with their language tag. */
async function readmeBlocks(): Promise<{ lang: string; body: string }[]> {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  return [...readme.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((match) => ({
    lang: match[1] as string,
    body: match[2] as string,
  }));
}

/** Every `ts` block that imports rolebox and is followed by the `text` block of its output. */
async function runnableExamples() {
  const blocks = await readmeBlocks();
  return blocks.flatMap((block, index) => {
    const output = blocks[index + 1];
    return block.lang === 'ts' &&
      /from 'rolebox(\/testing)?'/.test(block.body) &&
      output?.lang === 'text'
      ? [{ code: block.body, output: output.body }]
      : [];
  });
}

/** Task ids and durations differ from run to run; everything else must match exactly. */
function normalise(text: string): string {
  return text.replace(/\bt_[0-9a-z]{12}\b/g, 't_<id>').replace(/\b\d+\.\ds\b/g, '<n>s');
}

describe('README', async () => {
  const examples = await runnableExamples();

  it('has runnable examples, the first about ten lines long', () => {
    expect(examples.length).toBeGreaterThanOrEqual(5);
    expect(
      examples[0]?.code.split('\n').filter((line) => line.trim() !== '').length,
    ).toBeLessThanOrEqual(12);
  });

  examples.forEach((example, index) => {
    it(`example ${index + 1} runs as written and prints what the README says`, async () => {
      // Written inside the package so that `import … from 'rolebox'` resolves to this checkout.
      const dir = join(root, 'test-output', `readme-${index + 1}`);
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      // Each example runs in a scratch folder of its own (its .rolebox state included), with
      // the repository's test/ folder reachable as in the README's paths.
      await symlink(join(root, 'test'), join(dir, 'test'));
      const file = join(dir, 'example.ts');
      await writeFile(file, example.code);
      const { stdout } = await run(tsx, ['--conditions=source', file], { cwd: dir });
      expect(normalise(stdout)).toBe(normalise(example.output));
    }, 20_000);
  });

  it('names npm test as the test command, which .ci/run runs', async () => {
    const blocks = await readmeBlocks();
    const setup = blocks.find((block) => block.lang === 'sh');
    expect(setup?.body).toContain('npm install && npm start');
    expect(setup?.body).toContain('npm test');
    const ci = await readFile(join(root, '.ci', 'run'), 'utf8');
    expect(ci).toMatch(/^npm ci$/m);
    expect(ci).toMatch(/^npm test$/m);
  });
});

describe('npm start', () => {
  it('prints the receipts of the approval scenario and a session that waits for the user', async () => {
    const { stdout } = await run('npm', ['start', '--silent'], { cwd: root });
    expect(stdout).toContain(
      'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated)',
    );
    expect(stdout).toContain(
      'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition',
    );
    expect(stdout).toContain('"completed":["awaiting-approval"]');
    expect(stdout).toContain('artifact approval-data = {"approved":true}');
    expect(stdout).toContain(
      'decision run_worker (needs approval) → waiting_user ({"kind":"approve_step","decisionId":"d1"})',
    );
    expect(stdout).toContain('user_approved_next_step → running');
    expect(stdout).toContain(
      'worker_completed → waiting_user ({"kind":"review_artifact","artifactId":"art-1"',
    );
    expect(stdout).toContain('user_accepted_artifact → running');
    expect(stdout).toContain('facts: ["haiku: Leaves let go, unasked"]');
  });
});
