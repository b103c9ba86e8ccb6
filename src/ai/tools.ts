import { z } from 'zod';
import { MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH } from '../base/input-limits.js';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';
import { DEFAULT_ITERATIONS, MAX_ITERATIONS_HARD_CAP } from '../loop/constants.js';
import { SESSION_COMMAND_ROWS } from '../rolebox/command-table.js';
import { SessionHandle } from '../rolebox/session-handle.js';
import type { SessionView } from '../rolebox/views.js';
import { parseRuntimeEvent, RUNTIME_EVENT_SCHEMAS } from '../session/runtime-event-schema.js';
import type { RuntimeEvent, RuntimeEventType } from '../session/runtime-types.js';
import {
  PAUSING_PRIORITY,
  SIGNAL_CATEGORY_OF,
  SIGNAL_MEANINGS,
  SIGNAL_TYPES,
} from '../signal/catalogue.js';
import { parseSignalArgs } from '../signal/schema.js';

/** A JSON Schema object, as tool definitions carry it. */
export type JsonSchema = Record<string, unknown>;

const signalTypeList = SIGNAL_TYPES.map(
  (type) => `${type} (${SIGNAL_CATEGORY_OF[type]}): ${SIGNAL_MEANINGS[type]}`,
).join('; ');

// The tools' inputs are taken from the command table's rows where a tool passes the
// arguments on as they are (signal, stop_loop, the events of send_event); start_loop builds
// its `|loop|` text from fields of its own.
const rows = SESSION_COMMAND_ROWS;
const [signalArgs] = rows.signal.arguments.def.items;
const [stopLoopOptions] = rows.stopLoop.arguments.def.items;
const [runtimeEvent] = rows.send.arguments.def.items;
const [messageText] = rows.message.arguments.def.items;
const [functionNameArgument] = rows.activate.arguments.def.items;

const signalInput = z.strictObject({
  type: signalArgs.shape.type.describe(`Which signal. ${signalTypeList}.`),
  payload: signalArgs.shape.payload.describe(
    `Optional structured data, a JSON object (at most ${MAX_PAYLOAD_DEPTH} levels deep and ${MAX_PAYLOAD_BYTES} bytes as JSON). For ${PAUSING_PRIORITY.join(', ')} put what the user must be told in "reason" (and, optionally, how long the request may wait for an answer in "timeoutMs", milliseconds); for handoff name who takes over in "target".`,
  ),
});

const startLoopInput = z.strictObject({
  task: z
    .string()
    .min(1)
    .describe('What every round does: the prompt of round 1, and of each round after it.'),
  iterations: z
    .int()
    .min(1)
    .optional()
    .describe(
      `How many rounds to run (default ${DEFAULT_ITERATIONS}). More than the host's limit (${MAX_ITERATIONS_HARD_CAP} unless it set another) are clamped to it, and the reply says so.`,
    ),
  mode: z
    .enum(['inherit', 'fresh'])
    .optional()
    .describe(
      "inherit (default): each round's prompt starts with the previous round's summary; fresh: every round gets the bare task.",
    ),
});

const stopLoopInput = z.strictObject({
  now: stopLoopOptions
    .unwrap()
    .shape.now.describe(
      'true cancels the running round at once; false (default) lets it finish, then the loop ends cancelled.',
    ),
});

const sessionViewInput = z.strictObject({});

const functionName = functionNameArgument.describe('The name of a function definition.');

/**
 * The events a host sends that are not runtime events (SPEC §4.2) but calls of the
 * session handle: a user message, the end of the agent's turn, function activation.
 */
const HOST_EVENT_SCHEMAS = {
  user_message: z
    .strictObject({ type: z.literal('user_message'), text: messageText })
    .describe(
      'A message from the user: user_approval() holds until the next idle, gated functions without a gate resume, "/stop-loop" stops the loop.',
    ),
  idle: z
    .strictObject({ type: z.literal('idle') })
    .describe(
      "The agent's turn ended (an idle cycle): functions whose continue_until holds complete.",
    ),
  activate_function: z
    .strictObject({ type: z.literal('activate_function'), name: functionName })
    .describe('Activate a function in the session (gated when its gate does not hold).'),
  deactivate_function: z
    .strictObject({ type: z.literal('deactivate_function'), name: functionName })
    .describe('Deactivate a live function.'),
  resume_function: z
    .strictObject({ type: z.literal('resume_function'), name: functionName })
    .describe('Resume a gated function by hand (only one without a gate, or whose gate holds).'),
} as const;

