// better-sqlite3 is an optional dependency: a failed native build must not fail the install of
// rolebox, and hosts that keep sessions in memory never load it. It is required here, on the
// first SQLite store, so a missing or broken one gets a message that says what to do.
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { RoleboxError } from '../errors.js';

/** The better-sqlite3 `Database` class. */
export type SqliteDatabaseClass = typeof BetterSqlite3;

const INSTALL_LINE = 'npm install better-sqlite3@12';

let loaded: SqliteDatabaseClass | undefined;

/**
 * Loads better-sqlite3 through `require` (replaceable for tests).
 * Throws: `missing_dependency` naming the package and the install line when it is not installed.
 */
export function requireBetterSqlite3(require: (id: string) => unknown): SqliteDatabaseClass {
  let module: unknown;
  try {
    module = require('better-sqlite3');
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new RoleboxError(
      'missing_dependency',
      `the SQLite store needs the package better-sqlite3, which is not installed: ${INSTALL_LINE}`,
      { package: 'better-sqlite3', install: INSTALL_LINE },
    );
  }
  return ((module as { default?: unknown }).default ?? module) as SqliteDatabaseClass;
}

/** better-sqlite3, loaded on first use (see {@link requireBetterSqlite3}). */
export function loadBetterSqlite3(): SqliteDatabaseClass {
  loaded ??= requireBetterSqlite3(createRequire(import.meta.url));
  return loaded;
}

/**
 * The error to raise when better-sqlite3 is installed but its native module cannot be loaded
 * (its build failed at install, or was made for another Node), or undefined for any other error.
 */
export function brokenNativeModule(error: unknown): RoleboxError | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  if (
    code !== 'ERR_DLOPEN_FAILED' &&
    !/bindings file|better_sqlite3\.node|NODE_MODULE_VERSION/.test(message)
  )
    return undefined;
  return new RoleboxError(
    'missing_dependency',
    `better-sqlite3 is installed but its native module cannot be loaded (${message.split('\n')[0]}): rebuild it with npm rebuild better-sqlite3`,
    { package: 'better-sqlite3', install: 'npm rebuild better-sqlite3' },
  );
}
