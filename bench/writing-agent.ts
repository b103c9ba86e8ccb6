// The writing-agent flow (examples/writing-agent.ts: intake, decision, approval, worker,
// review, revision, decision, worker, acceptance, finish) run five ways, each on its own
// SQLite store, the same number of sessions, flushed at the end:
//  - handlers: createRolebox({ effects: agentEffects(…) }) on instant mock models; the
//    runtime runs every effect (outbox, recorded results) and the host only plays the user;
//  - by hand, same agents, saved: no handlers; the host calls the same agentEffects handlers
//    itself for each effect a send answers and sends their events (the same model calls),
//    and makes the durable writes that give what the runtime guarantees after a crash: the
//    session saved before the handler runs (rb.flush(), so the effect is stored); after it,
//    what the handler wrote into the session (a worker's draft) saved (rb.flush() again,
//    a no-op when it wrote nothing), then its result written to the store before its
//    events are sent (as a hand-written outbox would). The runtime writes the draft and the
//    result in one transaction; the host cannot put its row in rolebox's save;
//  - by hand, result rows only: as the last without the save after the handler (the
//    earlier baseline): a crash between the row and the next save keeps a result naming a
//    draft the store does not have, which the session then refuses;
//  - by hand, same agents: no saves but the debounced ones (it keeps none of the
//    guarantees: a crash loses the effect or calls the model again);
//  - by hand, events only: the host sends the same events with no model at all.
// Goal (issue 24): handlers ≤ 1.2× the host doing it by hand. The goal's figure is against
// the by-hand host with the same model calls and the same guarantees; the others are beside.
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
const SAMPLES = 25;
const STARTED: RuntimeEvent = {
  type: 'session_started',
  availableSkills: [{ name: 'write' }],
  initialSkill: 'write',
  intakePrompt: 'What shall I write?',
};

type Variant =
  | 'handlers'
  | 'byHandAgents'
  | 'byHandAgentsSaved'
  | 'byHandAgentsRowsOnly'
  | 'byHandEvents';

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

/** What a saved by-hand host writes around each handler. */
interface HandSaves {
  /** Before the handler: the session, with the effect it answered, is stored. */
  before(): Promise<void>;
  /** After the handler: its result (and, with the same guarantees, what it wrote) is stored before its events are sent. */
  result(key: string, events: readonly RuntimeEvent[]): Promise<void>;
}

/** One flow with the host carrying out the effects itself. */
async function byHandFlow(
  session: SessionHandle,
  handlers: AgentEffectHandlers | undefined,
  saves?: HandSaves,
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
        await saves?.before();
        events = await handler(effect, ctx);
        await saves?.result(ctx.idempotencyKey, events);
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
 * Waits until the session is not running (its effects ran): checked after each effect is
 * settled or fails (only then can a running session pause: its result was applied), and
 * every millisecond in case none comes. (The by-hand host reads the view once per pause:
 * this host reads it about once per effect, not on every host event.)
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
    const stop = rb.on('*', (event) => {
      if (event.type === 'effect_settled' || event.type === 'effect_failed') setImmediate(check);
    });
    const timer = setInterval(check, 1);
    setImmediate(check);
  });
}

/** Store writes (save transactions) per variant, warm-up included: the sides do the same. */
const writes: Record<Variant, number> = {
  handlers: 0,
  byHandAgents: 0,
  byHandAgentsSaved: 0,
  byHandAgentsRowsOnly: 0,
  byHandEvents: 0,
};

/** The SQLite store, counting its save transactions for `variant`. */
class CountingStore extends SqliteSnapshotStore {
  constructor(
    path: string,
    readonly variant: Variant,
  ) {
    super(path);
  }

  override save(...args: Parameters<SqliteSnapshotStore['save']>) {
    writes[this.variant] += 1;
    return super.save(...args);
  }
}

/**
 * The process's CPU time (µs, all threads) per flow, beside the wall time: on a machine
 * shared with other work it varies less, since time spent waiting for a core is not in it.
 */
const cpuUs: Record<Variant, number[]> = {
  handlers: [],
  byHandAgents: [],
  byHandAgentsSaved: [],
  byHandAgentsRowsOnly: [],
  byHandEvents: [],
};