/**
 * What each runtime event says, for the model that sends it: a client sees only the schema,
 * so the meaning is here in words (one entry per type, or this does not compile).
 */
const RUNTIME_EVENT_MEANINGS: Readonly<Record<RuntimeEventType, string>> = {
  session_started:
    'The session begins with the skills the user may choose: it waits for a skill, or with initialSkill for the intake (intakePrompt) or the first input.',
  skill_selected: 'The user chose one of the offered skills.',
  user_submitted_input:
    'The user wrote something: the intake, an answer to a question or to a worker, or what to revise. The main agent runs next.',
  user_confirmed_intake: 'The user confirmed the intake as it stands: the main agent runs next.',
  main_agent_decision_created:
    "The main agent decided what comes next: ask the user, review the blackboard, finish, or run a worker (which may need the user's approval first).",
  user_approved_next_step:
    'The user approved the decision the session waits on (decisionId): its worker runs.',
  user_rejected_next_step:
    'The user rejected the decision the session waits on (decisionId): the main agent decides again.',
  worker_started:
    'A worker started, with how its artifact becomes a fact (acceptanceMode: user_confirmed, no_confirmation or programmatic_review).',
  worker_needs_input: 'The running worker asks the user questions and waits for the answer.',
  worker_completed:
    'The running worker finished with an artifact (artifactId): reviewed by the user, accepted at once or checked by the host, as its acceptance mode says.',
  user_accepted_artifact:
    'The user accepted the artifact under review (artifactId): it becomes a fact.',
  user_rejected_artifact:
    'The user rejected the artifact under review (artifactId): the session waits for what to revise.',
  user_requested_revision:
    'The user asks for a revision (instruction) of the step or artifact under review.',
  programmatic_review_passed:
    "The host's check of the artifact under review passed: it is accepted.",
  programmatic_review_failed:
    "The host's check of the artifact under review failed (reason): the session waits for a revision.",
  flow_completed: 'The flow is done: the session ends.',
  runtime_failed: 'Something failed for good (reason): the session ends in error.',
  wait_expired:
    'The wait for the user outlived limits.waitUserTimeoutMs: the session ends in error (taken only once its waitExpiresAt has come; the runtime sends it itself).',
};

/** The type of an event `send_event` takes besides the runtime events. */
export type HostEventName = keyof typeof HOST_EVENT_SCHEMAS;

/** An event `send_event` takes that is not a runtime event. */
export type SessionHostEvent = z.output<(typeof HOST_EVENT_SCHEMAS)[HostEventName]>;

const HOST_EVENT_NAMES = Object.keys(HOST_EVENT_SCHEMAS) as HostEventName[];

const sendEventInput = z.strictObject({
  event: z
    .discriminatedUnion('type', [
      HOST_EVENT_SCHEMAS.user_message,
      HOST_EVENT_SCHEMAS.idle,
      HOST_EVENT_SCHEMAS.activate_function,
      HOST_EVENT_SCHEMAS.deactivate_function,
      HOST_EVENT_SCHEMAS.resume_function,
      ...runtimeEvent.options.map((variant) =>
        variant.describe(RUNTIME_EVENT_MEANINGS[variant.shape.type.value]),
      ),
    ])
    .describe(
      "An event of the session's runtime flow (session_started, user_approved_next_step, worker_completed, …: what the user, the main agent or a worker did) or one of user_message, idle, activate_function, deactivate_function, resume_function.",
    ),
});

/** The input of the `signal` tool. */
export type SignalToolInput = z.output<typeof signalInput>;
/** The input of the `start_loop` tool. */
export type StartLoopToolInput = z.output<typeof startLoopInput>;
/** The input of the `stop_loop` tool. */
export type StopLoopToolInput = z.output<typeof stopLoopInput>;
/** The input of the `session_view` tool (no arguments). */
export type SessionViewToolInput = z.output<typeof sessionViewInput>;
/** The input of the `send_event` tool. */
export type SendEventToolInput = { readonly event: RuntimeEvent | SessionHostEvent };

/**
 * What a tool call answers: the text for the model, and whether the call was refused
 * without throwing (a loop the session would not start), which MCP marks as `isError`.
 */
export interface ToolReply {
  readonly text: string;
  readonly refused: boolean;
}

