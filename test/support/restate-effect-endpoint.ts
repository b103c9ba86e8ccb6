// An endpoint process for the Restate effect kill test: the session object and an effect
// service whose model calls (inside ctx.run) are appended to a file, so that the test
// counts them across SIGKILLs. Usage: restate-effect-endpoint.ts <port> <calls-file>.
import { appendFileSync } from 'node:fs';
import { roleboxEffectService, serveRoleboxOnRestate } from '../../src/restate/index.js';

const [port = '0', calls = 'calls.txt'] = process.argv.slice(2);

/** One model call, journaled: a retried invocation answers it from the journal. */
const model = (id: string) => () => {
  appendFileSync(calls, `${id}\n`);
  return `answer to ${id}`;
};

const effects = roleboxEffectService('kill-effects', {
  invoke_main_agent: async (effect, ctx) => {
    await ctx.run('model', model(effect.id));
    // A window in which the process may die with the model call journaled.
    await ctx.sleep(200);
    return [
      {
        type: 'main_agent_decision_created',
        decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
      },
    ];
  },
  run_worker: async (effect, ctx) => {
    const text = await ctx.run('model', model(effect.id));
    await ctx.sleep(200);
    return [
      { type: 'worker_started', workerId: effect.workerId, acceptanceMode: 'user_confirmed' },
      { type: 'worker_needs_input', workerId: effect.workerId, questions: [text] },
    ];
  },
});

const endpoint = await serveRoleboxOnRestate({
  effects: { service: 'kill-effects' },
  services: [effects],
}).listen(Number(port));
process.stdout.write(`${JSON.stringify({ type: 'listening', url: endpoint.url })}\n`);
