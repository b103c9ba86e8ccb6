// agentEffects: a session's agents as effect handlers. The main agent answers
// `invoke_main_agent` through its `decide` tool; each worker answers `run_worker` and
// `resume_worker` through `write_artifact` or `ask_user`. A handler makes model calls with
// the AI SDK's generateText (loaded when the first handler runs, so this module loads where
// `ai` is not installed) and returns the runtime events its agent's answer stands for; the
// runtime records them and applies them once.
import type { LanguageModel, StepResult, ToolSet } from 'ai';
import { ARTIFACT_NAME_PATTERN, ARTIFACT_NAME_RULE } from '../base/input-limits.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { EffectHandlerContext } from '../rolebox/effect-handlers.js';
import { SessionHandle } from '../rolebox/session-handle.js';
import {
  ACCEPTANCE_MODES,
  type AcceptanceMode,
  type MainAgentDecision,
  type RuntimeEvent,
  type SessionEffectBody,
} from '../session/runtime-types.js';
import {
  MAIN_AGENT_SYSTEM,
  mainAgentPrompt,
  WORKER_SYSTEM,
  workerPrompt,
} from './agent-prompts.js';
import { askUserTool, decideTool, writeArtifactTool } from './agent-tools.js';
import { aiTool } from './ai-sdk.js';
import { bindApprovalTools } from './require-approval.js';

/** The names of rolebox's own agent tools, which an agent's `tools` may not take. */
const ROLEBOX_AGENT_TOOLS = ['signal', 'decide', 'write_artifact', 'ask_user'];

/** One agent: its model and what it is told. */
export interface AgentSpec {
  /** An AI SDK language model (`openai('gpt-4.1')`, a `MockLanguageModelV3`, …). */
  readonly model: LanguageModel;
  /** The system prompt (default: one that explains the agent's tools). */
  readonly system?: string;
  /**
   * What the host adds to each prompt: the conversation so far, the brief, anything the
   * agent must know that the session does not hold. Called on every attempt.
   */
  readonly context?: (ctx: EffectHandlerContext) => string | Promise<string>;
  /** Model steps one handler call may take before it gives up (default 6). */
  readonly maxSteps?: number;
  /**
   * The host's own AI SDK tools for this agent, beside rolebox's (whose names they may not
   * take: `signal`, `decide`, `write_artifact`, `ask_user`). Tools made by `requireApproval`
   * are bound to the effect's session and key: their calls wait for the host's approval.
   */
  readonly tools?: ToolSet;
}

/** A worker's agent. */
export interface WorkerAgentSpec extends AgentSpec {
  /** One line the main agent reads when it chooses a worker. */
  readonly description?: string;
  /** The name of the artifact the worker writes (default: the worker id). */
  readonly artifactName?: string;
  /** How its artifact is accepted, sent with `worker_started` (default `user_confirmed`). */
  readonly acceptanceMode?: AcceptanceMode;
}

/** What {@link agentEffects} takes. */
export interface AgentEffectsOptions {
  /** The main agent, which decides each next step. */
  readonly mainAgent: AgentSpec;
  /** The workers the main agent may run, by id. */
  readonly workers: Readonly<Record<string, WorkerAgentSpec>>;
  /** The agent that runs workers the main agent creates (create_temp_worker); without it, it may not. */
  readonly temporaryWorker?: WorkerAgentSpec;
}

/** An effect handler of {@link agentEffects}: the runtime events its agent's answer stands for. */
export type AgentEffectHandler<T extends SessionEffectBody['type']> = (
  effect: Extract<SessionEffectBody, { type: T }>,
  ctx: EffectHandlerContext,
) => Promise<RuntimeEvent[]>;

/** The handlers {@link agentEffects} answers, one per effect type an agent carries out. */
export interface AgentEffectHandlers {
  readonly invoke_main_agent: AgentEffectHandler<'invoke_main_agent'>;
  readonly run_worker: AgentEffectHandler<'run_worker'>;
  readonly resume_worker: AgentEffectHandler<'resume_worker'>;
}

const DEFAULT_MAX_STEPS = 6;

