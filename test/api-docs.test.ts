// The API reference in docs/api is TypeDoc's output for every entry point of package.json:
// it builds without a warning (a broken {@link} is one), and what is checked in is what the
// sources give now (`npm run docs:api` regenerates it).
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

// TypeDoc type-checks the whole program: a minute or more on a loaded machine.
vi.setConfig({ testTimeout: 3 * PROCESS_TEST_TIMEOUT_MS });

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..');

async function filesUnder(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      files.set(relative(dir, path), await readFile(path, 'utf8'));
    }
  return files;
}

describe('the API reference (docs/api)', () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('builds without warnings, covers every subpath, and equals what is checked in', async () => {
    out = await mkdtemp(join(tmpdir(), 'rolebox-api-'));
    const typedoc = join(REPO, 'node_modules', 'typedoc', 'bin', 'typedoc');
    const { stdout, stderr } = await run('node', [typedoc, '--out', out], {
      cwd: REPO,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(`${stdout}${stderr}`).not.toMatch(/warning|error/i);

    const { exports } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    const config = await readFile(join(REPO, 'typedoc.json'), 'utf8');
    for (const [subpath, target] of Object.entries(exports))
      if (typeof target === 'object' && target !== null)
        expect(config, subpath).toContain(
          (target as Record<string, string>)['rolebox-source']?.slice(2),
        );

    const generated = await filesUnder(out);
    const checkedIn = await filesUnder(join(REPO, 'docs', 'api'));
    expect([...checkedIn.keys()].sort(), 'run npm run docs:api').toEqual(
      [...generated.keys()].sort(),
    );
    for (const [file, text] of generated)
      expect(checkedIn.get(file), `${file} is stale: run npm run docs:api`).toBe(text);
  });
});
