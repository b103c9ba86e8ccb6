// Host-enforced tool approval (SPEC §9, issue 25 item 3): a tool wrapped by requireApproval
// runs only after the host approves the request its call opens. The call is recorded in the
// session (a host-only request carrying the tool, its arguments and the call's key) before
// the model's step waits; the approved execution runs with the request id as its idempotency
// key and its output is recorded beside the request, so a process killed after the approval
// runs the tool once on restart, and a rejected call never runs.
import type { Tool, ToolExecutionOptions, ToolSet } from 'ai';
import { crashPoint } from '../base/crash-point.js';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import { FUNCTION_NAME_PATTERN } from '../function/definition.js';
import { openToolApprovalRequest, SessionHandle } from '../rolebox/session-handle.js';
import type { ApprovalRequest } from '../signal/approval-requests.js';

/** What {@link requireApproval} takes besides the tool. */
export interface RequireApprovalOptions<INPUT> {
  /** Whether this call needs approval (default: every call does); a call it lets pass runs at once. */
  readonly when?: (input: INPUT) => boolean;
  /**
   * The function whose ledger takes the request (it must be live when the tool is called).
   * Default: the first live function that lists the tool in `requires_approval_for`.
   */
  readonly function?: string;
  /** How often a waiting call looks at its request, in ms of the real clock (default 200). */
  readonly pollMs?: number;
}

/** What a tool held for approval needs at call time: the session, and the key of the run that calls it. */
export interface ToolApprovalContext {
  /** The session whose function takes the request. */
  readonly session: SessionHandle;
  /**
   * The key of the agent run that makes the calls (an effect handler's `ctx.idempotencyKey`):
   * a run made again after a crash finds the requests of its calls instead of opening new ones.
   */
  readonly idempotencyKey: string;
  /** Aborts a waiting call (an effect handler's `ctx.signal`). */
  readonly signal?: AbortSignal;
}

/** The key the approved execution gets as `experimental_context.idempotencyKey`: the request id. */
export interface ApprovedToolContext {
  /** The request that approved this execution: the same on every attempt, after a restart too. */
  readonly idempotencyKey: string;
  /** That request, as approved. */
  readonly request: ApprovalRequest;
}

const OPTION_NAMES = ['when', 'function', 'pollMs'] as const;
const DEFAULT_POLL_MS = 200;
/** The kv key of a function where the output of the call its request `id` approved is recorded. */
export const toolOutputKey = (requestId: string): string => `tool_output:${requestId}`;

/** The tools {@link requireApproval} made, with what each wraps. */
const held = new WeakMap<object, { readonly tool: Tool; readonly options: CheckedOptions }>();

type CheckedOptions = RequireApprovalOptions<unknown> & { readonly pollMs: number };

/**
 * An AI SDK tool (`tool({ … })` of `ai` 6.x) whose calls the host must approve (SPEC §9). A call
 * (when `when` holds, or always) opens an approval request in a function's ledger, carrying
 * `{ tool, input, callKey }` as its payload; only the host answers it (`session.approve` /
 * `session.reject`, never an agent's `answer` signal: `approval_host_only`). The wrapped
 * `execute` runs once that request is approved, with `experimental_context` of
 * {@link ApprovedToolContext} (the request id as its idempotency key), and its output is
 * recorded in the function's kv (`tool_output:<requestId>`) before the model gets it. When
 * the request ends any other way (rejected, expired, its function ended) the model gets a
 * refusal text naming the tool and why, and `execute` never runs.
 *
 * The tool needs its session at call time: agents of `agentEffects` get it (their spec's
 * `tools`); a host's own `generateText` binds it with {@link bindApprovalTools}. Called
 * unbound, it refuses (throws `invalid_argument`): it never runs without an approval.
 * Throws (when made): `invalid_argument` for a tool without `execute` or a bad option.
 */
