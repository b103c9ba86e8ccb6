// A rolebox process for the crash tests: starts (or resumes) a three-round loop with the
// SQLite store and the command dispatcher. Every host event is printed as one JSON line,
// and only once the state it reflects has been flushed to the store, so the test knows
// exactly what was saved when it kills this process. On `resume` it only starts: the
// stored loop's wake-up (its deadline, its worker's end) activates the session.
//   tsx --conditions=rolebox-source crash-child.ts <start|resume> <db> <stateDir> <worker command> <delayMs>
import { createRolebox, type HostEvent } from '../../src/index.js';
import { CommandDispatcher } from '../../src/node.js';
import { SqliteSnapshotStore } from '../../src/sqlite.js';

const [mode, dbPath, stateDir, worker, delayMs] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const store = new SqliteSnapshotStore(dbPath);
const dispatcher = new CommandDispatcher({ command: worker, stateDir, orphanCheckMs: 100 });
const rb = createRolebox({
  store,
  dispatcher,
  saveDebounceMs: 0,
  limits: { interRoundDelayMs: Number(delayMs) },
});

let printing = Promise.resolve();
const print = (event: HostEvent) => {
  const line =
    event.type === 'note'
      ? { type: 'note', text: event.text }
      : event.type === 'round_started'
        ? { type: 'round_started', round: event.round, taskId: event.taskId }
        : event.type === 'loop_finished'
          ? { type: 'loop_finished', phase: event.phase }
          : undefined;
  if (!line) return;
  printing = printing.then(async () => {
    await rb.flush();
    process.stdout.write(`${JSON.stringify(line)}\n`);
    if (line.type === 'loop_finished') {
      await rb.stop();
      await store.close();
      process.exit(0);
    }
  });
};
rb.on('*', print);

const report = await rb.start();
process.stdout.write(
  `${JSON.stringify({ type: 'started', mode, restored: report.restored, wakeUps: report.wakeUps, failed: report.failed.length })}\n`,
);
if (mode === 'start') {
  const session = await rb.openSession({ id: 'S' });
  const started = session.startLoop('|loop:3| crash test');
  if (!started.ok) throw new Error(started.reason);
}
