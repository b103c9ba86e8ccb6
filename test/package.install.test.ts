// rolebox as a user gets it: `npm pack` (its prepack builds dist/), then `npm install` of the
// tarball into a fresh project, with the optional dependencies left out (no two-minute
// better-sqlite3 build). Then, from that project and without tsx: an ESM import of every
// subpath, the types of every subpath, `npx rolebox --help`, and the README's first example.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

// Packing builds dist/ (tsc) and the install reads the npm cache: minutes on a loaded machine.
vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: 5 * PROCESS_TEST_TIMEOUT_MS });

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..');
const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
  version: string;
  files: string[];
  exports: Record<string, unknown>;
};
const SUBPATHS = Object.keys(pkg.exports)
  .filter((subpath) => subpath !== './package.json')
  .map((subpath) => (subpath === '.' ? 'rolebox' : `rolebox/${subpath.slice(2)}`));

/** The first ```ts block of the README and the ```text block after it. */
async function firstReadmeExample(): Promise<{ code: string; output: string }> {
  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  const match = /```ts\n([\s\S]*?)```\s*\n[^`]*```text\n([\s\S]*?)```/.exec(readme);
  if (!match) throw new Error('the README has no ts example followed by its output');
  return { code: match[1] as string, output: match[2] as string };
}

describe('the package as installed from its tarball', () => {
  let dir: string;
  let project: string;
  let tarball: string;
  let files: string[];
  const inProject = (command: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
    run(command, args, {
      cwd: project,
      env: { ...process.env, ...env, npm_config_update_notifier: 'false' },
      maxBuffer: 64 * 1024 * 1024,
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-pack-'));
    // Packed from a copy, so this never rebuilds the checkout's own dist/ under a suite that
    // runs beside this one.
    const source = join(dir, 'source');
    await mkdir(source);
    for (const entry of [
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'README.md',
      'LICENSE',
      'src',
      'machines',
      'inspector',
      'bin',
    ])
      await cp(join(REPO, entry), join(source, entry), { recursive: true });
    await symlink(join(REPO, 'node_modules'), join(source, 'node_modules'));
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], {
      cwd: source,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [report] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    tarball = join(dir, report.filename);
    files = report.files.map((file) => file.path);

    project = join(dir, 'app');
    await mkdir(project);
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'app', private: true, type: 'module' }),
    );
    await inProject('npm', [
      'install',
      tarball,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--omit=optional',
    ]);
  });

  afterAll(async () => {
    await killTracked();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('ships the build, the bin, the inspector page and the docs, and no tests or benchmarks', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'bin/rolebox.js',
        'dist/src/index.js',
        'dist/src/index.d.ts',
        'dist/src/index.js.map',
        'dist/src/cli/main.js',
        'inspector/page/index.html',
      ]),
    );
    expect(files.filter((file) => /^(test|bench|docs|examples|src|machines)\//.test(file))).toEqual(
      [],
    );
    // Every subpath's target is in the tarball.
    for (const target of Object.values(pkg.exports))
      if (typeof target === 'object' && target !== null)
        for (const [condition, file] of Object.entries(target))
          if (condition !== 'rolebox-source')
            expect(files, `${condition}: ${file}`).toContain((file as string).slice(2));
  });

  it('installs without the optional better-sqlite3, and xstate comes as a peer', async () => {
    const installed = (name: string) =>
      existsSync(join(project, 'node_modules', name, 'package.json'));
    expect(installed('xstate')).toBe(true);
    expect(installed('@xstate/store')).toBe(true);
    expect(installed('better-sqlite3')).toBe(false);
  });

  it('every subpath imports as ESM from the installed package (an optional peer named when missing)', async () => {
    const script = `
      const results = {};
      for (const name of ${JSON.stringify(SUBPATHS)}) {
        try { results[name] = Object.keys(await import(name)).length; }
        catch (error) { results[name] = error.code + ': ' + error.message.split('\\n')[0]; }
      }
      console.log(JSON.stringify(results));
    `;
    const { stdout } = await inProject('node', ['--input-type=module', '-e', script]);
    const results = JSON.parse(stdout) as Record<string, number | string>;
    for (const name of SUBPATHS) {
      if (name === 'rolebox/restate')
        expect(results[name]).toMatch(
          /^ERR_MODULE_NOT_FOUND: Cannot find package '@restatedev\/restate-sdk'/,
        );
      else expect(results[name], name).toBeGreaterThan(0);
    }
  });

  it('the SQLite store without better-sqlite3 says what to install', async () => {
    const script = `
      const { SqliteSnapshotStore } = await import('rolebox/sqlite');
      try { new SqliteSnapshotStore(':memory:'); } catch (error) { console.log(error.code, error.message); }
    `;
    const { stdout } = await inProject('node', ['--input-type=module', '-e', script]);
    expect(stdout.trim()).toBe(
      'missing_dependency the SQLite store needs the package better-sqlite3, which is not installed: npm install better-sqlite3@12',
    );
  });

  it('the types of every subpath resolve for a TypeScript host (nodenext)', async () => {
    const imports = SUBPATHS.filter((name) => name !== 'rolebox/restate')
      .map((name, index) => `import * as m${index} from '${name}';\nvoid m${index};`)
      .join('\n');
    await writeFile(
      join(project, 'check.ts'),
      `${imports}\nimport { createRolebox, type SessionHandle } from 'rolebox';\nconst rb = createRolebox({});\nexport const open: Promise<SessionHandle> = rb.openSession();\n`,
    );
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    const tsc = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await inProject('node', [tsc, '-p', '.']).catch(
      (error: { stdout: string }) => error,
    );
    expect(result.stdout).toBe('');
  });

  it('npx rolebox --help runs the compiled CLI (no tsx), and a command whose package is missing says so', async () => {
    const help = await inProject('npx', ['--no-install', 'rolebox', '--help']);
    expect(help.stdout).toMatch(/^Usage: rolebox /);
    expect(help.stdout).toContain('loop');
    const version = await inProject('npx', ['--no-install', 'rolebox', '--version']);
    expect(version.stdout.trim()).toBe(pkg.version);
    const restate = await inProject('npx', ['--no-install', 'rolebox', 'restate', 'serve']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(restate).toMatchObject({ code: 1 });
    expect((restate as { stderr: string }).stderr.trim()).toBe(
      'rolebox: rolebox restate needs the package @restatedev/restate-sdk, which is not installed: npm install @restatedev/restate-sdk@~1.12.0 @restatedev/restate-server@~1.7.12 [missing_dependency]',
    );
  });

  it('rolebox mcp without @modelcontextprotocol/sdk says what to install', async () => {
    const mcp = await inProject('npx', ['--no-install', 'rolebox', 'mcp', '--no-store']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(mcp).toMatchObject({ code: 1 });
    expect((mcp as { stderr: string }).stderr.trim()).toBe(
      'rolebox: the MCP server needs @modelcontextprotocol/sdk, which is not installed: npm install @modelcontextprotocol/sdk@^1.23 [missing_dependency]',
    );
  });

  it("runs the README's first example as written (saved as example.mjs, run with node)", async () => {
    const { code, output } = await firstReadmeExample();
    await writeFile(join(project, 'example.mjs'), code);
    const { stdout } = await inProject('node', ['example.mjs']);
    expect(stdout).toBe(output);
  });
});
