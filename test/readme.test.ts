import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';

import { killTracked, PROCESS_TEST_TIMEOUT_MS, track } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });
afterEach(killTracked);

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
      /from 'rolebox(\/[a-z]+)?'/.test(block.body) &&
      output?.lang === 'text'
      ? [{ code: block.body, output: output.body }]
      : [];
  });
}

/**
 * Task ids, effect ids' nonces and durations differ from run to run; everything else must
 * match exactly.
 */
function normalise(text: string): string {
  return text
    .replace(/\bt_[0-9a-z]{12}\b/g, 't_<id>')
    .replace(/:[0-9a-z]{12}:e(\d+)\b/g, ':<nonce>:e$1')
    .replace(/\b\d+\.\ds\b/g, '<n>s');
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
      await symlink(join(root, 'examples'), join(dir, 'examples'));
      const file = join(dir, 'example.ts');
      await writeFile(file, example.code);
      const { stdout } = await run(tsx, ['--conditions=rolebox-source', file], { cwd: dir });
      expect(normalise(stdout)).toBe(normalise(example.output));
    }, 20_000);
  });

  it('runs the persistence example a second time in the same folder, with the same output', async () => {
    const example = examples.find((candidate) =>
      candidate.code.includes("id: 'ticket-42', ifOpen"),
    );
    expect(example).toBeDefined();
    const { code, output } = example as (typeof examples)[number];
    const dir = join(root, 'test-output', 'readme-persistence-twice');
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const file = join(dir, 'example.ts');
    await writeFile(file, code);
    for (const attempt of [1, 2]) {
      const { stdout } = await run(tsx, ['--conditions=rolebox-source', file], { cwd: dir });
      expect(normalise(stdout), `run ${attempt}`).toBe(normalise(output));
    }
  }, 40_000);

  it("starts with a user's install, then a clone's set-up: npm install, npm start, npm test (what .ci/run runs)", async () => {
    const blocks = (await readmeBlocks()).filter((block) => block.lang === 'sh');
    const commands = (body: string | undefined) =>
      body
        ?.split('\n')
        .filter(Boolean)
        .map((line) => line.split('#')[0]?.trim());
    // Until rolebox is published: the clone packs it, the user's project installs the tarball
    // (what test/package.install.test.ts does).
    expect(commands(blocks[0]?.body)).toEqual([
      'cd rolebox && npm install && npm pack',
      'cd my-project && npm install ../rolebox/rolebox-0.1.0.tgz',
    ]);
    const version = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')).version;
    expect(blocks[0]?.body).toContain(`rolebox-${version}.tgz`);
    expect(commands(blocks[1]?.body)).toEqual(['npm install', 'npm start', 'npm test']);
    const ci = await readFile(join(root, '.ci', 'run'), 'utf8');
    expect(ci).toMatch(/^npm ci$/m);
    expect(ci).toMatch(/^npm test$/m);
  });

  it('shows the auto-approval policy exactly as examples/auto-approval.ts has it', async () => {
    const blocks = await readmeBlocks();
    const example = await readFile(join(root, 'examples', 'auto-approval.ts'), 'utf8');
    expect(blocks.some((block) => block.lang === 'ts' && block.body === example)).toBe(true);
  });

  it('shows the inspector screenshot it names', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const [, image] = /!\[[^\]]*\]\((docs\/[^)]+\.png)\)/.exec(readme) ?? [];
    expect(image).toBeDefined();
    expect((await readFile(join(root, image as string))).subarray(1, 4).toString()).toBe('PNG');
  });
});

