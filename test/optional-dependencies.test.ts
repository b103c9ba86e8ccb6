// Optional packages a feature needs: missing, it says which and how to install it; present but
// broken (a failed native build), it says how to rebuild; any other failure is not hidden.
import { describe, expect, it } from 'vitest';
import { brokenNativeModule, requireBetterSqlite3 } from '../src/adapters/better-sqlite3.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { errorOf } from './support/errors.js';

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