/**
 * A session's agents as effect handlers, for `createRolebox({ effects: agentEffects(…) })`:
 * - `invoke_main_agent` runs the main agent, which decides through its `decide` tool
 *   (ask_user, run_worker, create_temp_worker, review_blackboard, finish; requiresApproval)
 *   and answers `main_agent_decision_created`; the decision's id is the idempotency key.
 * - `run_worker` runs that worker's agent, which writes its artifact with `write_artifact`
 *   (answers `worker_started` and `worker_completed`, the summary as the assessment) or asks
 *   with `ask_user` (`worker_started` and `worker_needs_input`); `resume_worker` runs it again
 *   with the user's answer (`worker_completed` or `worker_needs_input`).
 * Both kinds of agent also have the `signal` tool. Model calls get `ctx.signal`, so a
 * cancelled effect stops its model call (the handler rejects with the abort reason), and
 * the effect id as their `Idempotency-Key` header.
 *
 * Handlers are idempotent by the effect's key only as far as the model is: a crash while a
 * handler runs makes the runtime call it again, and the model again (a worker's draft is
 * rewritten, not duplicated); a handler that returned is never called again.
 * Throws (when made): `invalid_argument` for options that are not as described. A handler
 * rejects with `invalid_agent_output` when its model ends without a valid answer (no
 * `decide` call, or none the session would take, within `maxSteps`), naming the last tool
 * error or the model's text, and with `invalid_argument` for a worker it does not know.
 */
