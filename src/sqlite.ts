/**
 * `rolebox/sqlite`: the SQLite snapshot store. better-sqlite3 is an optional dependency,
 * loaded when the first store opens; without it the store says what to install.
 *
 * @module rolebox/sqlite
 */

export { DEFAULT_SQLITE_PATH, SqliteSnapshotStore } from './adapters/sqlite-snapshot-store.js';
