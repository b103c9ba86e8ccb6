import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemorySnapshotStore, MigrationRegistry, type SnapshotStore } from '../src/index.js';
import {
  CURRENT_MACHINE_VERSIONS,
  decodeEnvelope,
  encodeEnvelope,
  makeEnvelope,
  readEnvelope,
  SNAPSHOT_SCHEMA_VERSION,
  snapshotEnvelopeSchema,
} from '../src/persistence/envelope.js';
import { recordChecksum, sealOf, sealRecord } from '../src/persistence/record-checksum.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { errorOf } from './support/errors.js';

const snapshot = { status: 'active', value: 'idle', context: { sessionId: 'S' }, children: {} };

describe('snapshot envelopes', () => {
  it('round-trip through JSON', () => {
    const envelope = makeEnvelope('S', snapshot, 1_234);
    expect(envelope).toEqual({
      format: 'rolebox.snapshot',
      schemaVersion: SNAPSHOT_SCHEMA_VERSION,
      machineVersions: CURRENT_MACHINE_VERSIONS,
      savedAt: 1_234,
      sessionId: 'S',
      snapshot,
    });
    expect(decodeEnvelope('S', JSON.stringify(envelope))).toEqual(envelope);
  });

  it.each([
    ['{"format": "rolebox.snapshot", "schemaVer', 'it is not valid JSON'],
    ['42', 'the record'],
    [JSON.stringify({ ...makeEnvelope('S', snapshot, 1), format: 'other' }), 'format'],
    [JSON.stringify({ ...makeEnvelope('S', snapshot, 1), snapshot: 'x' }), 'snapshot'],
    [
      JSON.stringify({ ...makeEnvelope('S', snapshot, 1), machineVersions: { system: 1 } }),
      'machineVersions',
    ],
    [JSON.stringify(makeEnvelope('OTHER', snapshot, 1)), 'it holds session "OTHER"'],
  ])('refuses %s', (text, why) => {
    const error = errorOf(() => decodeEnvelope('S', text));
    expect(error.code).toBe('invalid_snapshot');
    expect(error.message).toContain('stored record "S" cannot be restored');
    expect(error.message).toContain(why);
  });

  it('refuses a record from newer code: a newer schema or a newer machine', () => {
    const newerSchema = errorOf(() =>
      decodeEnvelope(
        'S',
        JSON.stringify({
          ...makeEnvelope('S', snapshot, 1),
          schemaVersion: SNAPSHOT_SCHEMA_VERSION + 1,
        }),
      ),
    );
    expect(newerSchema.code).toBe('snapshot_too_new');
    expect(newerSchema.message).toContain(
      `schema version ${SNAPSHOT_SCHEMA_VERSION + 1}, newer than this code's ${SNAPSHOT_SCHEMA_VERSION}`,
    );
    const newerLoop = errorOf(() =>
      decodeEnvelope(
        'S',
        JSON.stringify({
          ...makeEnvelope('S', snapshot, 1),
          machineVersions: { ...CURRENT_MACHINE_VERSIONS, loop: 99 },
        }),
      ),
    );
    expect(newerLoop.code).toBe('snapshot_too_new');
    expect(newerLoop.message).toContain('loop machine version 99');
  });

  it('runs registered migrations forward, in order, and refuses a record no migration can bring up', () => {
    const ancient = {
      ...makeEnvelope('S', snapshot, 1),
      schemaVersion: SNAPSHOT_SCHEMA_VERSION - 1,
      legacy: true,
    };
    expect(errorOf(() => decodeEnvelope('S', JSON.stringify(ancient))).message).toContain(
      `no migration is registered from schema version ${SNAPSHOT_SCHEMA_VERSION - 1}`,
    );
    const calls: number[] = [];
    const migrations = new MigrationRegistry().register(SNAPSHOT_SCHEMA_VERSION - 1, (record) => {
      calls.push(record.schemaVersion as number);
      const { legacy: _legacy, ...rest } = record;
      return rest;
    });
    expect(decodeEnvelope('S', JSON.stringify(ancient), migrations)).toEqual(
      makeEnvelope('S', snapshot, 1),
    );
    expect(calls).toEqual([SNAPSHOT_SCHEMA_VERSION - 1]);
    const broken = new MigrationRegistry().register(SNAPSHOT_SCHEMA_VERSION - 1, () => {
      throw new Error('cannot read v0 loops');
    });
    expect(errorOf(() => decodeEnvelope('S', JSON.stringify(ancient), broken)).message).toContain(
      'cannot read v0 loops',
    );
    expect(
      errorOf(() => migrations.register(SNAPSHOT_SCHEMA_VERSION - 1, (record) => record)).code,
    ).toBe('invalid_argument');
  });
});

