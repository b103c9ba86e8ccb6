// The writing-agent flow (examples/writing-agent.ts: intake, decision, approval, worker,
// review, revision, decision, worker, acceptance, finish) run four ways, each on its own
// SQLite store, the same number of sessions, flushed at the end:
//  - handlers: createRolebox({ effects: agentEffects(…) }) on instant mock models; the
//    runtime runs every effect (outbox, recorded results) and the host only plays the user;
//  - by hand, same agents: no handlers; the host calls the same agentEffects handlers
//    itself for each effect a send answers, and sends their events (the same model calls);
//  - by hand, same agents, saved: as the last, with rb.flush() before and after each
//    handler, the two saves the runtime makes per effect (before it runs, and its result);
//  - by hand, events only: the host sends the same events with no model at all.
// Goal (issue 24): handlers ≤ 1.2× the host doing it by hand. The like-for-like ratio
// (same model calls) is the goal's figure; the saved and events-only ratios are beside it.
// Each round runs the variants back to back; the ratios are the medians of the per-round
// ratios (with their min and max), so that drift between rounds cancels out.
// Run: npm run bench:writing-agent
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { type AgentEffectHandlers, agentEffects } from '../src/ai/index.js';
import {
  createRolebox,
  type Rolebox,
  type RuntimeEvent,
  type SendResult,
  type SessionHandle,
  type SessionView,
} from '../src/index.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { atMost, median, rounded, timeNs, writeResult } from './measure.js';

/** An effect as `send` answers it. */
type SessionEffectBody = SendResult['effects'][number];

const FLOWS = 30;
const SAMPLES = 9;
const STARTED: RuntimeEvent = {
  type: 'session_started',
  availableSkills: [{ name: 'write' }],
  initialSkill: 'write',
  intakePrompt: 'What shall I write?',
};

type Variant = 'handlers' | 'byHandAgents' | 'byHandAgentsSaved' | 'byHandEvents';

/** The user's move at a pause (the same script as the example's). */
function userMove(session: SessionHandle, view: SessionView): RuntimeEvent | undefined {
  const reason = view.waitingReason;
  if (view.phase !== 'waiting_user' || reason === null) return undefined;
  switch (reason.kind) {
    case 'intake':
      return { type: 'user_submitted_input', text: 'A haiku about autumn leaves' };
    case 'approve_step':
      return { type: 'user_approved_next_step', decisionId: reason.decisionId };
    case 'review_artifact':
      return session.artifacts.list().length === 1
        ? { type: 'user_requested_revision', instruction: 'shorter' }
        : { type: 'user_accepted_artifact', artifactId: reason.artifactId };
    case 'revision':
      return { type: 'user_submitted_input', text: 'Please revise it.' };
    default:
      throw new Error(`no move for ${reason.kind}`);
  }
}