export function requireApproval<T extends Tool>(
  tool: T,
  options: RequireApprovalOptions<T extends Tool<infer I> ? I : unknown> = {},
): T {
  const original = checkTool(tool);
  const checked = checkOptions(options as RequireApprovalOptions<unknown>);
  const wrapped = {
    ...original,
    execute: () => {
      throw new RoleboxError(
        'invalid_argument',
        'this tool needs the host’s approval and has no session: give it to agentEffects (an agent’s tools) or bind it with bindApprovalTools(tools, { session, idempotencyKey })',
      );
    },
  };
  held.set(wrapped, { tool: original, options: checked });
  return wrapped as unknown as T;
}

/**
 * `tools` with every tool {@link requireApproval} made bound to a session and a run key, so
 * that its calls open and wait for their requests there; other tools are returned as they
 * are. agentEffects does this for an agent's tools with its effect context.
 * Throws: `invalid_argument` for a context without a session handle or a key.
 */
export function bindApprovalTools(tools: ToolSet, context: ToolApprovalContext): ToolSet {
  checkContext(context);
  const bound: ToolSet = {};
  const calls = { count: new Map<string, number>() };
  for (const [name, tool] of Object.entries(tools)) {
    const entry = held.get(tool);
    bound[name] = entry ? boundTool(name, entry.tool, entry.options, context, calls) : tool;
  }
  return bound;
}

/** One held tool, bound: its execute opens (or finds) the call's request, waits, then runs or refuses. */
function boundTool(
  name: string,
  original: Tool,
  options: CheckedOptions,
  context: ToolApprovalContext,
  calls: { count: Map<string, number> },
): Tool {
  const execute = original.execute as (input: unknown, o: ToolExecutionOptions) => unknown;
  return {
    ...original,
    execute: async (input: unknown, callOptions: ToolExecutionOptions) => {
      if (options.when && !options.when(input)) return execute(input, callOptions);
      // The n-th call of this tool in this run: the same key when the run is made again.
      const n = (calls.count.get(name) ?? 0) + 1;
      calls.count.set(name, n);
      const call = { tool: name, input, callKey: `${context.idempotencyKey}/${name}#${n}` };
      const opened = findOrOpen(context.session, call, options);
      const ended = await requestEnd(context, opened, options.pollMs, callOptions.abortSignal);
      if (ended.request.status !== 'answered') return refusalText(name, ended);
      return runApproved(context.session, ended.request, () =>
        execute(input, {
          ...callOptions,
          experimental_context: {
            idempotencyKey: ended.request.id,
            request: ended.request,
          } satisfies ApprovedToolContext,
        }),
      );
    },
  } as Tool;
}

/** What a held call asks approval for: the request's payload. */
interface HeldCall {
  readonly tool: string;
  readonly input: unknown;
  readonly callKey: string;
}

/** A request of the session, where it is: its function and whether that function is live. */
interface FoundRequest {
  readonly request: ApprovalRequest;
  readonly live: boolean;
}

/** The newest request of the session's functions that `matches`, with whether its function is live. */
function findRequest(
  session: SessionHandle,
  matches: (request: ApprovalRequest) => boolean,
): FoundRequest | undefined {
  for (const fn of session.view().functions) {
    const request = [...fn.requests].reverse().find(matches);
    if (request) return { request, live: fn.status === 'live' };
  }
  return undefined;
}

/** Whether `request` is the one a run opened for `call`: the host's, same key, same tool, same arguments. */
function isRequestOf(call: HeldCall): (request: ApprovalRequest) => boolean {
  const input = JSON.stringify(call.input ?? null);
  return (request) => {
    const payload = request.payload as Partial<HeldCall> | null;
    return (
      request.hostOnly === true &&
      payload?.callKey === call.callKey &&
      payload.tool === call.tool &&
      JSON.stringify(payload.input ?? null) === input
    );
  };
}

/** The call's request: the one a run before this one opened, else a new one (recorded before anything waits). */
function findOrOpen(session: SessionHandle, call: HeldCall, options: CheckedOptions): string {
  const found = findRequest(session, isRequestOf(call));
  if (found) return found.request.id;
  return openToolApprovalRequest(session, {
    tool: call.tool,
    payload: { tool: call.tool, input: toJson(call.input), callKey: call.callKey },
    ...(options.function === undefined ? {} : { function: options.function }),
  });
}