describe('reading an envelope without the schema (issue 26)', () => {
  // readEnvelope recognises the envelope this code writes by hand and asks the schema about
  // anything else: whatever it reads, the schema must accept too, and what it refuses is
  // refused with the schema's words.
  const valid = (): Record<string, unknown> =>
    JSON.parse(JSON.stringify(makeEnvelope('S', { status: 'active', value: 'idle' }, 1)));
  const values = fc.oneof(
    fc.constant(undefined),
    fc.constant(null),
    fc.constant(Number.NaN),
    fc.constant(Number.POSITIVE_INFINITY),
    fc.integer({ min: -2, max: 9 }),
    fc.double(),
    fc.string(),
    fc.constant(''),
    fc.constant('rolebox.snapshot'),
    fc.constant([]),
    fc.constant({}),
    fc.boolean(),
  );
  const paths = fc.constantFrom(
    ['format'],
    ['schemaVersion'],
    ['machineVersions'],
    ['machineVersions', 'system'],
    ['machineVersions', 'session'],
    ['machineVersions', 'function'],
    ['machineVersions', 'loop'],
    ['machineVersions', 'extra'],
    ['savedAt'],
    ['sessionId'],
    ['snapshot'],
    ['extra'],
    ['__proto__'],
  );
  const mutations = fc.array(fc.record({ path: paths, value: values, remove: fc.boolean() }), {
    minLength: 1,
    maxLength: 3,
  });

  it('reads what the schema accepts and refuses what it refuses, naming it', () => {
    fc.assert(
      fc.property(mutations, (changes) => {
        const envelope = valid();
        for (const { path, value, remove } of changes) {
          let holder = envelope;
          for (const key of path.slice(0, -1)) {
            const inner = holder[key];
            if (typeof inner !== 'object' || inner === null) return;
            holder = inner as Record<string, unknown>;
          }
          const last = path.at(-1) as string;
          if (remove) delete holder[last];
          else
            Object.defineProperty(holder, last, {
              // A copy: fast-check hands the same `{}` to every run, and a later change
              // inside it must not reach another path (or make a cycle).
              value: structuredClone(value),
              enumerable: true,
              writable: true,
              configurable: true,
            });
        }
        const text = JSON.stringify(envelope);
        const reparsed = JSON.parse(text) as Record<string, unknown>;
        const schemaAccepts = snapshotEnvelopeSchema.safeParse(reparsed).success;
        const version = reparsed.schemaVersion;
        let read: ReturnType<typeof readEnvelope> | undefined;
        let refused: { code: string; message: string } | undefined;
        try {
          read = readEnvelope('S', text);
        } catch (error) {
          refused = error as { code: string; message: string };
        }
        if (read) {
          expect(
            schemaAccepts || (typeof version === 'number' && version !== SNAPSHOT_SCHEMA_VERSION),
          ).toBe(true);
          expect(read.envelope.sessionId).toBe('S');
        } else if (typeof version === 'number' && version > SNAPSHOT_SCHEMA_VERSION)
          expect(refused?.code).toBe('snapshot_too_new');
        else {
          expect(['invalid_snapshot', 'snapshot_too_new']).toContain(refused?.code);
          if (!schemaAccepts && refused?.code === 'invalid_snapshot')
            expect(refused.message).toContain('stored record "S" cannot be restored');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('refuses an envelope with one key more, or one version off, as the schema does', () => {
    const extra = { ...valid(), note: 'x' };
    expect(errorOf(() => readEnvelope('S', JSON.stringify(extra))).message).toContain('note');
    const off = valid();
    (off.machineVersions as Record<string, unknown>).session = '6';
    expect(errorOf(() => readEnvelope('S', JSON.stringify(off))).message).toContain(
      'machineVersions.session',
    );
    // A migration can hand back what JSON cannot hold: a time that is not a number.
    const older = { ...valid(), schemaVersion: SNAPSHOT_SCHEMA_VERSION - 1 };
    const timeless = new MigrationRegistry().register(SNAPSHOT_SCHEMA_VERSION - 1, (record) => ({
      ...record,
      schemaVersion: SNAPSHOT_SCHEMA_VERSION,
      savedAt: Number.NaN,
    }));
    expect(errorOf(() => readEnvelope('S', JSON.stringify(older), timeless)).message).toContain(
      'savedAt',
    );
    const shaped = readEnvelope('S', encodeEnvelope(makeEnvelope('S', { status: 'active' }, 1)));
    expect(shaped.trusted).toBe(true);
    expect(shaped.envelope.machineVersions).toEqual(CURRENT_MACHINE_VERSIONS);
  });
});

describe('record checksums', () => {
  const sealed = encodeEnvelope(makeEnvelope('S', snapshot, 1_234));

  it('a record this code writes is sealed, read back as the same envelope and trusted', () => {
    expect(sealed.startsWith('{"checksum":"h64:')).toBe(true);
    expect(sealOf(sealed)).toBe('sealed');
    expect(readEnvelope('S', sealed)).toEqual({
      envelope: makeEnvelope('S', snapshot, 1_234),
      trusted: true,
    });
  });

  it('a record without a checksum reads the same and is not trusted (it gets the full check)', () => {
    const plain = JSON.stringify(makeEnvelope('S', snapshot, 1_234));
    expect(sealOf(plain)).toBe('unsealed');
    expect(readEnvelope('S', plain)).toEqual({
      envelope: makeEnvelope('S', snapshot, 1_234),
      trusted: false,
    });
  });

  it('differs for texts one code unit apart, and is the same for the same text', () => {
    const texts = ['', 'a', 'b', 'ab', 'ba', '{"v":1}', '{"v":2}', 'é', 'e\u0301'];
    const sums = texts.map(recordChecksum);
    expect(new Set(sums).size).toBe(texts.length);
    expect(sums.every((sum) => /^[0-9a-f]{16}$/.test(sum))).toBe(true);
    expect(recordChecksum('{"v":1}')).toBe(sums[5]);
  });

  it.each<[string, (text: string) => string]>([
    ['one byte of the snapshot changed', (text) => text.replace('"idle"', '"done"')],
    ['the time of the save changed', (text) => text.replace('1234', '1235')],
    [
      'the checksum itself changed',
      (text) => text.replace('"h64:', '"h64:0').replace(/(h64:[0-9a-f]{16})[0-9a-f]/, '$1'),
    ],
    [
      'the checksum moved to another place (the bytes it covered are gone)',
      (text) => {
        const { checksum, ...rest } = JSON.parse(text);
        return JSON.stringify({ ...rest, checksum });
      },
    ],
    ['a checksum of another algorithm', (text) => text.replace('"h64:', '"xyz:')],
  ])('refuses a sealed record whose bytes do not match: %s', (_label, change) => {
    const changed = change(sealed);
    expect(changed).not.toBe(sealed);
    const error = errorOf(() => readEnvelope('S', changed));
    expect(error.code).toBe('invalid_snapshot');
    expect(error.message).toContain('stored record "S" cannot be restored');
    expect(error.message).toContain('its checksum does not match its bytes');
  });

  it('a sealed record from a newer rolebox is too new, not corrupt', () => {
    const newer = encodeEnvelope({ ...makeEnvelope('S', snapshot, 1), schemaVersion: 99 });
    expect(errorOf(() => readEnvelope('S', newer)).code).toBe('snapshot_too_new');
  });

  it('a sealed record of an older schema is migrated and not trusted (the full check runs)', () => {
    const ancient = sealRecord(
      JSON.stringify({
        ...makeEnvelope('S', snapshot, 1),
        schemaVersion: SNAPSHOT_SCHEMA_VERSION - 1,
      }),
    );
    const migrations = new MigrationRegistry().register(
      SNAPSHOT_SCHEMA_VERSION - 1,
      (record) => record,
    );
    expect(readEnvelope('S', ancient, migrations)).toEqual({
      envelope: makeEnvelope('S', snapshot, 1),
      trusted: false,
    });
  });

  it('survives being stored as a JSON value and serialized again (how Restate keeps records)', () => {
    const again = JSON.stringify(JSON.parse(sealed));
    expect(again).toBe(sealed);
    expect(readEnvelope('S', again).trusted).toBe(true);
  });
});

describe.each([
  [
    'memory',
    async () => ({ store: new MemorySnapshotStore() as SnapshotStore, reopen: undefined }),
  ],
  [
    'sqlite',
    async (dir: string) => {
      const path = join(dir, 'state.db');
      return {
        store: new SqliteSnapshotStore(path) as SnapshotStore,
        reopen: () => new SqliteSnapshotStore(path) as SnapshotStore,
      };
    },
  ],
] as const)('%s store', (_name, make) => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-store-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('saves, loads, lists and deletes records', async () => {
    const { store, reopen } = await make(dir);
    await store.save([
      { id: 'a', data: '{"v":1}' },
      { id: 'b', data: '{"v":2}' },
    ]);
    await store.save([{ id: 'a', data: '{"v":3}' }]);
    expect(await store.load('a')).toBe('{"v":3}');
    expect(await store.load('missing')).toBeUndefined();
    expect((await store.loadAll()).sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      { id: 'a', data: '{"v":3}' },
      { id: 'b', data: '{"v":2}' },
    ]);
    // A sealed record comes back byte for byte: its checksum still matches.
    const sealed = encodeEnvelope(makeEnvelope('c', snapshot, 1));
    await store.save([{ id: 'c', data: sealed }]);
    expect(readEnvelope('c', (await store.load('c')) as string).trusted).toBe(true);
    await store.delete(['c']);
    await store.delete(['b', 'never-there']);
    expect(await store.loadAll()).toEqual([{ id: 'a', data: '{"v":3}' }]);
    if (reopen) {
      await store.close?.();
      const again = reopen();
      expect(await again.load('a')).toBe('{"v":3}');
      await again.close?.();
    }
  });
});

describe('the SQLite store', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-sqlite-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('uses WAL and writes each save as one transaction', async () => {
    const path = join(dir, 'nested', 'state.db');
    const store = new SqliteSnapshotStore(path);
    await store.save([{ id: 'a', data: 'x' }]);
    const raw = new Database(path);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    // A save that fails half way leaves nothing of itself behind.
    raw.exec(
      "CREATE TRIGGER no_b BEFORE INSERT ON snapshots WHEN NEW.id = 'b' BEGIN SELECT RAISE(ABORT, 'refused'); END",
    );
    await expect(
      store.save([
        { id: 'c', data: 'y' },
        { id: 'b', data: 'z' },
      ]),
    ).rejects.toMatchObject({ code: 'store_failed' });
    expect((await store.loadAll()).map((record) => record.id)).toEqual(['a']);
    raw.close();
    await store.close();
  });

  it('refuses a path it cannot open, naming it', async () => {
    // A regular file where a directory should be.
    const blocker = join(dir, 'blocker');
    await writeFile(blocker, '');
    const error = errorOf(() => new SqliteSnapshotStore(join(blocker, 'state.db')));
    expect(error.code).toBe('store_failed');
    expect(error.message).toContain(join(blocker, 'state.db'));
  });
});
