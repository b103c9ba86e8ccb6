import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
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

describe('README', () => {
  it('the host example runs as written and prints what the README says', async () => {
    const blocks = await readmeBlocks();
    const exampleIndex = blocks.findIndex(
      (block) => block.lang === 'ts' && block.body.includes("from 'rolebox'"),
    );
    const example = blocks[exampleIndex];
    const output = blocks[exampleIndex + 1];
    expect(example).toBeDefined();
    expect(output?.lang).toBe('text');
    // About ten lines: the README promises a short example.
    expect(
      example?.body.split('\n').filter((line) => line.trim() !== '').length,
    ).toBeLessThanOrEqual(12);
    // Written inside the package so that `import … from 'rolebox'` resolves to this checkout.
    const dir = join(root, 'test-output');
    await mkdir(dir, { recursive: true });
    const file = join(dir, 'readme-example.ts');
    await writeFile(file, example?.body ?? '');
    const { stdout } = await run(tsx, ['--conditions=source', file], { cwd: root });
    expect(stdout).toBe(output?.body);
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
  it('prints the receipts of the approval scenario', async () => {
    const { stdout } = await run('npm', ['start', '--silent'], { cwd: root });
    expect(stdout).toContain(
      'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated)',
    );
    expect(stdout).toContain(
      'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition',
    );
    expect(stdout).toContain('"completed":["awaiting-approval"]');
    expect(stdout).toContain('artifact approval-data = {"approved":true}');
  });
});
