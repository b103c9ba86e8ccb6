// `npm run example:writing-agent` runs this: a writing session whose agents are effect
// handlers (`agentEffects`): the main agent and the poet run when the session asks for them,
// and the host only plays the user: it gives the brief, approves the poet's step, asks for a
// revision, accepts the second draft. The flow: intake → decision → approval → worker →
// review → revision → decision → worker → acceptance → finish.
//
// The models are the AI SDK's mock, scripted to behave like agents, so this runs offline.
// For a real provider, change one line: `const model = (_role: 'main' | 'poet') =>
// openai('gpt-4.1')` (or any AI SDK model); nothing else changes.
//
// The session lives in a SQLite store, its pending effects with it: run this again after a
// kill (WRITING_AGENT_RESUME=1) and it goes on from where the store left it; the runtime runs
// what was pending, and an agent whose answer was saved is not called again.
// WRITING_AGENT_STORE names the store file (default
// .rolebox/writing-agent.db, emptied first unless WRITING_AGENT_RESUME=1);
// WRITING_AGENT_CALLS names a file that gets one line per model call: the effect id and
// the agent.
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { createRolebox, type SessionHandle } from 'rolebox';
import { agentEffects } from 'rolebox/ai';
import { SqliteSnapshotStore } from 'rolebox/sqlite';

const file = process.env.WRITING_AGENT_STORE ?? '.rolebox/writing-agent.db';
const resume = process.env.WRITING_AGENT_RESUME === '1';
if (!resume) for (const end of ['', '-wal', '-shm']) rmSync(file + end, { force: true });
mkdirSync(dirname(file), { recursive: true });

const model = (role: 'main' | 'poet') => scriptedAgent(role);
const store = new SqliteSnapshotStore(file);
const agents = agentEffects({
  mainAgent: { model: model('main') },
  workers: {
    poet: { model: model('poet'), description: 'writes short poems', artifactName: 'haiku' },
  },
});
// The runtime runs each effect the session asks for with its handler, and applies the
// events the handler returns (recorded and saved first, so a restart never runs it twice).
const rb = createRolebox({ store, effects: agents });
await rb.start();
const session = await rb.openSession({ id: 'haiku', ifOpen: 'reuse' });
if (session.view().phase === 'idle') {
  session.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
    intakePrompt: 'What shall I write?',
  });
}
await playTheUser(session);
console.log(`facts: ${session.facts().map((fact) => `${fact.name}: ${fact.content}`)}`);
await rb.stop();
await store.close();

/** The host's part: what the user does at each pause, until the flow is done. */
async function playTheUser(session: SessionHandle): Promise<void> {
  for (;;) {
    const { phase, waitingReason } = await nextPause(session);
    if (phase !== 'waiting_user' || waitingReason === null) {
      console.log(`session ${phase}`);
      return;
    }
    switch (waitingReason.kind) {
      case 'intake':
        say('A haiku about autumn leaves');
        session.send({ type: 'user_submitted_input', text: 'A haiku about autumn leaves' });
        break;
      case 'approve_step':
        say(`approved ${waitingReason.decisionId}`);
        session.send({ type: 'user_approved_next_step', decisionId: waitingReason.decisionId });
        break;
      case 'review_artifact': {
        const draft = session.artifacts.require(waitingReason.artifactId);
        console.log(`poet wrote ${draft.id}: ${JSON.stringify(draft.content)}`);
        if (draft.id === 'art-1') {
          say('shorter, and about maple leaves');
          session.send({
            type: 'user_requested_revision',
            instruction: 'shorter, and about maple leaves',
          });
        } else {
          say(`accepted ${draft.id}`);
          session.send({ type: 'user_accepted_artifact', artifactId: draft.id });
        }
        break;
      }
      case 'revision':
        say('Please revise it as I said.');
        session.send({ type: 'user_submitted_input', text: 'Please revise it as I said.' });
        break;
      default:
        throw new Error(`the script has no answer for ${waitingReason.kind}`);
    }
  }
}

/** Waits until the session pauses: its effects ran and it waits for the user, or it ended. */
function nextPause(session: SessionHandle) {
  return new Promise<ReturnType<SessionHandle['view']>>((resolve) => {
    const timer = setInterval(() => {
      const view = session.view();
      if (view.phase === 'running') return;
      clearInterval(timer);
      resolve(view);
    }, 5);
  });
}

function say(text: string): void {
  console.log(`user: ${text}`);
}

/**
 * A stand-in for an LLM. The main agent runs the poet (asking for approval the first time),
 * runs it again for a revision, and finishes once a draft is accepted; the poet writes a
 * first draft, then a shorter one when it has a draft to revise.
 */
function scriptedAgent(role: 'main' | 'poet'): MockLanguageModelV3 {
  const calls = process.env.WRITING_AGENT_CALLS;
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt, headers }) => {
      if (calls) appendFileSync(calls, `${headers?.['idempotency-key']} ${role}\n`);
      const text = JSON.stringify(prompt);
      const [toolName, input] =
        role === 'poet'
          ? [
              'write_artifact',
              text.includes('Your current draft')
                ? { content: 'Maple leaves let go', summary: 'shorter, maples' }
                : {
                    content:
                      'Autumn leaves drift down / unasked, the wind lets them go / the branch keeps its bark',
                    summary: 'a first draft',
                  },
            ]
          : mainAgentMove(text);
      console.log(`${role} → ${toolName} ${JSON.stringify(input)}`);
      return {
        content: [
          { type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify(input) },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 10, text: 10, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
}

/** What the scripted main agent decides, from why it is called. */
function mainAgentMove(prompt: string): [string, Record<string, unknown>] {
  if (prompt.includes('because: user_accepted_artifact'))
    return ['decide', { kind: 'finish', summary: 'The haiku is written.' }];
  if (prompt.includes('revision_requested'))
    return [
      'decide',
      { kind: 'run_worker', workerId: 'poet', instruction: 'shorter, and about maple leaves' },
    ];
  return [
    'decide',
    {
      kind: 'run_worker',
      workerId: 'poet',
      requiresApproval: true,
      instruction: 'a haiku about autumn leaves',
    },
  ];
}
