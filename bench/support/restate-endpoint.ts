// The endpoint process of the Restate benchmarks: the rolebox session object (with an
// approval function, and a worker service whose rounds are done at once) and, beside it, a bare virtual object doing one state get + set — the
// baseline of P9, served by the same process. `--processes N` forks N processes that share
// the port (cluster), as `rolebox restate serve --processes` does.
// Usage: tsx bench/support/restate-endpoint.ts <port> <processes>
import cluster from 'node:cluster';
import * as restate from '@restatedev/restate-sdk';
import { defineFunction } from '../../src/index.js';
import { roleboxWorker, serveRoleboxOnRestate } from '../../src/restate/index.js';

const port = Number(process.argv[2]);
const processes = Number(process.argv[3] ?? 1);

if (processes > 1 && cluster.isPrimary) {
  let ready = 0;
  cluster.on('message', () => {
    if (++ready === processes) console.log(`READY ${port}`);
  });
  for (let i = 0; i < processes; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill('SIGKILL');
    process.exit(0);
  });
} else {
  const bare = restate.object({
    name: 'bare',
    handlers: {
      signal: async (ctx: restate.ObjectContext, body: unknown) => {
        const count = ((await ctx.get<number>('count')) ?? 0) + 1;
        ctx.set('count', count);
        return { result: { count, body }, events: [] };
      },
    },
  });
  // What a rolebox step asks of Restate, without rolebox: the same state reads, the step's
  // journaled time (ctx.date.now, one round trip to the server) and the same writes (the
  // session's record and the step's time).
  const floor = restate.object({
    name: 'floor',
    handlers: {
      signal: async (ctx: restate.ObjectContext, body: unknown) => {
        await ctx.get('recordIds');
        const record = (await ctx.get<string>('record:session')) ?? 'x'.repeat(1500);
        await ctx.get('record:$system');
        await ctx.get('tasks');
        const now = await ctx.date.now();
        ctx.set('record:session', `${record.slice(0, 1499)}${now % 10}`);
        ctx.set('at', now);
        return { result: { body }, events: [] };
      },
    },
  });
  // P13's loops: each round is done at once (the soak measures the endpoint, not a worker).
  const worker = roleboxWorker('bench-worker', async (_ctx, round) => `round ${round.round} done`);
  const answered = 'signal_observed(answer)';
  const listening = await serveRoleboxOnRestate({
    functions: [defineFunction({ name: 'approval', gate: answered, continue_until: answered })],
    services: [bare, floor, worker],
    workers: { service: 'bench-worker' },
    // P13 soaks memory: its loops need not pause between rounds.
    limits: { interRoundDelayMs: 0 },
    logger: () => {},
  }).listen(port);
  if (cluster.isWorker) {
    process.on('disconnect', () => process.exit(0));
    process.send?.('ready');
  } else console.log(`READY ${listening.port}`);
  // A clean exit (a CPU profile is written on one).
  process.on('SIGINT', () => process.exit(0));
  // P13 asks for the heap once garbage is collected (node --expose-gc).
  process.on('SIGUSR2', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    for (let round = 0; round < 4 && gc; round++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    console.log(`HEAP ${process.memoryUsage().heapUsed}`);
  });
}
