// A rolebox process for the effect crash tests: the SQLite store, and (with `worker`) a
// run_worker handler that logs each call (effect id, attempt, key) to a file before it
// works. `start` drives a session to the approval of a worker step; `resume` opens the
// stored session, which runs or applies what its outbox holds. Host events are printed as
// JSON lines once the state they reflect is saved; `reached` says where the flow ended.
//   tsx --conditions=rolebox-source effect-child.ts <start|resume> <db> <callsFile> <worker|none>
import { appendFileSync } from 'node:fs';
import { createRolebox, type EffectHandlers, type SessionHandle } from '../../src/index.js';
import { SqliteSnapshotStore } from '../../src/sqlite.js';

const [mode, dbPath, callsFile, handlers] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
];
const effects: EffectHandlers =
  handlers === 'worker'
    ? {
        run_worker: async (effect, ctx) => {
          appendFileSync(callsFile, `${effect.id} ${ctx.attempt} ${ctx.idempotencyKey}\n`);
          await new Promise((resolve) => setTimeout(resolve, 20));
          // Idempotent by its key: a second run reuses the artifact the first one wrote.
          const written =
            ctx.session.artifacts
              .list()
              .find((artifact) => artifact.summary === ctx.idempotencyKey) ??
            ctx.session.artifacts.write({
              name: 'poem',
              workerId: effect.workerId,
              content: 'roses',
              summary: ctx.idempotencyKey,
            });
          return [
            { type: 'worker_started', workerId: effect.workerId, acceptanceMode: 'user_confirmed' },
            { type: 'worker_completed', artifactId: written.id },
          ];
        },
      }
    : {};
const store = new SqliteSnapshotStore(dbPath);
const rb = createRolebox({ store, effects, saveDebounceMs: 0 });
let session: SessionHandle | undefined;

let printing = Promise.resolve();
const print = (line: Record<string, unknown>, exit = false) => {
  printing = printing.then(async () => {
    await rb.flush();
    process.stdout.write(`${JSON.stringify(line)}\n`);
    if (exit) {
      await rb.stop();
      store.close();
      process.exit(0);
    }
  });
};

/** Prints where the flow is once it waits for the review, with what was applied. */
const checkReached = () => {
  if (!session) return;
  const view = session.view();
  if (view.waitingReason?.kind !== 'review_artifact') return;
  const context = rb.system.system.get('session:S')?.getSnapshot().context as
    | { history: { event: { type: string } }[] }
    | undefined;
  const history = (context?.history ?? []).map((entry) => entry.event.type);
  print(
    {
      type: 'reached',
      where: view.waitingReason.kind,
      pending: view.pendingEffects.length,
      artifacts: view.artifacts.length,
      workerEvents: history.filter((type) => type.startsWith('worker_')),
    },
    true,
  );
};

rb.on('*', (event) => {
  if (event.type.startsWith('effect'))
    print({
      type: event.type,
      ...('effectId' in event ? { effectId: event.effectId } : {}),
      ...(event.type === 'effect'
        ? { effectId: event.effect.id, redelivered: event.redelivered === true }
        : {}),
    });
  if (event.type === 'effect_settled') queueMicrotask(checkReached);
});

await rb.start();
if (mode === 'start') {
  session = await rb.openSession({ id: 'S' });
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
  });
  session.send({ type: 'user_submitted_input', text: 'a poem' });
  session.send({
    type: 'main_agent_decision_created',
    decision: { id: 'd1', kind: 'run_worker', workerId: 'poet', requiresApproval: true },
  });
  const approved = session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
  print({ type: 'approved', effectIds: approved.effects.map((effect) => effect.id) });
} else {
  session = await rb.openSession({ id: 'S' });
  print({ type: 'resumed', pending: session.view().pendingEffects.map((entry) => entry.id) });
  checkReached();
}