/** ns per flow of one variant, FLOWS sessions on a fresh store, flushed at the end. */
async function sample(variant: Variant): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'rolebox-bench-writing-'));
  const store = new CountingStore(join(dir, 'state.db'), variant);
  const rb = createRolebox(variant === 'handlers' ? { store, effects: agents() } : { store });
  await rb.start();
  const handlers = variant.startsWith('byHandAgents') ? agents() : undefined;
  const resultRow = async (key: string, events: readonly RuntimeEvent[]) => {
    await store.save([{ id: `result:${key}`, data: JSON.stringify(events) }]);
  };
  const saves: HandSaves | undefined =
    variant === 'byHandAgentsSaved'
      ? {
          before: () => rb.flush(),
          // The draft a worker wrote is stored before the result that names it.
          result: async (key, events) => {
            await rb.flush();
            await resultRow(key, events);
          },
        }
      : variant === 'byHandAgentsRowsOnly'
        ? { before: () => rb.flush(), result: resultRow }
        : undefined;
  const cpuBefore = process.cpuUsage();
  const ns = await timeNs(async () => {
    for (let index = 0; index < FLOWS; index++) {
      const session = await rb.openSession({ id: `s${index}` });
      if (variant === 'handlers') await handlersFlow(rb, session);
      else await byHandFlow(session, handlers, saves);
    }
    await rb.flush();
  });
  const cpu = process.cpuUsage(cpuBefore);
  cpuUs[variant].push((cpu.user + cpu.system) / FLOWS);
  await rb.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return ns / FLOWS;
}

const variants: Variant[] = [
  'handlers',
  'byHandAgents',
  'byHandAgentsSaved',
  'byHandAgentsRowsOnly',
  'byHandEvents',
];
for (const variant of variants) await sample(variant); // warm-up: JIT, `ai` loaded
for (const variant of variants) cpuUs[variant].length = 0;
const samples: Record<Variant, number[]> = {
  handlers: [],
  byHandAgents: [],
  byHandAgentsSaved: [],
  byHandAgentsRowsOnly: [],
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
/** handlers / `base` in CPU time, per round as the wall-time ratio. */
const cpuRatios = (base: Variant) =>
  cpuUs.handlers.map((cpu, round) => cpu / (cpuUs[base][round] as number));
const us = (variant: Variant) => rounded(median(samples[variant]) / 1000, 1);

await writeResult('writing-agent', {
  description:
    "issue 24: the writing-agent flow with agentEffects handlers run by the runtime (instant mock models, SQLite store) vs the host carrying out the same effects by hand on the same store with the same model calls and the same guarantees after a crash (ratio: the session saved before each handler; the handler's draft saved, then its result row written, before its events are sent); beside: a host that writes result rows without saving the draft first, one that saves nothing, one that sends the events with no model",
  flowsPerSample: FLOWS,
  samples: SAMPLES,
  usPerFlow: Object.fromEntries(variants.map((variant) => [variant, us(variant)])),
  ratio: atMost(pairedRatio('byHandAgentsSaved'), 1.2, '×'),
  ratioRoundsMinMax: spread('byHandAgentsSaved'),
  cpuUsPerFlow: Object.fromEntries(
    variants.map((variant) => [variant, rounded(median(cpuUs[variant]), 0)]),
  ),
  cpuRatio: rounded(median(cpuRatios('byHandAgentsSaved'))),
  cpuRatioRoundsMinMax: [
    rounded(Math.min(...cpuRatios('byHandAgentsSaved'))),
    rounded(Math.max(...cpuRatios('byHandAgentsSaved'))),
  ],
  ratioToResultRowsOnly: rounded(pairedRatio('byHandAgentsRowsOnly')),
  ratioToResultRowsOnlyRoundsMinMax: spread('byHandAgentsRowsOnly'),
  ratioToUnsavedByHand: rounded(pairedRatio('byHandAgents')),
  ratioToUnsavedByHandRoundsMinMax: spread('byHandAgents'),
  ratioToEventsOnly: rounded(pairedRatio('byHandEvents')),
  storeWritesPerFlow: Object.fromEntries(
    variants.map((variant) => [variant, rounded(writes[variant] / (FLOWS * (SAMPLES + 1)), 1)]),
  ),
});
