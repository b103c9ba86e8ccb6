// Host-enforced approval of MCP tool calls (`rolebox mcp --require-approval <tool>`, issue 25).
// A guarded call does not run: it opens an approval request in the session's functions
// (a `need_approval` signal whose payload names the tool and its arguments) and answers that
// it waits. The client calls again with the same arguments and `approval_request`; the call
// runs once every request it opened is approved, once only, and never after a rejection.
import { randomUUID } from 'node:crypto';
import { describeValue, RoleboxError } from '../errors.js';
import { openToolApprovalRequest, type SessionHandle } from '../rolebox/session-handle.js';
import type { ApprovalRequest } from '../signal/approval-requests.js';
import type { SignalArgs } from '../signal/schema.js';
import type { ToolReply } from './tools.js';

/** The argument a guarded tool takes besides its own: the request its call was approved under. */
export const APPROVAL_REQUEST_ARGUMENT = 'approval_request';

/** What a tool-call request's payload says in `approvalFor`: it guards an MCP tool call. */
export const MCP_TOOL_CALL = 'mcp_tool_call';

/**
 * The session slot that records the approved calls that ran, by call id: an approval runs
 * its call once. Set in the same step as the run, on the same session record, so both are
 * stored together (the server answers once they are): never run twice after a kill.
 */
export const APPROVED_CALLS_SLOT = 'mcp.approved-calls';

/** The payload of a request a guarded tool call opened. */
export interface ToolCallPayload {
  readonly approvalFor: typeof MCP_TOOL_CALL;
  /** The tool called. */
  readonly tool: string;
  /** Its arguments, without `session_id` and `approval_request`. */
  readonly arguments: Readonly<Record<string, unknown>>;
  /** The call's id: every request the call opened (one per function) carries it. */
  readonly call: string;
  /** What the reviewer reads. */
  readonly reason: string;
}

/**
 * Checks the names given to `--require-approval` (or `requireApproval`): each must be a tool
 * the server offers, so a typo never leaves a tool unguarded (fail closed).
 * Throws: `invalid_argument` naming the first name that is not offered.
 */
export function checkRequiredApprovals(
  names: unknown,
  offered: readonly string[],
): readonly string[] {
  if (!Array.isArray(names) || names.some((name) => typeof name !== 'string'))
    throw new RoleboxError(
      'invalid_argument',
      `requireApproval must be an array of tool names, got ${describeValue(names)}`,
    );
  for (const name of names as string[])
    if (!offered.includes(name))
      throw new RoleboxError(
        'invalid_argument',
        `--require-approval ${describeValue(name)}: no tool of that name is offered (offered: ${offered.join(', ')})`,
        { name },
      );
  return names as string[];
}

/**
 * A guarded call without `approval_request`: opens a request in every live function of the
 * session (the tool and its arguments in the payload) and answers that the call waits.
 * Throws: `approval_refused` when no live function took the request (nothing would ever
 * approve it: the call is refused, not left to run).
 */
export function requestToolApproval(
  session: SessionHandle,
  tool: string,
  args: Readonly<Record<string, unknown>>,
): ToolReply {
  const payload: ToolCallPayload = {
    approvalFor: MCP_TOOL_CALL,
    tool,
    arguments: args,
    call: randomUUID(),
    reason: `the agent calls ${tool} with ${canonicalJson(args)}`,
  };
  // Host-only requests (SPEC §9): the core itself refuses an agent's answer naming one and
  // passes over them with an unnamed one, whatever surface the agent reaches it through.
  const requests = session
    .view()
    .functions.filter((fn) => isLivePhase(fn.phase))
    .map((fn) =>
      openToolApprovalRequest(session, { tool, payload: { ...payload }, function: fn.name }),
    );
  if (requests.length === 0)
    throw new RoleboxError(
      'approval_refused',
      `${tool} needs the host's approval, and session ${session.id} has no live function to hold the request: activate one (rolebox mcp --activate <name>); ${tool} did not run`,
      { tool },
    );
  return waiting(tool, requests);
}

/**
 * A guarded call naming `requestId`: runs `run` when every request of the call that opened
 * it is approved, it was opened for this tool with these arguments, and it has not run yet.
 * The run is recorded with it (see {@link APPROVED_CALLS_SLOT}); a call refused without a
 * change gives its approval back.
 * Returns: the tool's reply, or that the call still waits.
 * Throws: `approval_refused` for an unknown request, another tool or other arguments, a
 * rejected or expired request, or a call that ran already; `invalid_argument` for an id
 * that is not a string.
 */
