// Optional packages a feature needs: missing, it says which and how to install it; present but
// broken (a failed native build), it says how to rebuild; any other failure is not hidden.
import { describe, expect, it } from 'vitest';
import { brokenNativeModule, requireBetterSqlite3 } from '../src/adapters/better-sqlite3.js';
import { importOptional } from '../src/base/optional-import.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { errorOf, rejectionOf } from './support/errors.js';

function notFound(id: string): never {
  throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
}

describe('better-sqlite3 (an optional dependency)', () => {
  it('missing: missing_dependency naming the package and the install line', () => {
    const error = errorOf(() => requireBetterSqlite3(notFound));
    expect(error.code).toBe('missing_dependency');
    expect(error.message).toBe(
      'the SQLite store needs the package better-sqlite3, which is not installed: npm install better-sqlite3@12',
    );
    expect(error.details).toEqual({
      package: 'better-sqlite3',
      install: 'npm install better-sqlite3@12',
    });
  });

  it('another failure while loading it is thrown as it is', () => {
    const boom = new Error('boom');
    expect(() =>
      requireBetterSqlite3(() => {
        throw boom;
      }),
    ).toThrow(boom);
  });

  it('takes the module itself or its default export', () => {
    class Database {}
    expect(requireBetterSqlite3(() => Database)).toBe(Database);
    expect(requireBetterSqlite3(() => ({ default: Database }))).toBe(Database);
  });

  it('installed but its native module broken: missing_dependency saying to rebuild it', () => {
    const error = brokenNativeModule(
      new Error('Could not locate the bindings file. Tried:\n → /x/build/better_sqlite3.node'),
    );
    expect(error?.code).toBe('missing_dependency');
    expect(error?.message).toBe(
      'better-sqlite3 is installed but its native module cannot be loaded (Could not locate the bindings file. Tried:): rebuild it with npm rebuild better-sqlite3',
    );
    expect(
      brokenNativeModule(Object.assign(new Error('x'), { code: 'ERR_DLOPEN_FAILED' }))?.code,
    ).toBe('missing_dependency');
    expect(brokenNativeModule(new Error('SQLITE_CANTOPEN: unable to open'))).toBeUndefined();
  });

  it('present (as here): the store opens', async () => {
    const store = new SqliteSnapshotStore(':memory:');
    expect(store.path).toBe(':memory:');
    await store.close();
  });
});

describe('importOptional (a module that needs an optional package)', () => {
  const nodeMissing = (name: string) =>
    Object.assign(new Error(`Cannot find package '${name}' imported from /app/x.js`), {
      code: 'ERR_MODULE_NOT_FOUND',
    });

  it('the package missing: missing_dependency naming it, the feature and the install line', async () => {
    const error = await rejectionOf(
      importOptional(
        () => Promise.reject(nodeMissing('@restatedev/restate-sdk')),
        '@restatedev/restate-sdk',
        'npm install @restatedev/restate-sdk@~1.12.0',
        'rolebox restate',
      ),
    );
    expect(error.code).toBe('missing_dependency');
    expect(error.message).toBe(
      'rolebox restate needs the package @restatedev/restate-sdk, which is not installed: npm install @restatedev/restate-sdk@~1.12.0',
    );
  });

  it('another package missing, or another failure, is thrown as it is', async () => {
    const other = nodeMissing('left-pad');
    await expect(
      importOptional(() => Promise.reject(other), '@restatedev/restate-sdk', 'x', 'y'),
    ).rejects.toBe(other);
    const boom = new Error('boom');
    await expect(importOptional(() => Promise.reject(boom), 'a', 'x', 'y')).rejects.toBe(boom);
    await expect(importOptional(() => Promise.resolve(7), 'a', 'x', 'y')).resolves.toBe(7);
  });
});