const answered = (text: string): ToolReply => ({ text, refused: false });

/** One tool: what the model is told, the schema of its input, and how it runs. */
interface ToolSpec<I> {
  readonly description: string;
  readonly input: z.ZodType<I>;
  /** True when the tool changes nothing (MCP's readOnlyHint). */
  readonly readOnly: boolean;
  /**
   * Reads a call's arguments without the session (throwing what the call throws for bad
   * input, so a server refuses before it opens anything) and answers the call to run.
   */
  prepare(input: unknown): (session: SessionHandle) => ToolReply;
}

const TOOLS = {
  signal: {
    description: `Tell the host out of band what you intend (instead of burying it in your reply), e.g. that you are done, need a human's approval, are blocked or hand over. The reply says on how many of the session's functions the signal was recorded and what it caused.`,
    input: signalInput,
    readOnly: false,
    prepare: (input) => {
      const args = parseSignalArgs(input);
      return (session) => answered(session.signal(args).text);
    },
  },
  start_loop: {
    description: `Run a task for several rounds, each round a worker task run by the host. The loop goes on after this call returns: the host gets a note for each round (an MCP server sends them as log messages), and session_view shows where the loop stands. Over MCP, a call that carries a progress token is kept open until the loop ends and reports each round that ends as progress. A session runs one loop at a time. The reply is "loop started: <id>" (with the rounds it runs, when fewer than asked for) or "loop refused: <why>".`,
    input: startLoopInput,
    readOnly: false,
    prepare: (input) => {
      const { task, iterations, mode } = checkInput('start_loop', startLoopInput, input);
      // The `|loop|` text the session parses, so the tool and the text form cannot differ.
      const params = [
        ...(iterations === undefined ? [] : [`iterations=${iterations}`]),
        ...(mode === undefined ? [] : [`mode=${mode}`]),
      ];
      const text = `|loop${params.length > 0 ? `:${params.join(',')}` : ''}| ${task}`;
      return (session) => startLoop(session, text);
    },
  },
  stop_loop: {
    description:
      "Stop the session's running loop. By default the round in flight finishes and the loop ends cancelled; now=true cancels it at once.",
    input: stopLoopInput,
    readOnly: false,
    prepare: (input) => {
      const { now } = checkInput('stop_loop', stopLoopInput, input);
      return (session) => {
        session.stopLoop(now === undefined ? {} : { now });
        const loopId = session.view().loop?.id ?? '(unknown)';
        return answered(
          now
            ? `loop ${loopId}: cancelled now`
            : `loop ${loopId}: stopping; the round in flight finishes, then the loop ends cancelled`,
        );
      };
    },
  },
  session_view: {
    description:
      'The session as JSON: its phase and what it waits for, its functions (phase, gate, signals seen), its loop and its artifacts. Only accepted artifacts are facts: the content of any other is left out.',
    input: sessionViewInput,
    readOnly: true,
    prepare: (input) => {
      checkInput('session_view', sessionViewInput, input);
      return (session) => answered(JSON.stringify(factsOnlyView(session.view()), null, 2));
    },
  },
  send_event: {
    description:
      "Send the session an event from its host: a runtime event (a user's approval, a worker's result, …), a user message, the end of the agent's turn (idle), or a function's activation. The reply is the session's answer as JSON (phase, what it waits for, effects the host must carry out; for idle, what the cycle decided).",
    input: sendEventInput,
    readOnly: false,
    prepare: (input) => {
      const deliver = readSendEvent(input);
      return (session) => answered(deliver(session));
    },
  },
} as const satisfies Record<string, ToolSpec<unknown>>;

/**
 * Starts the loop `text` asks for. A loop the session will not start is a reply, not an
 * error, but refused; a clamp (to the host's `limits.maxIterations`) is said in the reply.
 */
function startLoop(session: SessionHandle, text: string): ToolReply {
  const started = session.startLoop(text);
  if (!started.ok) return { text: `loop refused: ${started.reason}`, refused: true };
  const loop = session.view().loop;
  const clamped =
    loop?.id === started.loopId && loop.clamped
      ? ` (${loop.total} rounds: ${loop.requested} asked for, clamped to the host's limit)`
      : '';
  return answered(`loop started: ${started.loopId}${clamped}`);
}

/** The name of one of rolebox's tools. */
export type RoleboxToolName = keyof typeof TOOLS;

