// The loop registry brought in line with the sessions a restore brings back (reconcileLoopRegistry),
// and the `$system` record read at start (loadLoopRegistry).
import { describe, expect, it } from 'vitest';
import { MemorySnapshotStore } from '../src/index.js';
import {
  type LoopRegistration,
  type LoopRegistrations,
  loopRegistryOf,
  registeredLoops,
} from '../src/loop/registry.js';
import { encodeEnvelope, makeEnvelope, SYSTEM_RECORD_ID } from '../src/persistence/envelope.js';
import { noMigrations } from '../src/persistence/migrations.js';
import {
  loadLoopRegistry,
  type RestorableSession,
  reconcileLoopRegistry,
} from '../src/persistence/restore.js';

const FP = 'a'.repeat(64);

function registration(
  originSessionId: string,
  rootLoopId: string,
  extra: Partial<LoopRegistration> = {},
): LoopRegistration {
  return {
    originSessionId,
    rootLoopId,
    fingerprint: FP,
    workerSessionIds: [],
    finished: false,
    ...extra,
  };
}

/** A restored session: running loop `loopId` (its rounds in worker sessions), or none. */
function restored(
  sessionId: string,
  loop?: { loopId: string; parentLoopId?: string; workers: string[] },
): RestorableSession {
  const children = loop
    ? {
        loop: {
          snapshot: {
            context: {
              id: loop.loopId,
              ...(loop.parentLoopId === undefined ? {} : { parentLoopId: loop.parentLoopId }),
              promptFingerprint: FP,
              rounds: loop.workers.map((workerSessionId) => ({ workerSessionId })),
            },
          },
        },
      }
    : {};
  return {
    sessionId,
    snapshot: { context: { createdAt: 0, activeLoopId: loop?.loopId ?? null }, children },
    systemIds: [],
  } as unknown as RestorableSession;
}

describe('reconcileLoopRegistry', () => {
  // Elsewhere: 500 loops of other sessions, which a restore of S must not copy or change.
  const others: LoopRegistrations = Object.fromEntries(
    Array.from({ length: 500 }, (_, i) => [`other_${i}`, registration(`O${i}`, `other_${i}`)]),
  );

  it('returns the registry itself when the session agrees with it', () => {
    const registry = loopRegistryOf({ ...others, L: registration('S', 'L') });
    expect(reconcileLoopRegistry(registry, [restored('S', { loopId: 'L', workers: [] })])).toBe(
      registry,
    );
    expect(reconcileLoopRegistry(registry, [restored('N')])).toBe(registry);
  });

  it('finishes a loop its session restored without, and drops its tree when it was the last', () => {
    const registry = loopRegistryOf({ ...others, L: registration('S', 'L') });
    const next = reconcileLoopRegistry(registry, [restored('S')]);
    expect(registeredLoops(next)).toEqual(others);
  });

  it('keeps the tree, its loop finished, while another loop of it runs', () => {
    const registry = loopRegistryOf({
      ...others,
      L: registration('S', 'L', { workerSessionIds: ['W'] }),
      C: registration('W', 'L', { parentLoopId: 'L' }),
    });
    const loops = registeredLoops(reconcileLoopRegistry(registry, [restored('S')]));
    expect(loops.L?.finished).toBe(true);
    expect(loops.C?.finished).toBe(false);
    expect(Object.keys(loops).length).toBe(502);
  });

  it('registers a running loop the registry lacks, under its parent’s tree, and revives a finished one', () => {
    const registry = loopRegistryOf({
      ...others,
      P: registration('S', 'R', { parentLoopId: 'R', workerSessionIds: ['W'] }),
      R: registration('Q', 'R', { finished: true }),
    });
    const next = reconcileLoopRegistry(registry, [
      restored('W', { loopId: 'C', parentLoopId: 'P', workers: ['X', 'Y', 'X'] }),
      restored('Q', { loopId: 'R', workers: [] }),
    ]);
    expect(registeredLoops(next).C).toEqual(
      registration('W', 'R', { parentLoopId: 'P', workerSessionIds: ['X', 'Y'] }),
    );
    expect(registeredLoops(next).R?.finished).toBe(false);
  });
});

describe('loadLoopRegistry', () => {
  it('drops a tree whose loops have all finished, keeps the rest', async () => {
    const store = new MemorySnapshotStore();
    const loops: LoopRegistrations = {
      done: registration('A', 'done', { finished: true }),
      live: registration('B', 'live'),
      child: registration('C', 'live', { parentLoopId: 'live', finished: true }),
    };
    store.records.set(
      SYSTEM_RECORD_ID,
      encodeEnvelope(makeEnvelope(SYSTEM_RECORD_ID, { context: { loopRegistry: { loops } } }, 0)),
    );
    const { loopRegistry, failed } = await loadLoopRegistry(store, noMigrations);
    expect(failed).toEqual([]);
    expect(Object.keys(registeredLoops(loopRegistry)).sort()).toEqual(['child', 'live']);
  });
});
