// A rolebox process for the passivation crash test: runs the passivation load scenario
// (test/support/passivation-load.ts) on the store in <dir>, starting each session's loop
// or going on with the one stored there, until every loop has ended. Prints one JSON line
// when started, one per loop that ends (once saved), and one when all have ended.
//   node --import tsx --conditions=rolebox-source passivation-load-child.ts <dir> <idleMs>
import { runLoadScenario } from './passivation-load.js';

const [dir, idleMs] = process.argv.slice(2) as [string, string];
const print = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

print({ type: 'started', pid: process.pid });
const outcome = await runLoadScenario(
  {
    dir,
    idleMs: Number(idleMs),
    onFinished: (sessionId, phase) => print({ type: 'loop_finished', sessionId, phase }),
  },
  600_000,
);
print({ type: 'done', ended: Object.fromEntries(outcome.ended) });
process.exit(0);