export function runApprovedCall(
  session: SessionHandle,
  tool: string,
  args: Readonly<Record<string, unknown>>,
  requestId: unknown,
  run: () => ToolReply,
): ToolReply {
  const { group, call } = approvedGroup(session, tool, args, requestId);
  if (group.some((request) => request.status === 'open'))
    return waiting(
      tool,
      group.map((request) => request.id),
    );
  const ran = approvedCalls(session);
  if (Object.hasOwn(ran, call))
    throw refused(`${requestId as string} was used already: an approval runs its call once`, tool);
  session.setSlot(APPROVED_CALLS_SLOT, { ...ran, [call]: { tool, request: requestId } });
  let reply: ToolReply;
  try {
    reply = run();
  } catch (error) {
    session.setSlot(APPROVED_CALLS_SLOT, ran);
    throw error;
  }
  if (reply.refused) session.setSlot(APPROVED_CALLS_SLOT, ran);
  return reply;
}

/**
 * Whether an agent's signal would approve a tool-call request: an `answer` naming one, or
 * an unnamed `answer` while one is the oldest open request of a function (which an unnamed
 * answer resolves). Only the host approves tool calls: such a signal is refused.
 * Throws: `approval_refused` when it would.
 */
export function refuseSelfApproval(session: SessionHandle, signal: SignalArgs): void {
  if (signal.type !== 'answer') return;
  const named = signal.payload?.requestId;
  const reached = session.view().functions.flatMap((fn) => {
    if (typeof named === 'string') return fn.requests.filter((request) => request.id === named);
    const oldest = fn.requests.find((request) => request.status === 'open');
    return oldest ? [oldest] : [];
  });
  const guarded = reached.find((request) => request.status === 'open' && isToolCall(request));
  if (guarded)
    throw new RoleboxError(
      'approval_refused',
      `an answer from the agent would approve ${guarded.id}, a tool call only the host approves (session.approve, rolebox send … approve, or the approve_request tool); answer with payload.requestId naming another request`,
      { requestId: guarded.id },
    );
}

/** The requests of the call `requestId` belongs to, checked against this call. */
function approvedGroup(
  session: SessionHandle,
  tool: string,
  args: Readonly<Record<string, unknown>>,
  requestId: unknown,
): { readonly group: ApprovalRequest[]; readonly call: string } {
  if (typeof requestId !== 'string' || requestId === '')
    throw new RoleboxError(
      'invalid_argument',
      `${APPROVAL_REQUEST_ARGUMENT} must be a request id (<function>:r<n>), got ${describeValue(requestId)}`,
    );
  const requests = session.view().functions.flatMap((fn) => fn.requests);
  const named = requests.find((request) => request.id === requestId);
  if (!named || !isToolCall(named))
    throw refused(`${describeValue(requestId)} is not a tool-call request of this session`, tool);
  const payload = named.payload as ToolCallPayload;
  if (payload.tool !== tool || canonicalJson(payload.arguments) !== canonicalJson(args))
    throw refused(
      `${requestId} was opened for ${payload.tool} with ${canonicalJson(payload.arguments)}, not for this call (${tool} with ${canonicalJson(args)})`,
      tool,
    );
  const group = requests.filter(
    (request) => isToolCall(request) && (request.payload as ToolCallPayload).call === payload.call,
  );
  const ended = group.find(
    (request) => request.status === 'rejected' || request.status === 'expired',
  );
  if (ended)
    throw refused(
      `${ended.id} was ${ended.status}${ended.answeredBy ? ` by ${ended.answeredBy}` : ''}${ended.note ? `: ${ended.note}` : ''}`,
      tool,
    );
  return { group, call: payload.call };
}

/** The approved calls that ran, by call id (empty when none did). */
function approvedCalls(session: SessionHandle): Record<string, unknown> {
  const stored = session.view().slots[APPROVED_CALLS_SLOT];
  return typeof stored === 'object' && stored !== null && !Array.isArray(stored)
    ? { ...(stored as Record<string, unknown>) }
    : {};
}

/** True for a request a guarded tool call opened. */
function isToolCall(request: ApprovalRequest): boolean {
  const payload = request.payload as Partial<ToolCallPayload> | null;
  return (
    typeof payload === 'object' &&
    payload !== null &&
    payload.approvalFor === MCP_TOOL_CALL &&
    typeof payload.call === 'string'
  );
}

/** Phases in which a function records signals (it is spawned and not done). */
function isLivePhase(phase: string): boolean {
  return phase === 'active' || phase === 'gated';
}

/** The reply of a call that waits for `requests`. */
function waiting(tool: string, requests: readonly string[]): ToolReply {
  const [first] = requests;
  return {
    text: `waiting for approval (approval_pending): ${tool} did not run; request ${requests.join(', ')} must be approved by the host first. Then call ${tool} again with the same arguments and ${APPROVAL_REQUEST_ARGUMENT}: "${first}"`,
    refused: true,
  };
}

function refused(why: string, tool: string): RoleboxError {
  return new RoleboxError('approval_refused', `${why}; ${tool} did not run`, { tool });
}

/** JSON with object keys sorted: two argument objects that say the same compare equal. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}
