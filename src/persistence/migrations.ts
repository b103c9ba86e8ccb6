import { RoleboxError } from '../errors.js';

/** Turns a stored record of schema version `from` into version `from + 1`. */
export type Migration = (record: Record<string, unknown>) => Record<string, unknown>;

/**
 * The migrations a rolebox applies to stored records older than its code, one per schema
 * version, run forward in order (1 → 2 → 3 …) when a record is loaded.
 */
export class MigrationRegistry {
  readonly #byVersion = new Map<number, Migration>();

  /** Registers the migration from schema version `from` to `from + 1`. Throws `invalid_argument` on a duplicate. */
  register(from: number, migration: Migration): this {
    if (!Number.isInteger(from) || from < 0 || typeof migration !== 'function') {
      throw new RoleboxError(
        'invalid_argument',
        `a migration needs a schema version (whole number) and a function, got ${from}`,
      );
    }
    if (this.#byVersion.has(from))
      throw new RoleboxError(
        'invalid_argument',
        `a migration from schema version ${from} is already registered`,
      );
    this.#byVersion.set(from, migration);
    return this;
  }

  /** Runs the migrations from the record's version up to `target`. Throws when one is missing. */
  migrate(record: { schemaVersion: number }, target: number): Record<string, unknown> {
    let current = record as unknown as Record<string, unknown>;
    for (let version = record.schemaVersion; version < target; version++) {
      const migration = this.#byVersion.get(version);
      if (!migration) throw new Error(`no migration is registered from schema version ${version}`);
      current = { ...migration(current), schemaVersion: version + 1 };
    }
    return current;
  }
}

/** A registry with no migrations (the default while every record is current). */
export const noMigrations = new MigrationRegistry();
