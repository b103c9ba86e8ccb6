import { z } from 'zod';
import { FUNCTION_MACHINE_VERSION } from '../../machines/function.machine.js';
import { LOOP_MACHINE_VERSION } from '../../machines/loop.machine.js';
import { SESSION_MACHINE_VERSION } from '../../machines/session.machine.js';
import { SYSTEM_MACHINE_VERSION } from '../../machines/system.machine.js';
import { describeValue, RoleboxError } from '../errors.js';
import { migrateMachineSnapshot } from './machine-migrations.js';
import { type MigrationRegistry, noMigrations } from './migrations.js';
import { sealOf, sealRecord } from './record-checksum.js';
import { plainObjectSchema } from './snapshot-schemas.js';

/** The `format` of every rolebox snapshot record. */
export const SNAPSHOT_FORMAT = 'rolebox.snapshot';

/** The envelope's own schema version. Bump it (and register a migration) when the envelope or a snapshot shape changes. */
export const SNAPSHOT_SCHEMA_VERSION = 1;

/** The record id of the system actor's own state (`$` never appears in a session id). */
export const SYSTEM_RECORD_ID = '$system';

/**
 * True for a record that belongs to another part of rolebox sharing the store (ids that
 * start with `$`, such as the pipeline's `$pipeline:event:…`): restoring sessions skips it.
 */
export function isForeignRecordId(id: string): boolean {
  return id.startsWith('$') && id !== SYSTEM_RECORD_ID;
}

/** The versions of the machines a snapshot was taken with. */
export interface MachineVersions {
  readonly system: number;
  readonly session: number;
  readonly function: number;
  readonly loop: number;
}

/** The machine versions of this code. */
export const CURRENT_MACHINE_VERSIONS: MachineVersions = {
  system: SYSTEM_MACHINE_VERSION,
  session: SESSION_MACHINE_VERSION,
  function: FUNCTION_MACHINE_VERSION,
  loop: LOOP_MACHINE_VERSION,
};

/**
 * One persisted record: a session subtree (the session actor with its functions, loop and
 * artifact store), or, under {@link SYSTEM_RECORD_ID}, the system actor's loop registry.
 */
export interface SnapshotEnvelope {
  readonly format: typeof SNAPSHOT_FORMAT;
  readonly schemaVersion: number;
  readonly machineVersions: MachineVersions;
  /** Clock time of the save. */
  readonly savedAt: number;
  readonly sessionId: string;
  /** The XState persisted snapshot (plain JSON). */
  readonly snapshot: unknown;
}

const version = z.number().int().min(0);

/** The zod schema of {@link SnapshotEnvelope}. */
export const snapshotEnvelopeSchema = z.strictObject({
  format: z.literal(SNAPSHOT_FORMAT),
  schemaVersion: version,
  machineVersions: z.strictObject({
    system: version,
    session: version,
    function: version,
    loop: version,
  }),
  savedAt: z.number(),
  sessionId: z.string().min(1),
  snapshot: plainObjectSchema,
});

/** Wraps a persisted snapshot for storage. */
export function makeEnvelope(
  sessionId: string,
  snapshot: unknown,
  savedAt: number,
): SnapshotEnvelope {
  return {
    format: SNAPSHOT_FORMAT,
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    machineVersions: CURRENT_MACHINE_VERSIONS,
    savedAt,
    sessionId,
    snapshot,
  };
}

/**
 * The text a record is stored as: the envelope's JSON, sealed with a checksum of its bytes
 * (record-checksum.ts) so that a read can tell it is exactly what this code wrote.
 */
export function encodeEnvelope(envelope: SnapshotEnvelope): string {
  return sealRecord(JSON.stringify(envelope));
}

/** A stored record, read: its envelope, and whether its contents may be trusted. */
export interface ReadEnvelope {
  readonly envelope: SnapshotEnvelope;
  /**
   * True when the record's checksum matches its bytes and it was written at this code's
   * schema and machine versions (nothing migrated): the snapshot is exactly what this
   * code saved, and its deep structural check may be skipped. False for a record without
   * a checksum or from older versions: it gets the full check.
   */
  readonly trusted: boolean;
}

/**
 * Reads a stored record: parses the JSON, validates the envelope, runs the registered
 * migrations forward from its version, and refuses what this code cannot read.
 *
 * Returns: the current-version envelope.
 * Throws: `invalid_snapshot` (not JSON, a checksum that does not match, wrong shape, a
 * migration missing or failing, a record stored under another id) or `snapshot_too_new`
 * (written by newer code), each naming the record and why. Nothing is restored from a
 * record that throws.
 */
export function decodeEnvelope(
  recordId: string,
  text: string,
  migrations: MigrationRegistry = noMigrations,
): SnapshotEnvelope {
  return readEnvelope(recordId, text, migrations).envelope;
}

