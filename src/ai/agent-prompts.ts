// What agentEffects tells its agents: a system prompt per role and a prompt built from the
// effect and the session as it stands (its facts and the worker's current draft). Only
// accepted artifacts are shown with their content to the main agent (facts only, SPEC §6);
// a worker also sees its own draft, which it is revising.
import type { ArtifactRecord } from '../session/artifact.js';
import type { SessionEffectBody } from '../session/runtime-types.js';

/** The main agent's default system prompt. */
export const MAIN_AGENT_SYSTEM =
  'You are the main agent of a session with a user. You do not write the work yourself: you decide the next step with the `decide` tool (ask the user, run a worker, review what is done, or finish). Call `decide` exactly once.';

/** A worker's default system prompt. */
export const WORKER_SYSTEM =
  'You are a worker of a session. Do what the instruction asks and write the result with the `write_artifact` tool; if you cannot go on without the user, call `ask_user` with your questions instead.';

/** A worker as the main agent sees it in its prompt. */
export interface WorkerListing {
  readonly id: string;
  readonly description?: string;
}

/** The main agent's prompt for an `invoke_main_agent` effect. */
export function mainAgentPrompt(
  effect: Extract<SessionEffectBody, { type: 'invoke_main_agent' }>,
  state: {
    readonly workers: readonly WorkerListing[];
    readonly temporaryWorkers: boolean;
    readonly artifacts: readonly ArtifactRecord[];
    readonly context?: string;
  },
): string {
  const lines = [`You are called because: ${effect.reason}.`];
  if (effect.instruction) lines.push(`The user's instruction: ${effect.instruction}`);
  if (state.context) lines.push('', state.context);
  lines.push('', 'Workers you can run:');
  for (const worker of state.workers)
    lines.push(`- ${worker.id}${worker.description ? `: ${worker.description}` : ''}`);
  if (state.workers.length === 0) lines.push('- (none)');
  if (state.temporaryWorkers)
    lines.push('You may also create a temporary worker (create_temp_worker) with a new id.');
  lines.push('', ...artifactLines(state.artifacts));
  return lines.join('\n');
}

/** A worker's prompt for a `run_worker` or `resume_worker` effect. */
export function workerPrompt(
  effect: Extract<SessionEffectBody, { type: 'run_worker' | 'resume_worker' }>,
  state: {
    readonly artifacts: readonly ArtifactRecord[];
    readonly context?: string;
  },
): string {
  const lines =
    effect.type === 'run_worker'
      ? [`Your instruction: ${effect.instruction ?? '(none given: do your usual work)'}`]
      : [`You asked the user questions; their answer: ${effect.answer}`];
  if (state.context) lines.push('', state.context);
  const draft = state.artifacts
    .filter((artifact) => artifact.workerId === effect.workerId && artifact.status !== 'superseded')
    .at(-1);
  if (draft) {
    lines.push(
      '',
      `Your current draft (${draft.id}, ${draft.status}); rewrite it as a whole:`,
      draft.content ?? '',
    );
  }
  lines.push('', ...artifactLines(state.artifacts));
  return lines.join('\n');
}

/** The accepted artifacts with their content, then the other drafts by name and status only. */
function artifactLines(artifacts: readonly ArtifactRecord[]): string[] {
  const facts = artifacts.filter((artifact) => artifact.status === 'accepted');
  const drafts = artifacts.filter(
    (artifact) => artifact.status !== 'accepted' && artifact.status !== 'superseded',
  );
  const lines =
    facts.length === 0
      ? ['Accepted artifacts: none yet.']
      : [
          'Accepted artifacts:',
          ...facts.map(
            (artifact) => `- ${artifact.name} (${artifact.id}): ${artifact.content ?? ''}`,
          ),
        ];
  if (drafts.length > 0)
    lines.push(
      'Drafts not accepted:',
      ...drafts.map((artifact) => `- ${artifact.name} (${artifact.id}): ${artifact.status}`),
    );
  return lines;
}
