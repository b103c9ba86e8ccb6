// The tools through which an agent of agentEffects answers: the main agent's `decide`, a
// worker's `write_artifact` and `ask_user`. Each validates what the model sent and hands the
// result to the handler that made it (through `settle`); a call that does not validate throws
// a RoleboxError, which the AI SDK turns into a tool error the model reads and may correct.
import { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import type { SessionHandle } from '../rolebox/session-handle.js';
import { parseRuntimeEvent } from '../session/runtime-event-schema.js';
import type { MainAgentDecision } from '../session/runtime-types.js';

/** The decision kinds the `decide` tool offers, as the runtime names them. */
export const DECISION_KINDS = [
  'ask_user',
  'run_worker',
  'create_temp_worker',
  'review_blackboard',
  'finish',
] as const;

// One flat object rather than a union: models fill flat schemas more reliably, and some
// providers' strict modes refuse unions. The handler checks which fields each kind needs.
const decideInput = z.object({
  kind: z
    .enum(DECISION_KINDS)
    .describe(
      'ask_user: ask the user (message, questions); run_worker: run a known worker (workerId, instruction); create_temp_worker: run a temporary worker (workerId, instruction); review_blackboard: show the user the accepted artifacts (message); finish: the work is done (summary).',
    ),
  workerId: z
    .string()
    .min(1)
    .optional()
    .describe('The worker, for run_worker and create_temp_worker.'),
  requiresApproval: z
    .boolean()
    .optional()
    .describe('For a worker: true to let the user approve the step before it runs.'),
  instruction: z.string().optional().describe('What the worker is to do.'),
  message: z
    .string()
    .optional()
    .describe('For ask_user and review_blackboard: what to tell the user.'),
  questions: z.array(z.string().min(1)).optional().describe('For ask_user: the questions.'),
  summary: z.string().optional().describe('For finish: what was done.'),
});

/** What the model sends to the `decide` tool. */
export type DecideInput = z.infer<typeof decideInput>;

const writeArtifactInput = z.object({
  content: z.string().min(1).describe('The whole artifact, as the user is to read it.'),
  summary: z.string().optional().describe('One line on what this version is or changes.'),
});

const askUserInput = z.object({
  questions: z
    .array(z.string().min(1))
    .min(1)
    .describe('What the worker needs the user to answer before it can go on.'),
});

/** An AI SDK tool as rolebox builds one: a plain object (see ai-sdk.ts). */
export interface AgentTool<I> {
  readonly description: string;
  readonly inputSchema: z.ZodType<I>;
  readonly execute: (input: I) => string;
}

/** Which workers a decision may name. */
export interface DecisionRules {
  /** The decision's id (the effect's idempotency key, so a retried call decides the same id). */
  readonly id: string;
  readonly workers: readonly string[];
  /** Whether create_temp_worker may name a worker outside {@link DecisionRules.workers}. */
  readonly temporaryWorkers: boolean;
}

/**
 * The main agent's `decide` tool: its call becomes the session's next
 * `main_agent_decision_created`. Only the first valid call counts.
 */
export function decideTool(
  rules: DecisionRules,
  settle: (decision: MainAgentDecision) => void,
): AgentTool<DecideInput> {
  let decided = false;
  return {
    description:
      'Decide the next step of the session. Call it exactly once; the session acts on it.',
    inputSchema: decideInput,
    execute: (input) => {
      if (decided) return 'The decision was already made; nothing changed.';
      const decision = toDecision(rules, input);
      decided = true;
      settle(decision);
      return `decided: ${decision.kind}`;
    },
  };
}

/**
 * A worker's `write_artifact` tool: writes the worker's draft into the session (a new draft,
 * or an edit of the worker's current one) and hands the artifact id on.
 */
export function writeArtifactTool(
  target: { readonly session: SessionHandle; readonly name: string; readonly workerId: string },
  settle: (written: { readonly artifactId: string; readonly summary?: string }) => void,
): AgentTool<z.infer<typeof writeArtifactInput>> {
  return {
    description: 'Write your artifact (the whole text). The user reviews what you write here.',
    inputSchema: writeArtifactInput,
    execute: ({ content, summary }) => {
      const artifact = target.session.artifacts.write({
        name: target.name,
        workerId: target.workerId,
        content,
        ...(summary === undefined ? {} : { summary }),
      });
      settle({ artifactId: artifact.id, ...(summary === undefined ? {} : { summary }) });
      return `written: ${artifact.id}`;
    },
  };
}

/** A worker's `ask_user` tool: the worker stops and waits for the user's answer. */
export function askUserTool(
  settle: (questions: readonly string[]) => void,
): AgentTool<z.infer<typeof askUserInput>> {
  return {
    description: 'Ask the user questions you need answered before you can write the artifact.',
    inputSchema: askUserInput,
    execute: ({ questions }) => {
      settle(questions);
      return 'asked; you will be resumed with the answer';
    },
  };
}

/** The runtime decision a `decide` call stands for; throws `invalid_agent_output` naming what is wrong. */
function toDecision(rules: DecisionRules, input: DecideInput): MainAgentDecision {
  const { id } = rules;
  let decision: MainAgentDecision;
  switch (input.kind) {
    case 'ask_user':
      decision = { id, kind: 'ask_user', ...pick(input, ['message', 'questions']) };
      break;
    case 'review_blackboard':
      decision = { id, kind: 'review_blackboard', ...pick(input, ['message']) };
      break;
    case 'finish':
      decision = { id, kind: 'finish', ...pick(input, ['summary']) };
      break;
    default:
      decision = {
        id,
        kind: input.kind,
        workerId: requireWorker(rules, input),
        ...pick(input, ['requiresApproval', 'instruction']),
      };
  }
  // The runtime's own schema has the last word, so a decision that passes is an event it takes.
  try {
    parseRuntimeEvent({ type: 'main_agent_decision_created', decision });
  } catch (error) {
    throw new RoleboxError('invalid_agent_output', `decide: ${(error as Error).message}`, {
      kind: input.kind,
    });
  }
  return decision;
}

function requireWorker(rules: DecisionRules, input: DecideInput): string {
  const { workerId, kind } = input;
  if (workerId === undefined) {
    throw new RoleboxError('invalid_agent_output', `decide: ${kind} needs a workerId`, { kind });
  }
  const known = rules.workers.includes(workerId);
  if (!known && !(kind === 'create_temp_worker' && rules.temporaryWorkers)) {
    const offered = rules.workers.length > 0 ? rules.workers.join(', ') : '(none)';
    throw new RoleboxError(
      'invalid_agent_output',
      `decide: unknown worker ${describeValue(workerId)} for ${kind}; the workers are ${offered}`,
      { kind, workerId },
    );
  }
  return workerId;
}

/** The fields of `input` that are set, of those named. */
function pick<K extends keyof DecideInput>(
  input: DecideInput,
  keys: readonly K[],
): { [P in K]?: NonNullable<DecideInput[P]> } {
  const out: { [P in K]?: NonNullable<DecideInput[P]> } = {};
  for (const key of keys) {
    const value = input[key];
    if (value !== undefined) out[key] = value as NonNullable<DecideInput[K]>;
  }
  return out;
}
