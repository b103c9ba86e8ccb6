import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js';
import { isAlive } from '../src/adapters/process-alive.js';
import { prefixUpperBound, SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { decideClaim } from '../src/adapters/store-ownership.js';
import { ERROR_CODES } from '../src/errors.js';
import type {
  ClaimResult,
  SessionLease,
  SnapshotStore,
  StoreOwner,
} from '../src/ports/snapshot-store.js';
import { rejectionOf } from './support/errors.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS, track } from './support/processes.js';

const HOST = hostname();
const A: StoreOwner = { ownerId: 'owner-a', pid: process.pid, host: HOST };
const B: StoreOwner = { ownerId: 'owner-b', pid: process.pid, host: HOST };
const TTL = 100;

/** A pid that ran and is gone (reaped): a process that died on this host. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  expect(isAlive(pid)).toBe(false);
  return pid;
}

function tokenOf(result: ClaimResult): number {
  if (!result.ok)
    throw new Error(`expected the claim to be granted, got ${JSON.stringify(result)}`);
  return result.token;
}

async function leaseOf(
  store: SnapshotStore,
  sessionId: string,
  owner: StoreOwner,
  now: number,
  ttl = TTL,
): Promise<SessionLease> {
  return { sessionId, token: tokenOf(await store.claim(sessionId, owner, ttl, now)) };
}

/**
 * Bounded re-check of a real process's state: resolves once `check` holds, fails after ~20 s
 * (sized for a loaded 2-core machine; it waits on a process, not on a timer of ours).
 */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe.each([
  ['memory', (_dir: string): SnapshotStore => new MemorySnapshotStore()],
  ['sqlite', (dir: string): SnapshotStore => new SqliteSnapshotStore(join(dir, 'state.db'))],
] as const)('ownership on the %s store', (kind, make) => {
  let dir: string;
  let store: SnapshotStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-own-'));
    store = make(dir);
  });
  afterEach(async () => {
    await store.close?.();
    await killTracked();
    await rm(dir, { recursive: true, force: true });
  });

  it('a claimed session is refused to another owner, naming the owner and the expiry', async () => {
    const first = await store.claim('s', A, TTL, 1_000);
    expect(first).toEqual({ ok: true, token: expect.any(Number) });
    expect(await store.claim('s', B, TTL, 1_050)).toEqual({
      ok: false,
      owner: { ownerId: 'owner-a', pid: process.pid, host: HOST },
      expiresAt: 1_100,
    });
    // Another session is free.
    expect((await store.claim('t', B, TTL, 1_050)).ok).toBe(true);
  });

  it('claimAndLoad reads and claims in one step; a missing record claims nothing', async () => {
    const immediate = store.immediate as NonNullable<SnapshotStore['immediate']>;
    expect(immediate.claimAndLoad('absent', A, TTL, 1_000)).toBeUndefined();
    // Nothing was claimed for the missing record: another owner gets it at once.
    expect((await store.claim('absent', B, TTL, 1_001)).ok).toBe(true);
    await store.save([{ id: 's', data: 'stored' }]);
    const first = immediate.claimAndLoad('s', A, TTL, 1_000);
    expect(first).toEqual({ data: 'stored', claim: { ok: true, token: expect.any(Number) } });
    // The same owner again: the same token; another owner: refused, naming the owner.
    expect(immediate.claimAndLoad('s', A, TTL, 1_010)?.claim).toEqual(first?.claim);
    expect(immediate.claimAndLoad('s', B, TTL, 1_020)?.claim).toEqual({
      ok: false,
      owner: A,
      expiresAt: 1_110,
    });
    // Bad input is refused before anything is read or written, a missing record or not.
    for (const id of ['s', 'absent'])
      expect(() => immediate.claimAndLoad(id, A, -1, 1_030)).toThrow(
        expect.objectContaining({ code: 'invalid_argument' }),
      );
  });

  it('re-claimed by its owner while live: the same token and a later expiry', async () => {
    const token = tokenOf(await store.claim('s', A, TTL, 1_000));
    expect(await store.claim('s', A, TTL, 1_080)).toEqual({ ok: true, token });
    expect(await store.claim('s', B, TTL, 1_150)).toMatchObject({ ok: false, expiresAt: 1_180 });
  });

  it('after a release the next owner gets a higher token; the old lease writes nothing', async () => {
    const lease = await leaseOf(store, 's', A, 1_000);
    await store.release([lease]);
    const next = await leaseOf(store, 's', B, 1_010);
    expect(next.token).toBeGreaterThan(lease.token);
    expect(await store.save([{ id: 's', data: 'old' }], [lease], { now: 1_020 })).toEqual({
      refused: ['s'],
    });
    expect(await store.load('s')).toBeUndefined();
    // A release with a token that is no longer the session's leaves the claim alone.
    await store.release([lease]);
    expect((await store.claim('s', A, TTL, 1_030)).ok).toBe(false);
  });

  it('expires by its TTL on the injected clock (expiresAt <= now is free)', async () => {
    const old = await leaseOf(store, 's', A, 1_000);
    expect((await store.claim('s', B, TTL, 1_099)).ok).toBe(false);
    const taken = await leaseOf(store, 's', B, 1_100);
    expect(taken.token).toBeGreaterThan(old.token);
    // The stale owner: its renew fails, its save is refused and writes nothing for `s`.
    expect(await store.renew(old, A, TTL, 1_100)).toBe(false);
    await store.save([{ id: 's', data: 'B' }], [taken], { now: 1_110 });
    expect(
      await store.save(
        [
          { id: 's', data: 'A, stale' },
          { id: '$system', data: 'system' },
        ],
        [old],
        { now: 1_120, wakeUps: [{ sessionId: 's', at: 5_000 }] },
      ),
    ).toEqual({ refused: ['s'] });
    expect(await store.load('s')).toBe('B');
    expect(await store.load('$system')).toBe('system');
    expect(await store.loadWakeUps()).toEqual([]);
    expect(await store.claim('s', A, TTL, 1_150)).toMatchObject({
      ok: false,
      owner: { ownerId: 'owner-b' },
    });
  });

  it('a claim of ours that expired comes back with a new token, fencing the old lease', async () => {
    const old = await leaseOf(store, 's', A, 1_000);
    const again = await leaseOf(store, 's', A, 1_100);
    expect(again.token).toBeGreaterThan(old.token);
    expect(await store.save([{ id: 's', data: 'x' }], [old], { now: 1_110 })).toEqual({
      refused: ['s'],
    });
    expect(await store.save([{ id: 's', data: 'y' }], [again], { now: 1_110 })).toEqual({
      refused: [],
    });
    expect(await store.load('s')).toBe('y');
  });

  it('a lease that expired writes nothing, even if nobody took the session', async () => {
    const lease = await leaseOf(store, 's', A, 1_000);
    expect(await store.save([{ id: 's', data: 'x' }], [lease], { now: 1_100 })).toEqual({
      refused: ['s'],
    });
    expect(await store.load('s')).toBeUndefined();
  });

  it('an owner that died on this host loses its claim at once; on another host only by TTL', async () => {
    const dead = deadPid();
    const ghost: StoreOwner = { ownerId: 'ghost', pid: dead, host: HOST };
    const ghostLease = await leaseOf(store, 's', ghost, 1_000, 60_000);
    const taken = await leaseOf(store, 's', A, 1_001);
    expect(taken.token).toBeGreaterThan(ghostLease.token);

    const remote: StoreOwner = { ownerId: 'remote', pid: dead, host: 'another-host' };
    await leaseOf(store, 'r', remote, 1_000, 60_000);
    expect(await store.claim('r', A, TTL, 1_001)).toEqual({
      ok: false,
      owner: remote,
      expiresAt: 61_000,
    });
    expect((await store.claim('r', A, TTL, 61_000)).ok).toBe(true);
  });

  // Zombies matter across processes, and only the SQLite store is shared by processes: the
  // memory store (browser-safe) checks a pid with signal 0 alone, without reading /proc.
  it.skipIf(kind === 'memory')('an owner that is a zombie counts as dead', async () => {
    // The background `sleep` becomes the child of `sleep 30`, which never reaps it: a zombie.
    // It must outlive the shell's `exec`: a shell may reap a child that ended before it
    // (dash does), and then there is no zombie to test with.
    const parent = track(
      spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 30'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
    const zombie = await new Promise<number>((resolve) =>
      parent.stdout?.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
    );
    const state = () => {
      if (!existsSync(`/proc/${zombie}/stat`)) return 'gone';
      const stat = readFileSync(`/proc/${zombie}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    };
    await until(() => state() === 'Z', 'the zombie');
    await leaseOf(store, 's', { ownerId: 'zombie', pid: zombie, host: HOST }, 1_000, 60_000);
    expect((await store.claim('s', A, TTL, 1_001)).ok).toBe(true);
  });

  it('renew extends our live claim; it fails for another owner, a wrong token, a released claim', async () => {
    const lease = await leaseOf(store, 's', A, 1_000);
    expect(await store.renew(lease, A, TTL, 1_090)).toBe(true);
    expect((await store.claim('s', B, TTL, 1_150)).ok).toBe(false); // now until 1 190
    expect(await store.renew(lease, B, TTL, 1_150)).toBe(false);
    expect(await store.renew({ sessionId: 's', token: lease.token + 1 }, A, TTL, 1_150)).toBe(
      false,
    );
    expect(await store.renew({ sessionId: 'other', token: lease.token }, A, TTL, 1_150)).toBe(
      false,
    );
    expect(await store.save([{ id: 's', data: 'x' }], [lease], { now: 1_180 })).toEqual({
      refused: [],
    });
    await store.release([lease]);
    expect(await store.renew(lease, A, TTL, 1_181)).toBe(false);
  });

  it('tokens only grow, across sessions and owners', async () => {
    const tokens: number[] = [];
    for (const [id, owner, now] of [
      ['s', A, 1_000],
      ['t', B, 1_000],
      ['s', B, 1_100],
      ['s', A, 1_200],
      ['u', A, 1_200],
    ] as const)
      tokens.push(tokenOf(await store.claim(id, owner, TTL, now)));
    expect([...tokens].sort((x, y) => x - y)).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('a save without leases writes everything on unclaimed sessions (the old behaviour)', async () => {
    expect(
      await store.save([
        { id: 's', data: '1' },
        { id: '$system', data: '2' },
      ]),
    ).toEqual({ refused: [] });
    expect(await store.delete(['s'])).toEqual({ refused: [] });
    expect(await store.load('s')).toBeUndefined();
    expect(await store.load('$system')).toBe('2');
  });

  it('a save or delete without a lease is refused on a session another owner holds', async () => {
    await store.save([{ id: 's', data: 'before' }]);
    const lease = await leaseOf(store, 's', A, 1_000);
    expect(
      await store.save(
        [
          { id: 's', data: 'unfenced' },
          { id: 'free', data: 'ok' },
        ],
        undefined,
        { now: 1_050 },
      ),
    ).toEqual({ refused: ['s'] });
    expect(await store.delete(['s', 'free'], [], { now: 1_050 })).toEqual({ refused: ['s'] });
    expect(await store.load('s')).toBe('before');
    expect(await store.load('free')).toBeUndefined();
    // With the lease it goes through; once the claim expired, so does an unfenced write.
    expect(await store.save([{ id: 's', data: 'fenced' }], [lease], { now: 1_050 })).toEqual({
      refused: [],
    });
    expect(await store.load('s')).toBe('fenced');
    expect(await store.save([{ id: 's', data: 'late' }], [], { now: 1_100 })).toEqual({
      refused: [],
    });
    expect(await store.load('s')).toBe('late');
  });

  it('a fenced delete removes the record and its wake-up, and refuses a stale lease', async () => {
    const lease = await leaseOf(store, 's', A, 1_000);
    await store.save([{ id: 's', data: 'x' }], [lease], {
      now: 1_000,
      wakeUps: [{ sessionId: 's', at: 2_000 }],
    });
    expect(
      await store.delete(['s'], [{ sessionId: 's', token: lease.token + 1 }], { now: 1_010 }),
    ).toEqual({ refused: ['s'] });
    expect(await store.load('s')).toBe('x');
    expect(await store.delete(['s'], [lease], { now: 1_010 })).toEqual({ refused: [] });
    expect(await store.load('s')).toBeUndefined();
    expect(await store.loadWakeUps()).toEqual([]);
    // Deleting the record leaves the claim: the owner releases it.
    expect((await store.claim('s', B, TTL, 1_020)).ok).toBe(false);
  });

  it('keeps a wake-up index: one row per session, all of it or what is due', async () => {
    expect(
      await store.setWakeUps([
        { sessionId: 'c', at: 3_000 },
        { sessionId: 'a', at: 1_000, taskId: 'task-a' },
        { sessionId: 'b', taskId: 'task-b' },
        { sessionId: 'd', at: 2_000 },
      ]),
    ).toEqual({ refused: [] });
    expect(await store.loadWakeUps()).toEqual([
      { sessionId: 'a', at: 1_000, taskId: 'task-a' },
      { sessionId: 'b', taskId: 'task-b' },
      { sessionId: 'c', at: 3_000 },
      { sessionId: 'd', at: 2_000 },
    ]);
    expect(await store.loadWakeUps({ dueBy: 2_000 })).toEqual([
      { sessionId: 'a', at: 1_000, taskId: 'task-a' },
      { sessionId: 'd', at: 2_000 },
    ]);
    // A new entry replaces the row; an entry with neither field removes it.
    await store.setWakeUps([{ sessionId: 'a', at: 4_000 }, { sessionId: 'd' }]);
    await store.clearWakeUps(['b', 'never-there']);
    expect(await store.loadWakeUps()).toEqual([
      { sessionId: 'a', at: 4_000 },
      { sessionId: 'c', at: 3_000 },
    ]);
    expect(await store.loadWakeUps({ dueBy: 3_999 })).toEqual([{ sessionId: 'c', at: 3_000 }]);
  });

  it('fences wake-ups like records', async () => {
    const lease = await leaseOf(store, 's', A, 1_000);
    expect(await store.setWakeUps([{ sessionId: 's', at: 9 }], [], { now: 1_010 })).toEqual({
      refused: ['s'],
    });
    expect(await store.setWakeUps([{ sessionId: 's', at: 9 }], [lease], { now: 1_010 })).toEqual({
      refused: [],
    });
    expect(await store.clearWakeUps(['s'], undefined, { now: 1_020 })).toEqual({
      refused: ['s'],
    });
    expect(await store.loadWakeUps()).toEqual([{ sessionId: 's', at: 9 }]);
    expect(await store.clearWakeUps(['s'], [lease], { now: 1_020 })).toEqual({ refused: [] });
    expect(await store.loadWakeUps()).toEqual([]);
  });

  it('writes a record and its wake-up in one save', async () => {
    const lease = await leaseOf(store, 's', A, 1_000);
    expect(
      await store.save([{ id: 's', data: 'x' }], [lease], {
        now: 1_000,
        wakeUps: [{ sessionId: 's', at: 1_500, taskId: 't1' }],
      }),
    ).toEqual({ refused: [] });
    expect(await store.loadWakeUps()).toEqual([{ sessionId: 's', at: 1_500, taskId: 't1' }]);
    await store.save([{ id: 's', data: 'y' }], [lease], {
      now: 1_010,
      wakeUps: [{ sessionId: 's' }],
    });
    expect(await store.loadWakeUps()).toEqual([]);
  });

  it('loads by prefix, and only that prefix', async () => {
    await store.save([
      { id: '$pipeline:event:1', data: '1' },
      { id: '$pipeline:event:2', data: '2' },
      { id: '$pipeline:event:', data: 'exact' },
      { id: '$pipeline:event;', data: 'next character' },
      { id: '$pipeline:even', data: 'shorter' },
      { id: '$system', data: 's' },
      { id: 'session', data: 's' },
    ]);
    const found = await store.loadByPrefix('$pipeline:event:');
    expect(found.map((record) => record.id).sort()).toEqual([
      '$pipeline:event:',
      '$pipeline:event:1',
      '$pipeline:event:2',
    ]);
    expect(found.find((record) => record.id === '$pipeline:event:2')?.data).toBe('2');
    expect(await store.loadByPrefix('nothing')).toEqual([]);
    expect((await store.loadByPrefix('')).length).toBe(7);
  });

  it('refuses bad arguments with invalid_argument, naming them, and changes nothing', async () => {
    const lease = await leaseOf(store, 's', A, 1_000);
    const cases: [string, () => Promise<unknown>, string][] = [
      [
        'empty session id',
        () => store.claim('', A, TTL, 1_000),
        'sessionId must be a non-empty string, got ""',
      ],
      ['ttl 0', () => store.claim('s', A, 0, 1_000), 'ttlMs must be a positive number, got 0'],
      ['ttl < 0', () => store.claim('s', A, -5, 1_000), 'ttlMs must be a positive number, got -5'],
      [
        'ttl NaN',
        () => store.renew(lease, A, Number.NaN, 1_000),
        'ttlMs must be a positive number',
      ],
      ['now', () => store.claim('s', A, TTL, Number.NaN), 'now must be a finite number'],
      [
        'owner',
        () => store.claim('s', null as never, TTL, 1_000),
        'owner must be an object, got null',
      ],
      ['owner id', () => store.claim('s', { ...A, ownerId: '' }, TTL, 1), 'owner.ownerId must be'],
      [
        'owner pid',
        () => store.claim('s', { ...A, pid: 1.5 }, TTL, 1),
        'owner.pid must be a positive integer, got 1.5',
      ],
      [
        'owner host',
        () => store.claim('s', { ...A, host: 3 as never }, TTL, 1),
        'owner.host must be',
      ],
      [
        'token 1.5',
        () => store.renew({ sessionId: 's', token: 1.5 }, A, TTL, 1_000),
        'the token of the lease on "s" must be a positive integer, got 1.5',
      ],
      ['token "1"', () => store.release([{ sessionId: 's', token: '1' as never }]), 'got "1"'],
      ['leases', () => store.release('s' as never), 'leases must be an array, got "s"'],
      [
        'a bad lease in a save',
        () => store.save([{ id: 's', data: 'x' }], [{ sessionId: '', token: 1 }], { now: 1_000 }),
        'lease.sessionId must be a non-empty string',
      ],
      [
        'two tokens for one session',
        () =>
          store.save([{ id: 's', data: 'x' }], [lease, { ...lease, token: lease.token + 1 }], {
            now: 1,
          }),
        'two leases on "s" with different tokens',
      ],
      [
        'record data',
        () => store.save([{ id: 's', data: 5 as never }]),
        'the data of record "s" must be a string, got 5',
      ],
      [
        'record id',
        () => store.save([{ id: '', data: 'x' }]),
        'record id must be a non-empty string',
      ],
      [
        'save now',
        () => store.save([{ id: 's', data: 'x' }], [lease], { now: 'soon' as never }),
        'now must be a finite number (epoch ms), got "soon"',
      ],
      [
        'save options',
        () => store.save([{ id: 's', data: 'x' }], [lease], 7 as never),
        'options must be an object, got 7',
      ],
      [
        'wake-up time',
        () =>
          store.save([{ id: 's', data: 'x' }], [lease], {
            now: 1_000,
            wakeUps: [{ sessionId: 's', at: Number.POSITIVE_INFINITY }],
          }),
        'the wake-up time of s must be a finite number',
      ],
      [
        'wake-up task',
        () => store.setWakeUps([{ sessionId: 's', taskId: '' }]),
        'the wake-up taskId of "s" must be a non-empty string',
      ],
      [
        'two wake-ups',
        () =>
          store.setWakeUps([
            { sessionId: 'x', at: 1 },
            { sessionId: 'x', at: 2 },
          ]),
        'two wake-ups for "x"',
      ],
      ['delete ids', () => store.delete([''] as never), 'an id of ids must be a non-empty string'],
      ['clear ids', () => store.clearWakeUps('s' as never), 'sessionIds must be an array'],
      ['dueBy', () => store.loadWakeUps({ dueBy: Number.NaN }), 'dueBy must be a finite number'],
      ['prefix', () => store.loadByPrefix(3 as never), 'prefix must be a string, got 3'],
    ];
    for (const [name, call, message] of cases) {
      const error = await rejectionOf(call);
      expect(error.code, name).toBe('invalid_argument');
      expect(error.message, name).toContain(message);
    }
    expect(await store.load('s')).toBeUndefined();
    expect(await store.loadWakeUps()).toEqual([]);
    // The lease still holds with its token: nothing above touched the claim.
    expect(await store.renew(lease, A, TTL, 1_050)).toBe(true);
  });
});

describe('the claim rule', () => {
  const row = (owner: StoreOwner, expiresAt: number) => ({ owner, token: 1, expiresAt });
  const alive = () => true;
  const dead = () => false;

  it('takes a free, expired or dead-owned claim, keeps ours, refuses a live one', () => {
    expect(decideClaim(undefined, A, 0, alive)).toBe('take');
    expect(decideClaim(row(B, 10), A, 10, alive)).toBe('take');
    expect(decideClaim(row(B, 10), A, 9, alive)).toBe('refuse');
    expect(decideClaim(row(A, 10), A, 9, alive)).toBe('keep');
    expect(decideClaim(row(A, 10), A, 10, alive)).toBe('take');
    expect(decideClaim(row(B, 10), A, 9, dead)).toBe('take');
    expect(decideClaim(row({ ...B, host: 'elsewhere' }, 10), A, 9, dead)).toBe('refuse');
  });
});

describe('the SQLite store file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-own-file-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('opens a file written before claims and wake-ups existed', async () => {
    const path = join(dir, '.rolebox', 'state.db');
    // What the previous rolebox created: the snapshots table only, in WAL mode.
    mkdirSync(dirname(path), { recursive: true });
    const raw = new Database(path);
    raw.pragma('journal_mode = WAL');
    raw.exec(
      'CREATE TABLE IF NOT EXISTS snapshots (id TEXT PRIMARY KEY, data TEXT NOT NULL, saved_at INTEGER NOT NULL)',
    );
    raw.prepare('INSERT INTO snapshots VALUES (?, ?, ?)').run('old', '{"v":1}', 1);
    raw.close();

    const store = new SqliteSnapshotStore(path);
    expect(await store.load('old')).toBe('{"v":1}');
    const lease = await leaseOf(store, 'old', A, 1_000);
    expect(
      await store.save([{ id: 'old', data: '{"v":2}' }], [lease], {
        now: 1_000,
        wakeUps: [{ sessionId: 'old', at: 5 }],
      }),
    ).toEqual({ refused: [] });
    await store.close();
    const again = new SqliteSnapshotStore(path);
    expect(await again.load('old')).toBe('{"v":2}');
    expect(await again.loadWakeUps()).toEqual([{ sessionId: 'old', at: 5 }]);
    await again.close();
  });

  it('keeps issuing higher tokens after a release and a reopen', async () => {
    const path = join(dir, 'state.db');
    const first = new SqliteSnapshotStore(path);
    const lease = await leaseOf(first, 's', A, 1_000);
    await first.release([lease]);
    await first.close();
    const second = new SqliteSnapshotStore(path);
    expect((await leaseOf(second, 's', B, 1_000)).token).toBeGreaterThan(lease.token);
    await second.close();
  });

  it('reads a prefix and due wake-ups through indexes, not a scan', async () => {
    const path = join(dir, 'state.db');
    await new SqliteSnapshotStore(path).close();
    const raw = new Database(path);
    const plan = (sql: string) =>
      (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[])
        .map((row) => row.detail)
        .join('; ');
    expect(plan("SELECT id, data FROM snapshots WHERE id >= 'a' AND id < 'b' ORDER BY id")).toMatch(
      /SEARCH snapshots USING INDEX sqlite_autoindex_snapshots_1 \(id>\? AND id<\?\)/,
    );
    expect(
      plan('SELECT session_id, at, task_id FROM wakeups WHERE at <= 5 ORDER BY at, session_id'),
    ).toMatch(/SEARCH wakeups USING (COVERING )?INDEX wakeups_by_time \(at<\?\)/);
    raw.close();
  });

  it('loads a prefix whose next character is far up in Unicode', async () => {
    const store = new SqliteSnapshotStore(join(dir, 'state.db'));
    const ids = ['p', 'p\uffff', 'p\u{10000}', 'p\u{10ffff}z', 'q', 'o', '\u{10ffff}\u{10ffff}a'];
    await store.save(ids.map((id) => ({ id, data: id })));
    const idsOf = async (prefix: string) =>
      (await store.loadByPrefix(prefix)).map((record) => record.id).sort();
    expect(await idsOf('p')).toEqual(['p', 'p\u{10000}', 'p\u{10ffff}z', 'p\uffff'].sort());
    expect(await idsOf('p\u{10ffff}')).toEqual(['p\u{10ffff}z']);
    expect(await idsOf('\u{10ffff}')).toEqual(['\u{10ffff}\u{10ffff}a']);
    expect(await idsOf('p\uffff')).toEqual(['p\uffff']);
    await store.close();
  });

  it('computes the upper bound of a prefix range in code point order', () => {
    expect(prefixUpperBound('a')).toBe('b');
    expect(prefixUpperBound('$pipeline:event:')).toBe('$pipeline:event;');
    expect(prefixUpperBound('x\u{1f600}')).toBe('x\u{1f601}');
    expect(prefixUpperBound('x\ud7ff')).toBe('x\ue000');
    expect(prefixUpperBound('x\uffff')).toBe('x\u{10000}');
    expect(prefixUpperBound('a\u{10ffff}')).toBe('b');
    expect(prefixUpperBound('\u{10ffff}\u{10ffff}')).toBeUndefined();
    expect(prefixUpperBound('')).toBeUndefined();
  });

  it('a failing database is store_failed naming the path, and the claim is unchanged', async () => {
    const path = join(dir, 'state.db');
    const store = new SqliteSnapshotStore(path);
    const lease = await leaseOf(store, 's', A, 1_000);
    const raw = new Database(path);
    raw.exec(
      "CREATE TRIGGER no_claims BEFORE UPDATE ON claims BEGIN SELECT RAISE(ABORT, 'refused'); END",
    );
    const error = await rejectionOf(store.claim('s', B, TTL, 2_000));
    expect(error.code).toBe('store_failed');
    expect(error.message).toContain(path);
    expect(error.message).toContain('refused');
    raw.exec('DROP TRIGGER no_claims');
    raw.close();
    // B's claim did not happen and took no token: A's lease still holds until 1 100.
    expect(await store.save([{ id: 's', data: 'x' }], [lease], { now: 1_050 })).toEqual({
      refused: [],
    });
    await store.close();
    const closed = await rejectionOf(store.claim('s', A, TTL, 1_000));
    expect(closed.code).toBe('store_failed');
    expect(closed.message).toContain(path);
    expect((await rejectionOf(store.loadWakeUps())).code).toBe('store_failed');
  });
});

describe('the error catalogue', () => {
  it('has a code for a session another process owns', () => {
    expect(ERROR_CODES.session_owned_elsewhere).toBe('a session another live process owns');
  });
});

/** A second process on the same SQLite file, driven one JSON line at a time. */
class StoreChild {
  readonly process: ChildProcess;
  readonly #waiting = new Map<number, (answer: ChildAnswer) => void>();
  #next = 1;
  readonly started: Promise<void>;

  constructor(path: string, ownerId: string) {
    const script = join(import.meta.dirname, 'support', 'store-child.ts');
    this.process = track(
      spawn(
        process.execPath,
        ['--import', 'tsx', '--conditions=rolebox-source', script, path, ownerId],
        {
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      ),
    );
    const lines = createInterface({ input: this.process.stdout as NodeJS.ReadableStream });
    let started: () => void = () => {};
    this.started = new Promise((resolve) => {
      started = resolve;
    });
    lines.on('line', (line) => {
      const answer = JSON.parse(line) as ChildAnswer;
      if (answer.id === 0) started();
      const key = answer.ready ? -answer.id : answer.id;
      this.#waiting.get(key)?.(answer);
      this.#waiting.delete(key);
    });
  }

  get pid(): number {
    return this.process.pid as number;
  }

  /** Sends a command; resolves with its result, rejects with its error. */
  async call<T>(op: string, ...args: unknown[]): Promise<T> {
    const { done } = this.#send(op, args);
    const answer = await done;
    if (answer.error) throw Object.assign(new Error(answer.error.message), answer.error);
    return answer.result as T;
  }

  /** Starts a `race` or `hot` run: resolves `ready` once it waits for `go()`. */
  start<T>(op: 'race' | 'hot', ...args: unknown[]) {
    const { ready, done } = this.#send(op, args);
    return { ready, done: done.then((answer) => answer.result as T) };
  }

  go(): void {
    this.process.stdin?.write(`${JSON.stringify({ id: -1, op: 'go', args: [] })}\n`);
  }

  #send(op: string, args: unknown[]) {
    const id = this.#next++;
    const ready = new Promise<ChildAnswer>((resolve) => this.#waiting.set(-id, resolve));
    const done = new Promise<ChildAnswer>((resolve) => this.#waiting.set(id, resolve));
    this.process.stdin?.write(`${JSON.stringify({ id, op, args })}\n`);
    return { ready, done };
  }

  async kill(): Promise<void> {
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.kill('SIGKILL');
    await exited;
  }
}

interface ChildAnswer {
  readonly id: number;
  readonly ready?: true;
  readonly result?: unknown;
  readonly error?: { code?: string; message: string };
}

describe('two processes on one SQLite file', () => {
  vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });
  let dir: string;
  let path: string;
  let store: SqliteSnapshotStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-own-2p-'));
    path = join(dir, 'state.db');
    store = new SqliteSnapshotStore(path);
  });
  afterEach(async () => {
    await killTracked();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function child(ownerId: string): Promise<StoreChild> {
    const started = new StoreChild(path, ownerId);
    await started.started;
    return started;
  }

  it('the second is refused naming the first; after a release it gets a higher token', async () => {
    const first = await child('first');
    const claimed = await first.call<ClaimResult>('claim', 's', 60_000, 1_000);
    expect(claimed.ok).toBe(true);
    expect(await store.claim('s', A, 60_000, 1_001)).toEqual({
      ok: false,
      owner: { ownerId: 'first', pid: first.pid, host: HOST },
      expiresAt: 61_000,
    });
    await first.call('release', [{ sessionId: 's', token: tokenOf(claimed) }]);
    expect(tokenOf(await store.claim('s', A, 60_000, 1_002))).toBeGreaterThan(tokenOf(claimed));
  });

  it('after the first is SIGKILLed the second takes the session at once', async () => {
    const first = await child('first');
    const claimed = await first.call<ClaimResult>('claim', 's', 60_000, 1_000);
    expect((await store.claim('s', A, 60_000, 1_001)).ok).toBe(false);
    await first.kill();
    expect(tokenOf(await store.claim('s', A, 60_000, 1_001))).toBeGreaterThan(tokenOf(claimed));
  });

  it('expires by TTL on injected times; the stale owner writes nothing for that session', async () => {
    const first = await child('first');
    const claimed = await first.call<ClaimResult>('claim', 's', 100, 1_000);
    const stale: SessionLease = { sessionId: 's', token: tokenOf(claimed) };
    expect(await first.call('save', [{ id: 's', data: 'first' }], [stale], { now: 1_010 })).toEqual(
      { refused: [] },
    );
    expect((await store.claim('s', A, 100, 1_099)).ok).toBe(false);
    const lease = await leaseOf(store, 's', A, 1_100);
    await store.save([{ id: 's', data: 'second' }], [lease], { now: 1_100 });
    expect(await first.call('renew', stale, 100, 1_100)).toBe(false);
    expect(
      await first.call(
        'save',
        [
          { id: 's', data: 'first again' },
          { id: '$pipeline:event:x', data: 'unowned' },
        ],
        [stale],
        { now: 1_110, wakeUps: [{ sessionId: 's', at: 9_999 }] },
      ),
    ).toEqual({ refused: ['s'] });
    expect(await first.call('delete', ['s'], [stale], { now: 1_110 })).toEqual({ refused: ['s'] });
    expect(await store.load('s')).toBe('second');
    expect(await store.load('$pipeline:event:x')).toBe('unowned');
    expect(await store.loadWakeUps()).toEqual([]);
    // A save without a lease from the old process is refused as well.
    expect(await first.call('save', [{ id: 's', data: 'unfenced' }], [], { now: 1_120 })).toEqual({
      refused: ['s'],
    });
    expect(await store.load('s')).toBe('second');
  });

  it('many claims racing: exactly one process wins each session', async () => {
    const one = await child('one');
    const two = await child('two');
    const N = 400;
    const a = one.start<boolean[]>('race', 'race:', N);
    const b = two.start<boolean[]>('race', 'race:', N);
    await Promise.all([a.ready, b.ready]);
    one.go();
    two.go();
    const [wonByOne, wonByTwo] = await Promise.all([a.done, b.done]);
    expect(wonByOne).toHaveLength(N);
    for (let i = 0; i < N; i++) expect(wonByOne[i] !== wonByTwo[i], `race:${i}`).toBe(true);
    // The store agrees with who won.
    for (let i = 0; i < N; i += 37) {
      const result = await store.claim(`race:${i}`, A, 60_000, Date.now());
      expect(result).toMatchObject({ ok: false, owner: { ownerId: wonByOne[i] ? 'one' : 'two' } });
    }
  });

  it('many claims racing on one session: no token twice, no holder ever fenced off by another', async () => {
    const one = await child('one');
    const two = await child('two');
    type Hot = { tokens: number[]; refusedSaves: number[]; contended: number };
    let contended = 0;
    // Repeated until the two runs overlapped (they always do in practice): without
    // contention the run would prove nothing.
    for (let attempt = 0; attempt < 3 && contended === 0; attempt++) {
      const a = one.start<Hot>('hot', 'hot', 500);
      const b = two.start<Hot>('hot', 'hot', 500);
      await Promise.all([a.ready, b.ready]);
      one.go();
      two.go();
      const [ra, rb] = await Promise.all([a.done, b.done]);
      expect(ra.refusedSaves).toEqual([]);
      expect(rb.refusedSaves).toEqual([]);
      const tokens = [...ra.tokens, ...rb.tokens];
      expect(new Set(tokens).size).toBe(tokens.length);
      expect(ra.tokens.length + ra.contended).toBe(500);
      contended += ra.contended + rb.contended;
    }
    expect(contended).toBeGreaterThan(0);
  });
});
