import { existsSync } from 'node:fs';
import { SqliteSnapshotStore } from '../adapters/sqlite-snapshot-store.js';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';

/**
 * Opens the SQLite store a command was given with `--store`. A file that cannot be opened
 * as a store (not a database, a folder, no permission) is the user's input, so it is
 * `invalid_argument` (exit 2) in every command; `store_failed` (exit 3) is kept for a save
 * that fails while work runs.
 * Throws: `invalid_argument` naming the path and why; `missing_dependency` when
 * better-sqlite3 is not installed.
 */
export function openStoreFile(path: string): SqliteSnapshotStore {
  try {
    return new SqliteSnapshotStore(path);
  } catch (error) {
    if (!isRoleboxError(error, 'store_failed')) throw error;
    throw new RoleboxError(
      'invalid_argument',
      `--store ${describeValue(path)} is not a rolebox store: ${error.message}`,
      { path },
    );
  }
}

/**
 * Opens the SQLite store of a command that reads or changes sessions already stored
 * (`status`, `show`, `send`): a path with no file is refused rather than created empty.
 * Throws: `invalid_argument` when there is no file at `path`; as {@link openStoreFile}.
 */
export function openExistingStoreFile(path: string): SqliteSnapshotStore {
  if (!existsSync(path))
    throw new RoleboxError('invalid_argument', `no store at ${describeValue(path)}`);
  return openStoreFile(path);
}