/** Every tool, in the order `toolDefinitions()` lists them. */
export const ROLEBOX_TOOL_NAMES = Object.keys(TOOLS) as readonly RoleboxToolName[];

/** The tools an agent calls by default: its signals and its loops. */
export const AGENT_TOOL_NAMES = [
  'signal',
  'start_loop',
  'stop_loop',
] as const satisfies readonly RoleboxToolName[];

/** The input each tool takes. */
export interface RoleboxToolInputs {
  readonly signal: SignalToolInput;
  readonly start_loop: StartLoopToolInput;
  readonly stop_loop: StopLoopToolInput;
  readonly session_view: SessionViewToolInput;
  readonly send_event: SendEventToolInput;
}

/** The zod schema of a tool's input and its description (for SDK wrappers). */
export function toolSpec<N extends RoleboxToolName>(
  name: N,
): {
  readonly description: string;
  readonly input: z.ZodType<RoleboxToolInputs[N]>;
  readonly readOnly: boolean;
} {
  const spec = TOOLS[requireToolName(name)];
  return {
    description: spec.description,
    input: spec.input as unknown as z.ZodType<RoleboxToolInputs[N]>,
    readOnly: spec.readOnly,
  };
}

/** The fields of a tool's input schema (for a server that adds its own, such as a session id). */
export function toolSchemaShape(name: RoleboxToolName): z.ZodRawShape {
  return TOOLS[requireToolName(name)].input.shape;
}

/** A tool as any function-calling SDK takes it: name, description, JSON Schema of its input (MCP's shape). */
export interface ToolDefinition {
  readonly name: RoleboxToolName;
  readonly description: string;
  readonly inputSchema: JsonSchema;
}

/** A tool in OpenAI's Chat Completions shape. */
export interface OpenAIToolDefinition {
  readonly type: 'function';
  readonly function: {
    readonly name: RoleboxToolName;
    readonly description: string;
    readonly parameters: JsonSchema;
  };
}

/** A tool in Anthropic's Messages API shape. */
export interface AnthropicToolDefinition {
  readonly name: RoleboxToolName;
  readonly description: string;
  readonly input_schema: JsonSchema;
}

/** The shapes `toolDefinitions` can answer in. */
export type ToolFormat = 'neutral' | 'openai' | 'anthropic';

/** Options of {@link toolDefinitions}. */
export interface ToolDefinitionOptions<F extends ToolFormat = ToolFormat> {
  /** `neutral` (default: `{ name, description, inputSchema }`), `openai` or `anthropic`. */
  readonly format?: F;
  /** Which tools (default: {@link AGENT_TOOL_NAMES}, the agent's own). */
  readonly tools?: readonly RoleboxToolName[];
}

/** What {@link toolDefinitions} answers for each format. */
export interface ToolDefinitionsByFormat {
  readonly neutral: ToolDefinition;
  readonly openai: OpenAIToolDefinition;
  readonly anthropic: AnthropicToolDefinition;
}

/** The JSON Schema of a tool's input, from its zod schema (draft-07, without `$schema`). */
export function toolInputJsonSchema(name: RoleboxToolName): JsonSchema {
  return inputJsonSchema(TOOLS[requireToolName(name)].input);
}

/**
 * The JSON Schema of a tool input's zod schema, as {@link toolInputJsonSchema} answers it
 * (for a server that adds fields of its own, such as a session id).
 */
export function inputJsonSchema(input: z.ZodType): JsonSchema {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(input, {
    target: 'draft-7',
    io: 'input',
    // Keys of a JSON object are strings anyway; some function-calling APIs refuse the keyword.
    override: ({ jsonSchema }) => {
      const names = jsonSchema.propertyNames;
      if (typeof names === 'object' && names !== null && !Array.isArray(names)) {
        if (Object.keys(names).length === 1 && names.type === 'string')
          delete jsonSchema.propertyNames;
      }
    },
  });
  return schema;
}

/**
 * The tools as plain JSON Schema definitions, for any function-calling SDK: MCP's
 * `{ name, description, inputSchema }` (default), OpenAI's
 * `{ type: 'function', function: { name, description, parameters } }` or Anthropic's
 * `{ name, description, input_schema }`. Run a call the model made with {@link callTool}.
 * Throws: `invalid_argument` for an unknown format or tool name.
 */
