// Persistence costs. For 100, 1 000 and 10 000 live sessions, each in a fresh process:
//  - restore cost per session (rb.start() over a store of N sessions);
//  - the cost of one event, with its save (flush after it) and without (the same events,
//    only marked dirty); the difference is the save cost per event, which must stay flat:
//    a save writes only the session that changed.
// Figures are ratios within this run. Run: npm run bench:persistence
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createRolebox,
  defineFunction,
  MemorySnapshotStore,
  type SnapshotStore,
} from '../src/index.js';
import { sealRecord, unsealedText } from '../src/persistence/record-checksum.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { median, timeNs, writeResult } from './measure.js';

const SIZES = [100, 1_000, 10_000];
const WARM_UP = 500;
const EVENTS = 4_000;
const SAMPLES = 3;
const TEMPLATE_ID = 'TEMPLATESESSION';
const functions = [
  defineFunction({
    name: 'approval',
    gate: 'signal_observed(answer)',
    continue_until: 'signal_observed(answer)',
  }),
];

interface Sample {
  readonly restoreUsPerSession: number;
  readonly eventUs: number;
  readonly eventAndSaveUs: number;
}

/** One stored session (a function activated, two signals, an artifact), copied N times. */
async function template(): Promise<{ session: string; system: string }> {
  const store = new MemorySnapshotStore();
  const rb = createRolebox({ store, functions });
  await rb.start();
  const session = await rb.openSession({ id: TEMPLATE_ID });
  session.activate('approval');
  session.signal({ type: 'need_approval', payload: { reason: 'benchmark' } });
  session.signal({ type: 'progress', payload: { pct: 50 } });
  session.artifacts.write({ name: 'notes', content: 'x'.repeat(200) });
  await rb.stop();
  return {
    session: store.records.get(TEMPLATE_ID) as string,
    system: store.records.get('$system') as string,
  };
}

/** Runs in a child process: measures one size with one store kind. */
async function measureOne(size: number, kind: 'sqlite' | 'memory'): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), 'rolebox-bench-'));
  const store: SnapshotStore =
    kind === 'sqlite' ? new SqliteSnapshotStore(join(dir, 'state.db')) : new MemorySnapshotStore();
  const records = await template();
  await store.save([
    ...Array.from({ length: size }, (_, index) => ({
      id: `s${index}`,
      // The copy is renamed, so sealed again: a record like the ones rolebox writes.
      data: sealRecord(unsealedText(records.session).replaceAll(TEMPLATE_ID, `s${index}`)),
    })),
    { id: '$system', data: records.system },
  ]);
  const rb = createRolebox({ store, functions });
  const restoreNs = await timeNs(() => rb.start());
  const handles = Array.from({ length: WARM_UP + 2 * EVENTS }, (_, index) =>
    rb.session(`s${(index * 7919) % size}`),
  );
  let next = 0;
  const events = async (count: number, save: boolean) => {
    for (let i = 0; i < count; i++) {
      (handles[next++] as (typeof handles)[number]).signal({
        type: 'progress',
        payload: { step: next },
      });
      if (save) await rb.flush();
    }
  };
  await events(WARM_UP, true);
  // Without saving: the same work, only marked dirty (the loop never yields, so the debounce never fires).
  const eventNs = await timeNs(() => events(EVENTS, false));
  await rb.flush();
  const eventAndSaveNs = await timeNs(() => events(EVENTS, true));
  await rb.stop();
  await store.close?.();
  rmSync(dir, { recursive: true, force: true });
  return {
    restoreUsPerSession: restoreNs / size / 1000,
    eventUs: eventNs / EVENTS / 1000,
    eventAndSaveUs: eventAndSaveNs / EVENTS / 1000,
  };
}

const [, , mode, size, kind] = process.argv;
if (mode === '--one') {
  process.stdout.write(JSON.stringify(await measureOne(Number(size), kind as 'sqlite' | 'memory')));
} else {
  const round = (value: number) => Number(value.toFixed(1));
  const ratio = (value: number | undefined, base: number | undefined) =>
    Number(((value as number) / (base as number)).toFixed(2));
  const rows = [];
  for (const size of SIZES) {
    const row: Record<string, number> = { liveSessions: size };
    for (const kind of ['sqlite', 'memory'] as const) {
      const samples: Sample[] = [];
      for (let sample = 0; sample < SAMPLES; sample++) {
        const output = execFileSync(
          process.execPath,
          [
            '--import',
            'tsx',
            '--conditions=rolebox-source',
            import.meta.filename,
            '--one',
            String(size),
            kind,
          ],
          {
            encoding: 'utf8',
            maxBuffer: 1 << 20,
          },
        );
        samples.push(JSON.parse(output) as Sample);
      }
      const event = median(samples.map((sample) => sample.eventUs));
      const withSave = median(samples.map((sample) => sample.eventAndSaveUs));
      row[`${kind}EventUs`] = round(event);
      row[`${kind}EventAndSaveUs`] = round(withSave);
      row[`${kind}SaveUsPerEvent`] = round(withSave - event);
      if (kind === 'sqlite')
        row.restoreUsPerSession = round(
          median(samples.map((sample) => sample.restoreUsPerSession)),
        );
    }
    rows.push(row);
    console.error(`measured ${size} live sessions`);
  }
  const base = rows[0] as Record<string, number>;
  await writeResult('persistence-cost', {
    description:
      'per event at N live sessions, each size in a fresh process: the event alone, the event and its save (flush after each), and the save alone (the difference); the save ratios to 100 sessions must stay near 1 (a save that grew with the number of sessions would reach ~100 at 10 000)',
    warmUpEvents: WARM_UP,
    eventsPerMeasure: EVENTS,
    samples: SAMPLES,
    rows,
    flatness: rows.map((row) => ({
      liveSessions: row.liveSessions,
      sqliteSaveRatioTo100: ratio(row.sqliteSaveUsPerEvent, base.sqliteSaveUsPerEvent),
      memorySaveRatioTo100: ratio(row.memorySaveUsPerEvent, base.memorySaveUsPerEvent),
      restoreRatioTo100: ratio(row.restoreUsPerSession, base.restoreUsPerSession),
    })),
  });
}