describe('npm start', () => {
  it('runs the demo: prints the URL of an inspector page that shows the live machines', async () => {
    // Its own process group, so Ctrl-C reaches node behind npm.
    const child = track(
      spawn('npm', ['start', '--silent', '--', '--port', '0', '--round-seconds', '0'], {
        cwd: root,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    const exited = new Promise<number | string | null>((resolve) =>
      child.on('close', (code, signal) => resolve(code ?? signal)),
    );
    try {
      const lines = createInterface({ input: child.stdout });
      const url = await new Promise<string>((resolve, reject) => {
        lines.on('line', (line) => {
          if (line.startsWith('inspector: ')) resolve(line.slice('inspector: '.length));
        });
        exited.then((code) =>
          reject(new Error(`npm start ended (${code}) without printing a URL`)),
        );
      });
      // The page's URL carries the inspector's per-run token; the page connects with it.
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+$/);
      expect((await fetch(url)).status).toBe(200);
      // What a page is sent when it connects: the demo's machines, live.
      const { host, search } = new URL(url);
      // The demo opens its sessions after it printed the URL: on a loaded machine a page may
      // connect before them, so it reconnects (bounded) until they are there.
      const wanted = ['session:approval', 'session:writer', 'session:review'];
      let init: { actors: { name: string; chart?: unknown }[] } = { actors: [] };
      for (let attempt = 0; attempt < 100; attempt++) {
        const page = new WebSocket(`ws://${host}/ui${search}`);
        init = await new Promise((resolve) =>
          page.once('message', (data) => resolve(JSON.parse(String(data)))),
        );
        page.close();
        const live = new Set(init.actors.map((actor) => actor.name));
        if (wanted.every((name) => live.has(name))) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const names = init.actors.map((actor) => actor.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'session:approval',
          'fn:approval:awaiting-approval',
          'session:writer',
          'session:review',
        ]),
      );
      expect(names.some((name) => name.startsWith('loop:'))).toBe(true);
      expect(
        init.actors.find((actor) => actor.name === 'fn:approval:awaiting-approval')?.chart,
      ).toBeDefined();
    } finally {
      process.kill(-(child.pid as number), 'SIGINT');
    }
    // The demo exits 0 on Ctrl-C; npm, which got it too, may report the signal instead.
    expect([0, 'SIGINT']).toContain(await exited);
  });
});

describe('npm run example:signals', () => {
  it('prints the receipts of the approval scenario and a session that waits for the user', async () => {
    const { stdout } = await run('npm', ['run', 'example:signals', '--silent'], { cwd: root });
    expect(stdout).toContain(
      'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request awaiting-approval:r1',
    );
    expect(stdout).toContain(
      'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition, answered awaiting-approval:r1',
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

describe('the README stands on its own', () => {
  it('links only to files in the repository, and cites no design document outside it', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\((?!https?:|#)([^)\s]+)\)/g)].map((m) => m[1] as string);
    expect(links.length).toBeGreaterThan(0);
    expect(links.filter((link) => !existsSync(join(root, link)))).toEqual([]);
    expect(readme.match(/\b(?:SPEC|DESIGN)\b[^\n]*/g) ?? []).toEqual([]);
  });

  it('every `npm run <script>` it mentions exists', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const { scripts } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const mentioned = [...readme.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1] as string);
    expect(mentioned).toContain('example:signals');
    expect(mentioned.filter((name) => !name.endsWith(':') && !(name in scripts))).toEqual([]);
  });
});

describe("the README's inspect: { url } example", () => {
  it('shows its session in the page, though the script stops right after its work', async () => {
    const blocks = await readmeBlocks();
    const example = blocks.find(
      (block) =>
        block.lang === 'ts' && block.body.includes("inspect: { url: 'ws://127.0.0.1:7070' }"),
    );
    if (example === undefined) throw new Error('the README has no inspect: { url } example');
    const { startInspectorServer } = await import('../inspector/server.js');
    const server = await startInspectorServer({ port: 0 });
    try {
      const dir = join(root, 'test-output', 'readme-inspect');
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      const file = join(dir, 'example.ts');
      await writeFile(file, example.body.replace('ws://127.0.0.1:7070', server.wsUrl));
      const { stderr } = await run(tsx, ['--conditions=rolebox-source', file], { cwd: dir });
      expect(stderr).not.toContain('RoleboxWarning');
      const { host, search } = new URL(server.url);
      const page = new WebSocket(`ws://${host}/ui${search}`);
      const init = await new Promise<{ actors: { name: string }[] }>((resolve) =>
        page.once('message', (data) => resolve(JSON.parse(String(data)))),
      );
      page.close();
      expect(init.actors.map((actor) => actor.name)).toContain('session:watched');
    } finally {
      await server.stop();
    }
  });
});
