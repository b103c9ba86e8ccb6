// The host's approval tools over MCP (`rolebox mcp --approval-tools`): approve_request,
// reject_request and extend_request, the command table's `approve`, `reject` and
// `extendRequest` rows. An agent must not approve
// its own requests, and an MCP client may show every tool to its model: so each call carries
// a token the host holds and the model is never given, and a call without it is refused.
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import { SESSION_COMMAND_ROWS } from '../rolebox/command-table.js';
import type { SessionHandle } from '../rolebox/session-handle.js';
import type { ToolReply } from './tools.js';

/** The environment variable `rolebox mcp --approval-tools` reads the approval token from. */
export const APPROVAL_TOKEN_ENV = 'ROLEBOX_APPROVAL_TOKEN';

/** The fewest characters an approval token may have. */
export const MIN_APPROVAL_TOKEN_LENGTH = 16;

/** The names of the host's approval tools. */
export const APPROVAL_TOOL_NAMES = ['approve_request', 'reject_request', 'extend_request'] as const;

/** One of {@link APPROVAL_TOOL_NAMES}. */
export type ApprovalToolName = (typeof APPROVAL_TOOL_NAMES)[number];

const [approveOptions] = SESSION_COMMAND_ROWS.approve.arguments.def.items.slice(1);
const [rejectOptions] = SESSION_COMMAND_ROWS.reject.arguments.def.items.slice(1);
const [extendOptions] = SESSION_COMMAND_ROWS.extendRequest.arguments.def.items.slice(1);

const requestId = z
  .string()
  .min(1)
  .describe('The approval request to answer, `<function>:r<n>` (see requests in session_view).');
const token = z
  .string()
  .describe("The host's approval token (never given to the agent): a call without it is refused.");

/** One approval tool: what the client is told, its input, and how it runs. */
interface ApprovalToolSpec {
  readonly description: string;
  readonly input: z.ZodObject;
  run(session: SessionHandle, args: Record<string, unknown>): ToolReply;
}

/**
 * The tool of a host command on one request (a command-table row taking a request id and
 * its options): its input is the request id, the token and the row's option fields, and it
 * answers the command's receipt text.
 */
function requestTool(
  description: string,
  options: z.ZodType | undefined,
  command: (session: SessionHandle, requestId: string, options: never) => { readonly text: string },
): ApprovalToolSpec {
  const fields = (options instanceof z.ZodOptional ? options.unwrap() : options) as z.ZodObject;
  return {
    description,
    input: z.strictObject({ request_id: requestId, token, ...fields.shape }),
    run: (session, { request_id: id, token: _, ...rest }) => ({
      text: command(session, id as string, rest as never).text,
      refused: false,
    }),
  };
}

/** The approval tools, by name. */
export const APPROVAL_TOOLS: Readonly<Record<ApprovalToolName, ApprovalToolSpec>> = {
  approve_request: requestTool(
    "The host approves an approval request (session.approve): the function's gate opens, a tool call it guards may run. With seenVersion (the function's version the reviewer saw), refused when the function changed since.",
    approveOptions,
    (session, id, options) => session.approve(id, options),
  ),
  reject_request: requestTool(
    'The host rejects an approval request (session.reject, a revise_needed with the reason): the gate stays closed, a tool call it guards never runs.',
    rejectOptions,
    (session, id, options) => session.reject(id, options),
  ),
  extend_request: requestTool(
    "The host moves an open approval request's deadline to now + timeoutMs (session.extendRequest): it expires then, as its function's on_timeout says, unless answered first.",
    extendOptions,
    (session, id, options) => session.extendRequest(id, options),
  ),
};

/**
 * Checks an approval token: a string of at least {@link MIN_APPROVAL_TOKEN_LENGTH}
 * characters. Throws: `invalid_argument` (the token itself is never named).
 */
export function checkApprovalToken(value: unknown): string {
  if (typeof value !== 'string' || value.length < MIN_APPROVAL_TOKEN_LENGTH)
    throw new RoleboxError(
      'invalid_argument',
      `the approval tools need a token of at least ${MIN_APPROVAL_TOKEN_LENGTH} characters (${APPROVAL_TOKEN_ENV} for rolebox mcp), got ${typeof value === 'string' ? `${value.length} character(s)` : describeValue(value)}`,
    );
  return value;
}

/**
 * Reads an approval tool's arguments (without `session_id`): checks them against its input
 * and the token. Returns: the call to run on the session.
 * Throws: `invalid_argument` for bad arguments or a token that is not the host's.
 */
export function prepareApprovalCall(
  name: ApprovalToolName,
  input: Record<string, unknown>,
  expectedToken: string,
): (session: SessionHandle) => ToolReply {
  const spec = APPROVAL_TOOLS[name];
  const parsed = spec.input.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RoleboxError(
      'invalid_argument',
      `${name}: ${issue?.path.join('.') || 'arguments'}: ${issue?.message ?? 'invalid'}`,
      { tool: name },
    );
  }
  const args = parsed.data as Record<string, unknown>;
  if (!sameToken(args.token as string, expectedToken))
    throw new RoleboxError(
      'invalid_argument',
      `${name}: the token is not the host's approval token; nothing was answered`,
      { tool: name },
    );
  return (session) => spec.run(session, args);
}

/** Compares two tokens in constant time (their digests, so lengths do not leak either). */
function sameToken(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
