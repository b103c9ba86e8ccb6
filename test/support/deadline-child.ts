// A rolebox process for the approval-deadline crash tests: the SQLite store, the real clock,
// and a function `deploy` whose requests expire after 300 ms (escalate). `start` opens a
// request and waits for it to expire; `resume` starts on the same file, lets any deadline
// due fire, and reports. Lines are JSON, printed once the state they reflect is saved:
// `asked`, one `expired` per expiry this process sent, and `state` (the requests' statuses).
// `expiry-saved` is a crash point of its own: reached once an expiry is saved and printed.
//   tsx --conditions=rolebox-source deadline-child.ts <start|resume> <db>

import { crashPoint } from '../../src/base/crash-point.js';
import { createRolebox, defineFunction } from '../../src/index.js';
import { SqliteSnapshotStore } from '../../src/sqlite.js';

const [mode, dbPath] = process.argv.slice(2) as [string, string];
const store = new SqliteSnapshotStore(dbPath);
const rb = createRolebox({
  store,
  saveDebounceMs: 0,
  functions: [
    defineFunction({ name: 'deploy', gate: 'signal_observed(answer)', approval_timeout: '300ms' }),
  ],
});

let printing = Promise.resolve();
const print = (line: Record<string, unknown>, after?: () => void | Promise<void>) => {
  printing = printing.then(async () => {
    await rb.flush();
    process.stdout.write(`${JSON.stringify(line)}\n`);
    await after?.();
  });
};

/** Prints the requests as stored, then exits. */
const finish = async () => {
  const session = await rb.openSession({ id: 'S', ifOpen: 'reuse' });
  const fn = session.view().functions.find((entry) => entry.name === 'deploy');
  const statuses = (fn?.requests ?? []).map((request) => `${request.id} ${request.status}`);
  print({ type: 'state', statuses, phase: fn?.phase }, async () => {
    await rb.stop();
    store.close();
    process.exit(0);
  });
};

rb.on('signal', (event) => {
  if (!event.receipt.expired) return;
  print({ type: 'expired', requests: event.receipt.requests }, () => {
    crashPoint('expiry-saved');
    if (mode === 'start') void finish();
  });
});

await rb.start();
if (mode === 'start') {
  const session = await rb.openSession({ id: 'S' });
  session.activate('deploy');
  session.signal({ type: 'need_approval', payload: { reason: 'drop tables' } });
  print({ type: 'asked' });
} else {
  // The deadline passed while no process ran: the stored wake-up fires it at start.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  await finish();
}
