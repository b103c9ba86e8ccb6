// A rolebox process for the tool-approval crash tests: the SQLite store, function `deploy`
// (requires_approval_for deploy_tool) and agentEffects' main agent on a mock model that calls
// deploy_tool, then finishes. The tool appends the key it ran under to a file. `start` opens
// the session and, once the request is open and saved, answers it as the host (`approve` or
// `reject`); `resume` opens the stored session, whose pending agent effect runs again.
// JSON lines on stdout, each printed once what it reports is saved.
//   tsx --conditions=rolebox-source tool-approval-child.ts <start|resume> <db> <runsFile> [approve|reject] [pollMs]
import { appendFileSync } from 'node:fs';
import { tool } from 'ai';
import { z } from 'zod';
import { agentEffects, requireApproval } from '../../src/ai/index.js';
import { createRolebox, defineFunction, type SessionHandle } from '../../src/index.js';
import { SqliteSnapshotStore } from '../../src/sqlite.js';
import { scripted } from './scripted-model.js';

const [mode, dbPath, runsFile, answer = 'approve', pollMs = '5'] = process.argv.slice(2) as [
  string,
  string,
  string,
  string?,
  string?,
];

const model = scripted(
  { toolName: 'deploy_tool', input: { env: 'prod' } },
  { toolName: 'decide', input: { kind: 'finish', summary: 'shipped' } },
);

const deployTool = requireApproval(
  tool({
    inputSchema: z.object({ env: z.string() }),
    execute: async (input, { experimental_context }) => {
      const key = (experimental_context as { idempotencyKey: string }).idempotencyKey;
      appendFileSync(runsFile, `${key} ${input.env}\n`);
      return `deployed to ${input.env}`;
    },
  }),
  { pollMs: Number(pollMs) },
);

const store = new SqliteSnapshotStore(dbPath);
const rb = createRolebox({
  store,
  saveDebounceMs: 0,
  functions: [
    defineFunction({
      name: 'deploy',
      gate: 'signal_observed(answer)',
      requires_approval_for: ['deploy_tool'],
    }),
  ],
  effects: agentEffects({
    mainAgent: { model, tools: { deploy_tool: deployTool } },
    workers: {},
  }),
});

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

const requests = (session: SessionHandle) =>
  session.view().functions.find((fn) => fn.name === 'deploy')?.requests ?? [];

/** Prints the end: the agent's effect settled, with the request and the session's phase. */
const reachedOnce = (session: SessionHandle) => {
  rb.on('effect_settled', () => {
    const fn = session.view().functions.find((view) => view.name === 'deploy');
    print(
      {
        type: 'reached',
        phase: session.view().phase,
        request: fn?.requests[0]?.status,
        output: fn?.kv['tool_output:deploy:r1'] ?? null,
        pending: session.view().pendingEffects.length,
      },
      true,
    );
  });
};

await rb.start();
if (mode === 'start') {
  const session = await rb.openSession({ id: 'S' });
  reachedOnce(session);
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'ship' }],
    initialSkill: 'ship',
  });
  session.activate('deploy');
  session.send({ type: 'user_submitted_input', text: 'ship it' });
  const waitForRequest = setInterval(() => {
    const [request] = requests(session);
    if (request?.status !== 'open') return;
    clearInterval(waitForRequest);
    print({ type: 'requested', request });
    if (answer === 'approve') session.approve(request.id, { by: 'host' });
    else session.reject(request.id, { by: 'host', reason: 'not today' });
    print({ type: 'answered', status: requests(session)[0]?.status });
  }, 5);
} else {
  const session = await rb.openSession({ id: 'S' });
  reachedOnce(session);
  print({ type: 'resumed', request: requests(session)[0]?.status });
}