export function toolDefinitions<F extends ToolFormat = 'neutral'>(
  options: ToolDefinitionOptions<F> = {},
): ToolDefinitionsByFormat[F][] {
  if (typeof options !== 'object' || options === null) {
    throw new RoleboxError(
      'invalid_argument',
      `toolDefinitions options must be { format?, tools? }, got ${describeValue(options)}`,
    );
  }
  const format: ToolFormat = options.format ?? 'neutral';
  if (!['neutral', 'openai', 'anthropic'].includes(format)) {
    throw new RoleboxError(
      'invalid_argument',
      `tool format must be neutral, openai or anthropic, got ${describeValue(format)}`,
      { format },
    );
  }
  const names = options.tools ?? AGENT_TOOL_NAMES;
  if (!Array.isArray(names)) {
    throw new RoleboxError(
      'invalid_argument',
      `tools must be an array of tool names, got ${describeValue(names)}`,
    );
  }
  return names.map((name) => {
    const { description } = TOOLS[requireToolName(name)];
    const schema = toolInputJsonSchema(name);
    const shaped =
      format === 'openai'
        ? { type: 'function', function: { name, description, parameters: schema } }
        : format === 'anthropic'
          ? { name, description, input_schema: schema }
          : { name, description, inputSchema: schema };
    return shaped as ToolDefinitionsByFormat[F];
  });
}

/**
 * Runs a tool call the model made on the session: validates the input and calls the
 * session handle.
 * Expects: a tool name of {@link ROLEBOX_TOOL_NAMES}; its input as an object, or as the
 * JSON text an SDK hands over (OpenAI's `function.arguments`).
 * Returns: the text to hand back to the model (the signal's receipt, the loop's id, the
 * view as JSON, the session's answer to an event).
 * Throws: `invalid_argument` for an unknown tool or bad input (naming the value), and
 * whatever the session call refuses with (`unknown_signal_type`, `no_active_loop`,
 * `event_not_allowed`, …); a refused call changes nothing. {@link toolErrorText} turns
 * such an error into text for the model.
 */
export function callTool(session: SessionHandle, name: string, input: unknown): string {
  return runTool(session, name, input).text;
}

/**
 * {@link callTool}, answering whether a call the session did not throw for was refused all
 * the same (`loop refused: …`), for servers that mark refusals (MCP's `isError`).
 * Throws: what {@link callTool} throws.
 */
export function runTool(session: SessionHandle, name: string, input: unknown): ToolReply {
  if (!(session instanceof SessionHandle)) {
    throw new RoleboxError(
      'invalid_argument',
      `callTool needs a session handle (rb.openSession()), got ${describeValue(session)}`,
    );
  }
  return prepareToolCall(name, input)(session);
}

/**
 * Reads a tool call's arguments now, without a session, and answers the call to run on
 * one: a server checks a call before it opens the session the call names.
 * Throws: what {@link callTool} throws for an unknown tool or bad input.
 */
export function prepareToolCall(
  name: string,
  input: unknown,
): (session: SessionHandle) => ToolReply {
  return TOOLS[requireToolName(name)].prepare(argumentsOf(name, input));
}

/**
 * The text to hand the model when a tool call was refused: `refused (<code>): <message>`
 * for a RoleboxError, `error: <message>` for anything else.
 */
export function toolErrorText(error: unknown): string {
  if (isRoleboxError(error)) return `refused (${error.code}): ${error.message}`;
  return `error: ${error instanceof Error ? error.message : describeValue(error)}`;
}

/**
 * The view with only facts in it: an artifact that is not accepted keeps its id, name,
 * status and times, but not its content or summary (SPEC §4.1: only accepted artifacts
 * are served downstream).
 */
export function factsOnlyView(view: SessionView): SessionView {
  return {
    ...view,
    artifacts: view.artifacts.map((artifact) => {
      if (artifact.status === 'accepted') return artifact;
      const { content: _content, summary: _summary, ...rest } = artifact;
      return rest;
    }),
  };
}

function requireToolName(name: unknown): RoleboxToolName {
  if (typeof name === 'string' && Object.hasOwn(TOOLS, name)) return name as RoleboxToolName;
  throw new RoleboxError(
    'invalid_argument',
    `unknown tool ${describeValue(name)}; expected one of ${ROLEBOX_TOOL_NAMES.join(', ')}`,
    { name },
  );
}