/** Waits until request `id` is no longer open, or its function ended with it open. */
async function requestEnd(
  context: ToolApprovalContext,
  id: string,
  pollMs: number,
  abortSignal: AbortSignal | undefined,
): Promise<FoundRequest> {
  for (;;) {
    context.signal?.throwIfAborted();
    abortSignal?.throwIfAborted();
    const found = findRequest(context.session, (request) => request.id === id);
    if (!found) throw new Error(`rolebox internal error: request ${id} is gone from the session`);
    if (found.request.status !== 'open' || !found.live) return found;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Runs an approved call once: its recorded output when a run before this one recorded it. */
async function runApproved(
  session: SessionHandle,
  request: ApprovalRequest,
  execute: () => unknown,
): Promise<unknown> {
  const fn = session.view().functions.find((view) => view.name === request.function);
  const key = toolOutputKey(request.id);
  if (fn && Object.hasOwn(fn.kv, key)) return (fn.kv[key] as { output: unknown }).output;
  // Approved and saved, not run: a kill here must run the tool once on restart.
  crashPoint('tool-approved');
  const output = await execute();
  // Run, its output not recorded: a kill here runs it again with the same key (at least once).
  crashPoint('tool-ran');
  session.setKv(request.function, key, { output: toJson(output) ?? null });
  return output;
}

/** What the model reads for a call that was not run: the tool, the request and why. */
export function refusalText(tool: string, ended: FoundRequest): string {
  const { request } = ended;
  const by = request.answeredBy === undefined ? '' : ` by ${request.answeredBy}`;
  const why = request.note === undefined ? '' : `: ${request.note}`;
  const how =
    request.status === 'open'
      ? `was never answered: function ${request.function} ended first`
      : request.status === 'rejected'
        ? `was rejected${by}${why}`
        : `${request.status}${by}${why}`;
  return `tool ${tool} was not run: its approval request ${request.id} ${how}. Do not call it again for the same action unless the user asks.`;
}

function toJson(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

function checkTool(tool: unknown): Tool {
  if (
    typeof tool !== 'object' ||
    tool === null ||
    typeof (tool as { execute?: unknown }).execute !== 'function'
  )
    throw new RoleboxError(
      'invalid_argument',
      `requireApproval needs an AI SDK tool with an execute function, got ${describeValue(tool)}`,
    );
  return tool as Tool;
}

function checkOptions(options: RequireApprovalOptions<unknown>): CheckedOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new RoleboxError(
      'invalid_argument',
      `requireApproval options must be an object, got ${describeValue(options)}`,
    );
  checkOptionNames(options, OPTION_NAMES, 'requireApproval options');
  const { when, function: fn, pollMs = DEFAULT_POLL_MS } = options;
  const problem =
    when !== undefined && typeof when !== 'function'
      ? ['when', 'a function (input) => boolean', when]
      : fn !== undefined && (typeof fn !== 'string' || !FUNCTION_NAME_PATTERN.test(fn))
        ? ['function', 'a function name (kebab-case)', fn]
        : !(Number.isInteger(pollMs) && pollMs >= 1 && pollMs <= 60_000)
          ? ['pollMs', 'a whole number of ms from 1 to 60000', pollMs]
          : undefined;
  if (problem)
    throw new RoleboxError(
      'invalid_argument',
      `requireApproval option ${problem[0]} must be ${problem[1]}, got ${describeValue(problem[2])}`,
      { option: problem[0] },
    );
  return { ...options, pollMs };
}

function checkContext(context: ToolApprovalContext): void {
  const ok =
    typeof context === 'object' &&
    context !== null &&
    context.session instanceof SessionHandle &&
    typeof context.idempotencyKey === 'string' &&
    context.idempotencyKey !== '' &&
    (context.signal === undefined || context.signal instanceof AbortSignal);
  if (!ok)
    throw new RoleboxError(
      'invalid_argument',
      `bindApprovalTools needs { session, idempotencyKey, signal? }, got ${describeValue(context)}`,
    );
}
