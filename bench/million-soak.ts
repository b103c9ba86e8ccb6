// Soak (issue 26): a million approval workflows through one rolebox with a SQLite store.
// Each workflow opens, activates a gated function and pauses on need_approval; with the
// defaults (`passivateWhenWaiting`) it passivates once that step is saved. Every third is
// answered and closed at once; the other two thirds stay stored, passivated, waiting for a
// human. The JS heap after gc at each tenth is compared with the heap at the first tenth
// (100 000 workflows for the default million): goal ≤ 1.05×, flat however many wait.
// Partial figures are written at every tenth (`complete: false` until the last), so a run
// cut short still says how far it got.
// Run: npm run bench:million [-- --workflows N] (default 1 000 000).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRolebox, defineFunction } from '../src/index.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { atMost, rounded, settledHeap, writeResult } from './measure.js';

const index = process.argv.indexOf('--workflows');
const WORKFLOWS = index < 0 ? 1_000_000 : Number(process.argv[index + 1]);
if (!Number.isSafeInteger(WORKFLOWS) || WORKFLOWS < 10)
  throw new Error(`--workflows must be a whole number ≥ 10, got ${process.argv[index + 1]}`);
const TENTHS = 10;

const dir = mkdtempSync(join(tmpdir(), 'rolebox-million-'));
const store = new SqliteSnapshotStore(join(dir, 'soak.db'));
const rb = createRolebox({
  store,
  functions: [
    defineFunction({
      name: 'approval',
      gate: 'signal_observed(answer)',
      continue_until: 'signal_observed(answer)',
    }),
  ],
});
await rb.start();

const heapMiB: number[] = [];
const seconds: number[] = [];
let opened = 0;
let closed = 0;
const started = performance.now();
try {
  for (let tenth = 0; tenth < TENTHS; tenth++) {
    const until = Math.round(((tenth + 1) * WORKFLOWS) / TENTHS);
    while (opened < until) {
      const session = await rb.openSession({ id: `wf-${opened}` });
      session.activate('approval');
      session.signal({ type: 'need_approval', payload: { reason: 'refund over $500' } });
      session.idle();
      if (opened % 3 === 0) {
        session.signal({ type: 'answer', payload: { approved: true } });
        session.idle();
        session.close();
        closed++;
      }
      opened++;
      // Let saves and passivations keep up, as a host answering requests would.
      if (opened % 500 === 0) await rb.flush();
    }
    await rb.flush();
    heapMiB.push((await settledHeap()) / 2 ** 20);
    seconds.push((performance.now() - started) / 1_000);
    const live = rb.sessions().length;
    const first = heapMiB[0] as number;
    const last = heapMiB.at(-1) as number;
    console.error(
      `tenth ${tenth + 1}: ${opened} workflows (${closed} closed), heap ${last.toFixed(2)} MiB, ${live} live, ${seconds.at(-1)?.toFixed(0)} s`,
    );
    await writeResult('million-soak', {
      description:
        'approval workflows through one rolebox with a SQLite store and default options: each paused on need_approval (passivated once saved), every third answered and closed; JS heap after gc at each tenth',
      complete: tenth === TENTHS - 1,
      workflows: opened,
      closed,
      waiting: opened - closed,
      ratio: {
        measure: `heap after gc at ${opened} workflows / at ${Math.round(WORKFLOWS / TENTHS)}`,
        ...atMost(last / first, 1.05, '×'),
      },
      heapMiBByTenth: heapMiB.map((value) => rounded(value)),
      secondsByTenth: seconds.map((value) => rounded(value, 0)),
      liveSessions: live,
      storeMiB: rounded(statSync(join(dir, 'soak.db')).size / 2 ** 20),
    });
  }
} finally {
  await rb.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