/** An instant model: one tool call per request, chosen from the prompt as the example's. */
function instantModel(role: 'main' | 'poet'): MockLanguageModelV3 {
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const text = JSON.stringify(prompt);
      const [toolName, input] =
        role === 'poet'
          ? ['write_artifact', { content: text.includes('Your current draft') ? 'short' : 'long' }]
          : ['decide', mainMove(text)];
      return {
        content: [{ type: 'tool-call', toolCallId: 'c', toolName, input: JSON.stringify(input) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}

function mainMove(prompt: string): Record<string, unknown> {
  if (prompt.includes('because: user_accepted_artifact')) return { kind: 'finish' };
  if (prompt.includes('revision_requested')) return { kind: 'run_worker', workerId: 'poet' };
  return { kind: 'run_worker', workerId: 'poet', requiresApproval: true };
}

function agents(): AgentEffectHandlers {
  return agentEffects({
    mainAgent: { model: instantModel('main') },
    workers: { poet: { model: instantModel('poet') } },
  });
}

/** The events-only host: what the agents would answer, sent by hand (artifact written first). */
function handEvents(session: SessionHandle, effect: SessionEffectBody, n: number): RuntimeEvent[] {
  if (effect.type === 'invoke_main_agent') {
    // As the scripted main agent: approval for the first draft, none for the revision.
    const decision =
      effect.reason === 'user_accepted_artifact'
        ? ({ id: `d${n}`, kind: 'finish' } as const)
        : ({
            id: `d${n}`,
            kind: 'run_worker',
            workerId: 'poet',
            requiresApproval: session.artifacts.list().length === 0,
          } as const);
    return [{ type: 'main_agent_decision_created', decision }];
  }
  if (effect.type === 'run_worker') {
    const draft = session.artifacts.write({ name: 'poet', workerId: 'poet', content: `v${n}` });
    return [
      { type: 'worker_started', workerId: 'poet', acceptanceMode: 'user_confirmed' },
      { type: 'worker_completed', artifactId: draft.id },
    ];
  }
  return [];
}

/** One flow with the host carrying out the effects itself. */
async function byHandFlow(
  session: SessionHandle,
  handlers: AgentEffectHandlers | undefined,
  save?: () => Promise<void>,
): Promise<void> {
  const signal = new AbortController().signal;
  let n = 0;
  let queue: SessionEffectBody[] = [...session.send(STARTED).effects];
  for (;;) {
    while (queue.length > 0) {
      const effect = queue.shift() as SessionEffectBody;
      n += 1;
      let events: RuntimeEvent[];
      if (handlers && effect.type in handlers) {
        const ctx = { session, signal, attempt: 1, idempotencyKey: `${session.id}:h${n}` };
        const handler = handlers[effect.type as keyof AgentEffectHandlers] as (
          effect: SessionEffectBody,
          ctx: unknown,
        ) => Promise<RuntimeEvent[]>;
        await save?.();
        events = await handler(effect, ctx);
        await save?.();
      } else events = handlers ? [] : handEvents(session, effect, n);
      for (const event of events) queue.push(...session.send(event).effects);
    }
    const move = userMove(session, session.view());
    if (!move) break;
    queue = [...session.send(move).effects];
  }
  if (session.view().phase !== 'done') throw new Error(`flow ended in ${session.view().phase}`);
}

/** One flow with the runtime running the effects: the host only plays the user. */
async function handlersFlow(rb: Rolebox, session: SessionHandle): Promise<void> {
  session.send(STARTED);
  for (;;) {
    const view = await nextPause(rb, session);
    const move = userMove(session, view);
    if (!move) break;
    session.send(move);
  }
  if (session.view().phase !== 'done') throw new Error(`flow ended in ${session.view().phase}`);
}

/**
 * Waits until the session is not running (its effects ran): checked after each host event
 * (the runner reports effect_settled and the like), and every millisecond in case none comes.
 */
function nextPause(rb: Rolebox, session: SessionHandle): Promise<SessionView> {
  return new Promise((resolve) => {
    let done = false;
    const check = () => {
      if (done) return;
      const view = session.view();
      if (view.phase === 'running') return;
      done = true;
      stop();
      clearInterval(timer);
      resolve(view);
    };
    const stop = rb.on('*', () => setImmediate(check));
    const timer = setInterval(check, 1);
    setImmediate(check);
  });
}

/** ns per flow of one variant, FLOWS sessions on a fresh store, flushed at the end. */
async function sample(variant: Variant): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'rolebox-bench-writing-'));
  const store = new SqliteSnapshotStore(join(dir, 'state.db'));
  const rb = createRolebox(variant === 'handlers' ? { store, effects: agents() } : { store });
  await rb.start();
  const handlers = variant.startsWith('byHandAgents') ? agents() : undefined;
  const save = variant === 'byHandAgentsSaved' ? () => rb.flush() : undefined;
  const ns = await timeNs(async () => {
    for (let index = 0; index < FLOWS; index++) {
      const session = await rb.openSession({ id: `s${index}` });
      if (variant === 'handlers') await handlersFlow(rb, session);
      else await byHandFlow(session, handlers, save);
    }
    await rb.flush();
  });
  await rb.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return ns / FLOWS;
}

const variants: Variant[] = ['handlers', 'byHandAgents', 'byHandAgentsSaved', 'byHandEvents'];
for (const variant of variants) await sample(variant); // warm-up: JIT, `ai` loaded
const samples: Record<Variant, number[]> = {
  handlers: [],
  byHandAgents: [],
  byHandAgentsSaved: [],
  byHandEvents: [],
};
for (let round = 0; round < SAMPLES; round++)
  for (const variant of variants) samples[variant].push(await sample(variant));
/** handlers / `base` per round (the variants of a round ran back to back), one per round. */
const roundRatios = (base: Variant) =>
  samples.handlers.map((ns, round) => ns / (samples[base][round] as number));
/** The median of the per-round ratios: drift between rounds cancels out. */
const pairedRatio = (base: Variant) => median(roundRatios(base));
const spread = (base: Variant) => [
  rounded(Math.min(...roundRatios(base))),
  rounded(Math.max(...roundRatios(base))),
];
const us = (variant: Variant) => rounded(median(samples[variant]) / 1000, 1);

await writeResult('writing-agent', {
  description:
    'issue 24: the writing-agent flow with agentEffects handlers run by the runtime (instant mock models, SQLite store) vs the host carrying out the same effects by hand on the same store',
  flowsPerSample: FLOWS,
  samples: SAMPLES,
  usPerFlow: Object.fromEntries(variants.map((variant) => [variant, us(variant)])),
  ratio: atMost(pairedRatio('byHandAgents'), 1.2, '×'),
  ratioRoundsMinMax: spread('byHandAgents'),
  ratioToSavedByHand: rounded(pairedRatio('byHandAgentsSaved')),
  ratioToEventsOnly: rounded(pairedRatio('byHandEvents')),
});