/** A tool's arguments: an object, or JSON text of one; no arguments at all is `{}`. */
function argumentsOf(tool: string, input: unknown): unknown {
  if (input === undefined || input === '') return {};
  if (typeof input !== 'string') return input;
  try {
    return JSON.parse(input);
  } catch {
    throw new RoleboxError(
      'invalid_argument',
      `${tool}: arguments must be a JSON object, got ${describeValue(input)}`,
      { tool },
    );
  }
}

/** Parses a tool's input with its schema. Throws: `invalid_argument` naming the field and the value. */
function checkInput<I>(tool: string, schema: z.ZodType<I>, input: unknown): I {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RoleboxError(
      'invalid_argument',
      `${tool}: arguments must be a JSON object, got ${describeValue(input)}`,
      { tool },
    );
  }
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw inputError(tool, parsed.error, input);
}

function inputError(tool: string, error: z.ZodError, input: unknown): RoleboxError {
  const issue = error.issues[0];
  const path = issue?.path ?? [];
  if (issue?.code === 'unrecognized_keys') {
    return new RoleboxError(
      'invalid_argument',
      `${tool}: unknown argument(s) ${issue.keys.map((key) => describeValue(key)).join(', ')}`,
      { tool, keys: issue.keys },
    );
  }
  let value: unknown = input;
  for (const key of path) {
    value =
      typeof value === 'object' && value !== null && Object.hasOwn(value, key)
        ? (value as Record<PropertyKey, unknown>)[key]
        : undefined;
  }
  const field = path.length === 0 ? 'arguments' : path.map(String).join('.');
  const got = value === undefined ? ' (missing)' : `, got ${describeValue(value)}`;
  return new RoleboxError(
    'invalid_argument',
    `${tool}: ${field}: ${issue?.message ?? 'invalid'}${got}`,
    {
      tool,
      field,
    },
  );
}

/** send_event's arguments before the event is read: what is wrong with the event itself is `invalid_event`. */
const sendEventArguments = z.strictObject({
  event: z.custom<object>(
    (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
    { message: 'must be an event object such as { "type": "idle" }' },
  ),
});

/** Reads send_event's arguments; answers what delivers the event to a session. */
function readSendEvent(input: unknown): (session: SessionHandle) => string {
  const { event } = checkInput('send_event', sendEventArguments, input);
  const type =
    typeof event === 'object' && event !== null && Object.hasOwn(event, 'type')
      ? (event as { type: unknown }).type
      : undefined;
  const hostSchema =
    typeof type === 'string' && Object.hasOwn(HOST_EVENT_SCHEMAS, type)
      ? HOST_EVENT_SCHEMAS[type as HostEventName]
      : undefined;
  if (!hostSchema) {
    if (typeof type !== 'string' || !Object.hasOwn(RUNTIME_EVENT_SCHEMAS, type)) {
      throw new RoleboxError(
        'invalid_event',
        `send_event: unknown event type ${describeValue(type)}; expected a runtime event (${Object.keys(RUNTIME_EVENT_SCHEMAS).join(', ')}) or ${HOST_EVENT_NAMES.join(', ')}`,
        { type },
      );
    }
    const runtime = parseRuntimeEvent(event);
    return (session) => JSON.stringify(session.send(runtime));
  }
  const parsed = hostSchema.safeParse(event);
  if (!parsed.success) {
    const problem = inputError('send_event', parsed.error, event);
    throw new RoleboxError(
      'invalid_event',
      problem.message.replace(/^send_event: /, `send_event: ${type}: `),
      {
        type,
      },
    );
  }
  const host = parsed.data as SessionHostEvent;
  return (session) => deliverHostEvent(session, host);
}

/** Delivers an event of the host's own as the session handle's call it stands for. */
function deliverHostEvent(session: SessionHandle, host: SessionHostEvent): string {
  switch (host.type) {
    case 'user_message':
      return JSON.stringify(session.message(host.text));
    case 'idle':
      return JSON.stringify(session.idle());
    case 'activate_function':
      session.activate(host.name);
      return functionState(session, host.name);
    case 'deactivate_function':
      session.deactivate(host.name);
      return functionState(session, host.name);
    case 'resume_function':
      session.resume(host.name);
      return functionState(session, host.name);
  }
}

/** `{"function":…,"phase":…,"status":…}`: where a function stands after an event. */
function functionState(session: SessionHandle, name: string): string {
  const fn = session.view().functions.find((candidate) => candidate.name === name);
  return JSON.stringify({ function: name, phase: fn?.phase, status: fn?.status });
}