export function agentEffects(options: AgentEffectsOptions): AgentEffectHandlers {
  const { mainAgent, workers, temporaryWorker } = checkOptions(options);
  const workerIds = Object.keys(workers);
  const workerFor = (workerId: string): WorkerAgentSpec => {
    const spec = Object.hasOwn(workers, workerId) ? workers[workerId] : temporaryWorker;
    if (spec) return spec;
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects has no worker ${describeValue(workerId)} (workers: ${workerIds.join(', ') || '(none)'}, and no temporaryWorker)`,
      { workerId },
    );
  };

  return {
    invoke_main_agent: async (effect, ctx) => {
      checkContext(ctx);
      let decision: MainAgentDecision | undefined;
      const decide = decideTool(
        {
          id: ctx.idempotencyKey,
          workers: workerIds,
          temporaryWorkers: temporaryWorker !== undefined,
        },
        (made) => {
          decision = made;
        },
      );
      const prompt = mainAgentPrompt(effect, {
        workers: workerIds.map((id) => ({ id, ...pickDescription(workers[id]) })),
        temporaryWorkers: temporaryWorker !== undefined,
        artifacts: ctx.session.view().artifacts,
        ...(await hostContext(mainAgent, ctx)),
      });
      const steps = await runAgent(
        mainAgent,
        MAIN_AGENT_SYSTEM,
        prompt,
        { decide },
        ctx,
        () => decision !== undefined,
      );
      if (!decision) throw noAnswer('the main agent', 'a decision (the decide tool)', steps);
      return [{ type: 'main_agent_decision_created', decision }];
    },
    // async, so that an unknown worker rejects as every other failure does.
    run_worker: async (effect, ctx) => runWorker(effect, ctx, workerFor(effect.workerId)),
    resume_worker: async (effect, ctx) => runWorker(effect, ctx, workerFor(effect.workerId)),
  };
}

type WorkerOutcome =
  | { readonly kind: 'written'; readonly artifactId: string; readonly summary?: string }
  | { readonly kind: 'questions'; readonly questions: readonly string[] };

/** Runs a worker's agent for a run_worker or resume_worker effect. */
async function runWorker(
  effect: Extract<SessionEffectBody, { type: 'run_worker' | 'resume_worker' }>,
  ctx: EffectHandlerContext,
  spec: WorkerAgentSpec,
): Promise<RuntimeEvent[]> {
  checkContext(ctx);
  const { workerId } = effect;
  let outcome: WorkerOutcome | undefined;
  const tools = {
    write_artifact: writeArtifactTool(
      { session: ctx.session, name: spec.artifactName ?? workerId, workerId },
      (written) => {
        outcome ??= { kind: 'written', ...written };
      },
    ),
    ask_user: askUserTool((questions) => {
      outcome ??= { kind: 'questions', questions };
    }),
  };
  const prompt = workerPrompt(effect, {
    artifacts: ctx.session.view().artifacts,
    ...(await hostContext(spec, ctx)),
  });
  const steps = await runAgent(
    spec,
    WORKER_SYSTEM,
    prompt,
    tools,
    ctx,
    () => outcome !== undefined,
  );
  if (!outcome)
    throw noAnswer(
      `worker ${workerId}`,
      'an artifact (write_artifact) or questions (ask_user)',
      steps,
    );
  // A resumed worker is still in flight; a run one starts now, with its acceptance mode.
  const events: RuntimeEvent[] =
    effect.type === 'run_worker'
      ? [
          {
            type: 'worker_started',
            workerId,
            acceptanceMode: spec.acceptanceMode ?? 'user_confirmed',
          },
        ]
      : [];
  events.push(
    outcome.kind === 'written'
      ? {
          type: 'worker_completed',
          artifactId: outcome.artifactId,
          ...(outcome.summary ? { assessment: outcome.summary } : {}),
        }
      : { type: 'worker_needs_input', workerId, questions: outcome.questions },
  );
  return events;
}

/** The `ai` module, imported on first use and kept (a failed import is tried again). */
let aiModule: Promise<typeof import('ai')> | undefined;

/**
 * `ai`, imported once: an `import()` per agent run resolves the specifier again each time
 * (under a loader hook such as tsx, a round trip to its thread per model call).
 */
function aiSdk(): Promise<typeof import('ai')> {
  aiModule ??= import('ai').catch((error: unknown) => {
    aiModule = undefined;
    throw error;
  });
  return aiModule;
}

/** One agent run: generateText until `done()` holds or the steps run out. */
async function runAgent(
  spec: AgentSpec,
  defaultSystem: string,
  prompt: string,
  tools: ToolSet,
  ctx: EffectHandlerContext,
  done: () => boolean,
): Promise<readonly StepResult<ToolSet>[]> {
  ctx.signal.throwIfAborted();
  const { generateText, stepCountIs } = await aiSdk();
  const own = bindApprovalTools(spec.tools ?? {}, ctx);
  const all: ToolSet = { ...own, signal: aiTool(ctx.session, 'signal'), ...tools };
  const result = await generateText({
    model: spec.model,
    system: spec.system ?? defaultSystem,
    prompt,
    tools: all,
    stopWhen: [() => done(), stepCountIs(spec.maxSteps ?? DEFAULT_MAX_STEPS)],
    abortSignal: ctx.signal,
    // The effect id, on every call for the effect: a provider (or proxy) that honours
    // idempotency keys answers a retried call from its record instead of a second run.
    headers: { 'Idempotency-Key': ctx.idempotencyKey },
  });
  // An abort that came after the model's last answer still cancels: the effect is gone.
  ctx.signal.throwIfAborted();
  return result.steps;
}

/** The `invalid_agent_output` error for an agent that ended without its answer. */
function noAnswer(who: string, what: string, steps: readonly StepResult<ToolSet>[]): RoleboxError {
  const parts = steps.flatMap((step) => step.content);
  const lastError = parts.filter((part) => part.type === 'tool-error').at(-1);
  const text = steps.at(-1)?.text ?? '';
  const why = lastError
    ? `its last tool call (${lastError.toolName}) failed: ${errorText(lastError.error)}`
    : text
      ? `it answered ${describeValue(text)}`
      : 'it gave no answer';
  return new RoleboxError(
    'invalid_agent_output',
    `${who} ended without ${what} after ${steps.length} step(s): ${why}`,
    { steps: steps.length },
  );
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function hostContext(
  spec: AgentSpec,
  ctx: EffectHandlerContext,
): Promise<{ context?: string }> {
  if (!spec.context) return {};
  const context = await spec.context(ctx);
  if (typeof context !== 'string') {
    throw new RoleboxError(
      'invalid_argument',
      `an agent's context() must answer a string, got ${describeValue(context)}`,
    );
  }
  return { context };
}

function pickDescription(spec: WorkerAgentSpec | undefined): { description?: string } {
  return spec?.description === undefined ? {} : { description: spec.description };
}