/** {@link decodeEnvelope}, and whether the record may be trusted ({@link ReadEnvelope}). */
export function readEnvelope(
  recordId: string,
  text: string,
  migrations: MigrationRegistry = noMigrations,
): ReadEnvelope {
  const fail = (why: string, details: Record<string, unknown> = {}): never => {
    throw new RoleboxError(
      'invalid_snapshot',
      `stored record ${describeValue(recordId)} cannot be restored: ${why}`,
      { recordId, ...details },
    );
  };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return fail(`it is not valid JSON (${(error as Error).message})`);
  }
  const version = (raw as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version === 'number' && version > SNAPSHOT_SCHEMA_VERSION) {
    throw new RoleboxError(
      'snapshot_too_new',
      `stored record ${describeValue(recordId)} has schema version ${version}, newer than this code's ${SNAPSHOT_SCHEMA_VERSION}; upgrade rolebox to read it`,
      { recordId, schemaVersion: version },
    );
  }
  // After the version: a newer rolebox's record is "too new", whatever its checksum.
  const sealed = stripChecksum(raw, sealOf(text)) ?? fail(CHECKSUM_BROKEN);
  let envelope = raw;
  if (typeof version === 'number' && version < SNAPSHOT_SCHEMA_VERSION) {
    try {
      envelope = migrations.migrate(raw as { schemaVersion: number }, SNAPSHOT_SCHEMA_VERSION);
    } catch (error) {
      return fail(
        `migrating it from schema version ${version} failed: ${(error as Error).message}`,
      );
    }
  }
  let checked: SnapshotEnvelope;
  if (isCurrentEnvelope(envelope)) checked = envelope;
  else {
    const parsed = snapshotEnvelopeSchema.safeParse(envelope);
    if (!parsed.success) {
      const issue = parsed.error.issues[0] as z.core.$ZodIssue;
      return fail(`${issue.path.map(String).join('.') || 'the record'}: ${issue.message}`);
    }
    checked = parsed.data as SnapshotEnvelope;
  }
  let snapshot = checked.snapshot as Record<string, unknown>;
  // A migrated record is not what this code wrote: it gets the full check.
  let trusted = sealed && version === SNAPSHOT_SCHEMA_VERSION;
  for (const machine of MACHINE_NAMES) {
    const stored = checked.machineVersions[machine];
    const current = CURRENT_MACHINE_VERSIONS[machine];
    if (stored > current) {
      throw new RoleboxError(
        'snapshot_too_new',
        `stored record ${describeValue(recordId)} was written by ${machine} machine version ${stored}, newer than this code's ${current}`,
        { recordId, machine, stored, current },
      );
    }
    if (stored !== current) trusted = false;
    // Older machines: rolebox's own migrations bring the snapshot up, one version at a time.
    snapshot =
      migrateMachineSnapshot(machine, snapshot, stored, current) ??
      fail(
        `its ${machine} machine version ${stored} is older than ${current} and no migration brought it up`,
      );
  }
  if (checked.sessionId !== recordId) fail(`it holds session ${describeValue(checked.sessionId)}`);
  return {
    envelope: { ...checked, machineVersions: CURRENT_MACHINE_VERSIONS, snapshot },
    trusted,
  };
}

/** The machines an envelope names a version of. */
const MACHINE_NAMES = Object.keys(CURRENT_MACHINE_VERSIONS) as (keyof MachineVersions)[];

/** The keys of an envelope, in the order {@link makeEnvelope} writes them. */
const ENVELOPE_KEYS = [
  'format',
  'schemaVersion',
  'machineVersions',
  'savedAt',
  'sessionId',
  'snapshot',
] as const;

/**
 * Whether `value` is an envelope as this code writes it, at this code's versions: what
 * {@link snapshotEnvelopeSchema} accepts, narrowed to the one shape every record this code
 * saved has. It answers only yes or "ask the schema": a record it does not recognise is
 * checked by the schema, which names what is wrong. Why not the schema every time: zod
 * takes 10–50 µs a record until V8 has optimised it (the first thousand activations of a
 * process; 1.4–3.6 µs after), this a fraction of a microsecond (issue 26).
 */
function isCurrentEnvelope(value: unknown): value is SnapshotEnvelope {
  if (!isObject(value) || !hasExactlyOwnKeys(value, ENVELOPE_KEYS)) return false;
  const { format, schemaVersion, machineVersions, savedAt, sessionId, snapshot } = value;
  return (
    format === SNAPSHOT_FORMAT &&
    schemaVersion === SNAPSHOT_SCHEMA_VERSION &&
    typeof savedAt === 'number' &&
    Number.isFinite(savedAt) &&
    typeof sessionId === 'string' &&
    sessionId.length > 0 &&
    isObject(snapshot) &&
    isObject(machineVersions) &&
    hasExactlyOwnKeys(machineVersions, MACHINE_NAMES) &&
    MACHINE_NAMES.every((name) => machineVersions[name] === CURRENT_MACHINE_VERSIONS[name])
  );
}

/** An object that is not an array (and not null). */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether `value`'s own keys are exactly `names` (a parsed `__proto__` key is an own key,
 * and one too many).
 */
function hasExactlyOwnKeys(value: object, names: readonly string[]): boolean {
  return (
    Object.keys(value).length === names.length && names.every((name) => Object.hasOwn(value, name))
  );
}

/** Why a record whose checksum does not match is refused. */
const CHECKSUM_BROKEN =
  'its checksum does not match its bytes (it was changed after rolebox wrote it; remove its "checksum" field to have it checked in full instead)';

/**
 * Takes the `checksum` field off a parsed record (the envelope has none). Returns whether
 * the record was sealed, or undefined when its checksum does not match: a broken seal, or
 * a checksum field that is not where rolebox writes it.
 */
function stripChecksum(raw: unknown, seal: ReturnType<typeof sealOf>): boolean | undefined {
  if (seal === 'broken') return undefined;
  if (typeof raw !== 'object' || raw === null || !Object.hasOwn(raw, 'checksum'))
    return seal === 'sealed' ? undefined : false;
  if (seal !== 'sealed') return undefined;
  delete (raw as { checksum?: unknown }).checksum;
  return true;
}
