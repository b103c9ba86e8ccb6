// A process that dispatches one round with the command dispatcher and dies by SIGKILL at
// the dispatch point named in DIE_AT, for the crash tests of test/command-dispatcher.test.ts.
//   node --import tsx --conditions=rolebox-source dispatch-child.ts <stateDir> <cwd> <worker command>
import { CommandDispatcher } from '../../src/node.js';

const [stateDir, cwd, command] = process.argv.slice(2) as [string, string, string];
const dieAt = process.env.DIE_AT;
const dispatcher = new CommandDispatcher({
  command,
  stateDir,
  cwd,
  onDispatchPoint: (point) => {
    if (point === dieAt) process.kill(process.pid, 'SIGKILL');
  },
});
const task = await dispatcher.dispatchRound(
  { loopId: 'L1', round: 1, originSessionId: 'S', agent: 'default', prompt: 'x' },
  'L1:1',
);
process.stdout.write(`${JSON.stringify({ type: 'dispatched', taskId: task.taskId })}\n`);
dispatcher.close();
