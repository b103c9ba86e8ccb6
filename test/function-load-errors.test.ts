import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadFunctions } from '../src/node.js';
import { rejectionOf } from './support/errors.js';

// A file that cannot be read (permissions, removed after the listing): this process may
// run as root, which reads any file, so the read fails here by a stand-in for readFile.
vi.mock('node:fs/promises', async (original) => {
  const actual = await original<typeof import('node:fs/promises')>();
  return {
    ...actual,
    readFile: (async (path: unknown, ...rest: unknown[]) => {
      if (String(path).endsWith('unreadable.md'))
        throw Object.assign(new Error(`EACCES: permission denied, open '${String(path)}'`), {
          code: 'EACCES',
        });
      return (actual.readFile as (...args: unknown[]) => Promise<unknown>)(path, ...rest);
    }) as typeof actual.readFile,
  };
});

describe('loadFunctions with a file it cannot read', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-fns-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reports it with the other problems, as a RoleboxError', async () => {
    await writeFile(join(dir, 'a-unreadable.md'), '---\nname: a\n---\n');
    await writeFile(join(dir, 'b.md'), '---\nname: b\ngate: nope()\n---\n');
    const error = await rejectionOf(loadFunctions(dir, { onWarning: () => {} }));
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message.split('\n').slice(0, 3)).toEqual([
      `invalid function definitions in ${dir} (2 problems):`,
      `  a-unreadable.md: (file): cannot be read: EACCES: permission denied, open '${join(dir, 'a-unreadable.md')}'`,
      expect.stringMatching(/^ {2}b\.md: function b: gate: unknown condition "nope"/),
    ]);
  });
});