function checkContext(ctx: EffectHandlerContext): void {
  const ok =
    typeof ctx === 'object' &&
    ctx !== null &&
    ctx.session instanceof SessionHandle &&
    ctx.signal instanceof AbortSignal &&
    typeof ctx.idempotencyKey === 'string' &&
    ctx.idempotencyKey.length > 0;
  if (!ok) {
    throw new RoleboxError(
      'invalid_argument',
      `an agent handler needs the effect context { session, signal, attempt, idempotencyKey }, got ${describeValue(ctx)}`,
    );
  }
}

/** Checks agentEffects' options; answers the workers in an object without a prototype. */
function checkOptions(options: AgentEffectsOptions): AgentEffectsOptions {
  if (typeof options !== 'object' || options === null) {
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects needs { mainAgent, workers, temporaryWorker? }, got ${describeValue(options)}`,
    );
  }
  checkSpec('mainAgent', options.mainAgent);
  const { workers } = options;
  if (typeof workers !== 'object' || workers === null || Array.isArray(workers)) {
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects: workers must be an object of worker agents by id, got ${describeValue(workers)}`,
    );
  }
  const own: Record<string, WorkerAgentSpec> = Object.create(null);
  for (const [id, spec] of Object.entries(workers)) {
    if (id.length === 0)
      throw new RoleboxError('invalid_argument', 'agentEffects: a worker id is empty');
    checkWorker(`workers.${id}`, spec, id);
    own[id] = spec;
  }
  if (options.temporaryWorker !== undefined)
    checkWorker('temporaryWorker', options.temporaryWorker, 'temporary');
  return { ...options, workers: own };
}

function checkWorker(field: string, spec: WorkerAgentSpec, id: string): void {
  checkSpec(field, spec);
  const name = spec.artifactName ?? id;
  if (typeof name !== 'string' || !ARTIFACT_NAME_PATTERN.test(name)) {
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects: ${field}.artifactName must be ${ARTIFACT_NAME_RULE}, got ${describeValue(name)}`,
      { field },
    );
  }
  if (spec.acceptanceMode !== undefined && !ACCEPTANCE_MODES.includes(spec.acceptanceMode)) {
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects: ${field}.acceptanceMode must be one of ${ACCEPTANCE_MODES.join(', ')}, got ${describeValue(spec.acceptanceMode)}`,
      { field },
    );
  }
}

function checkSpec(field: string, spec: AgentSpec): void {
  const model = (spec as { model?: unknown } | null)?.model;
  const modelOk =
    (typeof model === 'string' && model.length > 0) ||
    (typeof model === 'object' && model !== null);
  if (typeof spec !== 'object' || spec === null || !modelOk) {
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects: ${field} must be { model, system?, context?, maxSteps? } with an AI SDK model, got ${describeValue(spec)}`,
      { field },
    );
  }
  const { maxSteps } = spec;
  if (maxSteps !== undefined && !(Number.isInteger(maxSteps) && maxSteps >= 1 && maxSteps <= 100)) {
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects: ${field}.maxSteps must be an integer from 1 to 100, got ${describeValue(maxSteps)}`,
      { field },
    );
  }
  checkTools(field, spec.tools);
}

/** An agent's own tools: an object of tools, none named as one of rolebox's. */
function checkTools(field: string, tools: unknown): void {
  if (tools === undefined) return;
  if (typeof tools !== 'object' || tools === null || Array.isArray(tools))
    throw new RoleboxError(
      'invalid_argument',
      `agentEffects: ${field}.tools must be an object of AI SDK tools by name, got ${describeValue(tools)}`,
      { field },
    );
  for (const [name, tool] of Object.entries(tools)) {
    const problem = ROLEBOX_AGENT_TOOLS.includes(name)
      ? `is one of rolebox's own tools (${ROLEBOX_AGENT_TOOLS.join(', ')})`
      : typeof tool !== 'object' || tool === null
        ? `is not an AI SDK tool (got ${describeValue(tool)})`
        : undefined;
    if (problem)
      throw new RoleboxError(
        'invalid_argument',
        `agentEffects: ${field}.tools.${name} ${problem}`,
        {
          field,
          tool: name,
        },
      );
  }
}
