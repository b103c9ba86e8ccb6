// P7: what attaching a SQLite store adds to an agent signal. Two roleboxes in one process,
// the same sessions in the same state, one with a store and one without; signals go round
// the sessions so that none grows long. Saves are debounced: the call itself only marks the
// session to be saved (goal ≤ 1.1× without a store); the batch written afterwards is timed
// separately and reported as what the store costs per signal in all (saved once per
// debounce window). A simulated clock keeps the debounce from firing inside a sample.
// What the store adds to the call is marking the session to be saved: many short samples,
// alternating, since a single long sample of either varied by ±15% on a shared machine.
// Run: npm run bench:signal-store
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRolebox, defineFunction, type Rolebox, type SessionHandle } from '../src/index.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { SimulatedClock } from '../src/testing/index.js';
import { atMost, median, rounded, timeNs, writeResult } from './measure.js';

const SESSIONS = 1_000;
const SIGNALS_PER_SAMPLE = 500;
const SAMPLES = 61;
const answered = 'signal_observed(answer)';
const functions = [defineFunction({ name: 'approval', gate: answered, continue_until: answered })];

interface Setup {
  readonly rb: Rolebox;
  readonly sessions: SessionHandle[];
  readonly callNs: number[];
  readonly saveNs: number[];
  next: number;
}

/** A rolebox with SESSIONS live sessions, each with its approval function active. */
async function setUp(store: SqliteSnapshotStore | undefined): Promise<Setup> {
  const rb = createRolebox({
    functions,
    clock: new SimulatedClock(1_000_000),
    // Kept live as the store-less ones are: never idle, never evicted, and not passivated
    // while their function waits for an answer (decision 3 would passivate them, and each
    // signal would then time an activation instead of a signal).
    ...(store
      ? {
          store,
          idleMs: Number.POSITIVE_INFINITY,
          maxLiveSessions: 1_000_000,
          passivateWhenWaiting: false,
        }
      : {}),
  });
  await rb.start();
  const sessions: SessionHandle[] = [];
  for (let index = 0; index < SESSIONS; index++) {
    const session = await rb.openSession({ id: `s${index}` });
    session.activate('approval');
    sessions.push(session);
  }
  await rb.flush();
  return { rb, sessions, callNs: [], saveNs: [], next: 0 };
}

/** One sample: SIGNALS_PER_SAMPLE signals (timed), then the save of what they changed (timed apart). */
async function sample(setup: Setup): Promise<void> {
  const start = process.hrtime.bigint();
  for (let index = 0; index < SIGNALS_PER_SAMPLE; index++) {
    const session = setup.sessions[setup.next++ % SESSIONS] as SessionHandle;
    session.signal({ type: 'progress', payload: { step: setup.next } });
  }
  setup.callNs.push(Number(process.hrtime.bigint() - start) / SIGNALS_PER_SAMPLE);
  setup.saveNs.push((await timeNs(() => setup.rb.flush())) / SIGNALS_PER_SAMPLE);
}

const dir = mkdtempSync(join(tmpdir(), 'rolebox-p7-'));
const store = new SqliteSnapshotStore(join(dir, 'state.db'));
const bare = await setUp(undefined);
const stored = await setUp(store);
// Warm up both, then alternate so that drift in machine load hits both alike.
await sample(bare);
await sample(stored);
bare.callNs.length = bare.saveNs.length = stored.callNs.length = stored.saveNs.length = 0;
for (let index = 0; index < SAMPLES; index++) {
  // Which one goes first changes every sample.
  for (const setup of index % 2 ? [stored, bare] : [bare, stored]) await sample(setup);
}
await bare.rb.stop();
await stored.rb.stop();
await store.close();
rmSync(dir, { recursive: true, force: true });

const withoutUs = median(bare.callNs) / 1000;
const withUs = median(stored.callNs) / 1000;
const saveUs = median(stored.saveNs) / 1000;
await writeResult('signal-store-cost', {
  description:
    'P7: an agent signal (progress) with a SQLite store attached / without, same sessions and state; the save is debounced and timed apart (all signals of a sample, one flush)',
  sessions: SESSIONS,
  signalsPerSample: SIGNALS_PER_SAMPLE,
  samples: SAMPLES,
  withoutStoreUs: rounded(withoutUs),
  withStoreUs: rounded(withUs),
  ratio: atMost(withUs / withoutUs, 1.1, '×'),
  saveUsPerSignal: rounded(saveUs),
  withSaveRatio: rounded((withUs + saveUs) / withoutUs),
});
