// rolebox's tools and session resources as an MCP server. The MCP SDK is an optional peer
// dependency: it is loaded when a server is made, and only its types are imported here.
import type { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  McpError,
  ServerNotification,
  ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { checkSessionId, SESSION_ID_MAX_LENGTH, SESSION_ID_PATTERN } from '../base/actor-ids.js';
import { crashPoint } from '../base/crash-point.js';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';
import type { Rolebox } from '../rolebox/rolebox.js';
import type { SessionHandle } from '../rolebox/session-handle.js';
import { parseSignalArgs } from '../signal/schema.js';
import { followLoopProgress } from './loop-progress.js';
import {
  APPROVAL_TOOL_NAMES,
  APPROVAL_TOOLS,
  checkApprovalToken,
  prepareApprovalCall,
} from './mcp-approval-tools.js';
import {
  APPROVAL_REQUEST_ARGUMENT,
  checkRequiredApprovals,
  refuseSelfApproval,
  requestToolApproval,
  runApprovedCall,
} from './mcp-tool-approval.js';
import {
  factsOnlyView,
  inputJsonSchema,
  type JsonSchema,
  prepareToolCall,
  ROLEBOX_TOOL_NAMES,
  type RoleboxToolName,
  type ToolReply,
  toolErrorText,
  toolSchemaShape,
  toolSpec,
} from './tools.js';

/** The npm package the MCP server needs. */
export const MCP_SDK_PACKAGE = '@modelcontextprotocol/sdk';

/** What rolebox uses of the MCP SDK. */
export interface McpSdk {
  readonly McpServer: typeof McpServer;
  readonly ResourceTemplate: typeof ResourceTemplate;
  readonly StdioServerTransport: typeof StdioServerTransport;
  readonly McpError: typeof McpError;
}

/** Loads the MCP SDK's modules (the default imports them; tests pass their own). */
export type McpSdkLoader = () => Promise<McpSdk>;

const importMcpSdk: McpSdkLoader = async () => {
  const [server, stdio, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    McpServer: server.McpServer,
    ResourceTemplate: server.ResourceTemplate,
    StdioServerTransport: stdio.StdioServerTransport,
    McpError: types.McpError,
  };
};

/**
 * Loads the MCP SDK.
 * Throws: `missing_dependency` naming the package and its install line when it is not
 * installed; any other failure of the loader as it is.
 */
export async function loadMcpSdk(load: McpSdkLoader = importMcpSdk): Promise<McpSdk> {
  try {
    return await load();
  } catch (error) {
    if (!isMissingPackage(error, MCP_SDK_PACKAGE)) throw error;
    throw new RoleboxError(
      'missing_dependency',
      `the MCP server needs ${MCP_SDK_PACKAGE}, which is not installed: npm install ${MCP_SDK_PACKAGE}@^1.23`,
      { package: MCP_SDK_PACKAGE },
    );
  }
}

/** True when `error` says that `name` (not something it depends on) cannot be found. */
function isMissingPackage(error: unknown, name: string): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  const notFound =
    code === 'ERR_MODULE_NOT_FOUND' ||
    code === 'MODULE_NOT_FOUND' ||
    /cannot find (package|module)|failed to (load|resolve)/i.test(error.message);
  return notFound && new RegExp(`['"]${name.replace(/[/.]/g, '\\$&')}(['"/])`).test(error.message);
}

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** The rolebox whose sessions the tools drive (started). */
  readonly rolebox: Rolebox;
  /** Functions activated in a session the first time a tool call opens it. */
  readonly activate?: readonly string[];
  /** The tools offered (default: all of {@link ROLEBOX_TOOL_NAMES}). */
  readonly tools?: readonly RoleboxToolName[];
  /** The server's name, as the client is told (default `rolebox`). */
  readonly name?: string;
  /** The server's version, as the client is told (default `unknown`; `rolebox mcp` gives rolebox's). */
  readonly version?: string;
  /** The MCP SDK (default: {@link loadMcpSdk}). */
  readonly sdk?: McpSdk;
  /** Where the server reports what went wrong inside it (default: nowhere); never stdout. */
  readonly log?: (line: string) => void;
  /**
   * The store the rolebox keeps its sessions in: the sessions stored there are listed as
   * resources too, without being activated (default: only the sessions live in this process).
   */
  readonly store?: Pick<SnapshotStore, 'loadAll'>;
  /**
   * Tools the host must approve call by call (fail closed: a name that is not offered is an
   * error). A call opens an approval request and runs only when called again naming it,
   * once the host approved it (see `src/ai/mcp-tool-approval.ts`).
   */
  readonly requireApproval?: readonly string[];
  /**
   * Offers the host's approval tools (`approve_request`, `reject_request`,
   * `extend_request`), each call
   * carrying this token (at least 16 characters, never given to the agent).
   */
  readonly approvalToken?: string;
}

// The schema states the rule checkSessionId enforces, so a client can tell a good id.
const SESSION_ID = z
  .string()
  .min(1)
  .max(SESSION_ID_MAX_LENGTH)
  .regex(SESSION_ID_PATTERN)
  .describe(
    `The session to act on (1-${SESSION_ID_MAX_LENGTH} characters of A-Z a-z 0-9 _ . -): opened the first time it is named, the same one after that.`,
  );

/** The URI of a session's view resource. */
export const sessionViewUri = (sessionId: string) =>
  `rolebox://session/${encodeURIComponent(sessionId)}/view`;

/** The URI of a session's facts (its accepted artifacts). */
export const sessionArtifactsUri = (sessionId: string) =>
  `rolebox://session/${encodeURIComponent(sessionId)}/artifacts`;

/**
 * An MCP server (the SDK's `McpServer`, not yet connected) over a started rolebox. Tools:
 * rolebox's tools (see `toolDefinitions`), each with a `session_id` argument that opens the
 * session on first use (and activates `activate` in it) and gets it after that; a refused
 * call is a tool result with `isError: true` and the text `refused (<code>): <message>`
 * (`loop refused: <why>` for a loop the session would not start).
 * Resources: `rolebox://session/<id>/view` (the view as JSON, without the content of
 * artifacts that are not accepted) and `rolebox://session/<id>/artifacts` (the accepted
 * artifacts: the session's facts), listed for the live sessions and those in `store`; a
 * refused read is a JSON-RPC error (-32002 for a session that does not exist) whose message
 * is `refused (<code>): <message>`. Loop notes: a log message (`notifications/message`,
 * logger `rolebox`, data `{ session, loop, round?, text }`) while the server is connected.
 * A `start_loop` call with a progress token (`_meta.progressToken`) stays open until the
 * loop ends, with a `notifications/progress` for each round that ends.
 * Connect it to a transport yourself (`await server.connect(transport)`), or use
 * {@link serveMcpOverStdio}.
 * Throws: `missing_dependency` without the MCP SDK; `invalid_argument` for bad options.
 */
export async function createMcpServer(options: McpServerOptions): Promise<McpServer> {
  if (typeof options !== 'object' || options === null || typeof options.rolebox !== 'object') {
    throw new RoleboxError(
      'invalid_argument',
      `createMcpServer needs { rolebox, activate?, tools? }, got ${describeValue(options)}`,
    );
  }
  const { rolebox: rb, activate = [], tools = ROLEBOX_TOOL_NAMES, log = () => {} } = options;
  if (!Array.isArray(activate) || activate.some((name) => typeof name !== 'string')) {
    throw new RoleboxError(
      'invalid_argument',
      `activate must be an array of function names, got ${describeValue(activate)}`,
    );
  }
  const sdk = options.sdk ?? (await loadMcpSdk());
  const server = new sdk.McpServer(
    { name: options.name ?? 'rolebox', version: options.version ?? 'unknown' },
    {
      // Loop notes reach the client as log messages (notifications/message).
      capabilities: { logging: {} },
      instructions:
        'rolebox keeps the state of agent sessions: its functions wait for approvals, pause and complete on the signals you send. Every tool takes a session_id (the session is opened the first time it is named). Use signal to say you are done (answer), need approval (need_approval), are blocked or hand over; read rolebox://session/<id>/view for where a session stands. Only accepted artifacts (rolebox://session/<id>/artifacts) are facts.',
    },
  );

  // Models call tools in parallel: a second call naming a session whose open is still in
  // flight waits for that open instead of being refused as a duplicate.
  const opening = new Map<string, Promise<SessionHandle>>();
  const open = async (id: string): Promise<SessionHandle> => {
    const known = rb.sessions().includes(id);
    const session = await rb.openSession({ id, ifOpen: 'reuse' });
    // Activated once, when the session first comes to be (a stored one keeps what it had).
    const seen = new Set(session.view().functions.map((fn) => fn.name));
    for (const name of activate) if (!seen.has(name)) session.activate(name);
    if (!known) server.sendResourceListChanged();
    return session;
  };
  const openSession = (id: string): Promise<SessionHandle> => {
    const inFlight = opening.get(id);
    if (inFlight) return inFlight;
    const opened = open(id).finally(() => opening.delete(id));
    opening.set(id, opened);
    return opened;
  };

  const guarded = new Set(checkRequiredApprovals(options.requireApproval ?? [], tools));
  for (const name of tools) {
    const spec = toolSpec(name);
    const shape = {
      session_id: SESSION_ID,
      ...toolSchemaShape(name),
      ...(guarded.has(name) ? { [APPROVAL_REQUEST_ARGUMENT]: APPROVAL_REQUEST } : {}),
    };
    registerTool(
      server,
      name,
      {
        description: guarded.has(name) ? `${spec.description} ${GUARDED_NOTE}` : spec.description,
        schema: z.strictObject(shape),
        readOnly: spec.readOnly,
      },
      log,
      (args) => {
        // A guarded tool's own arguments are the rest: they are what the request names.
        const { [APPROVAL_REQUEST_ARGUMENT]: requestId, ...own } = args;
        const input = guarded.has(name) ? own : args;
        const call = prepareToolCall(name, input);
        return async (session, extra) => {
          if (name === 'signal' && guarded.size > 0)
            refuseSelfApproval(session, parseSignalArgs(input));
          const reply = guarded.has(name)
            ? await storedGuardedCall(rb, () =>
                guardedCall(session, name, input, requestId, () => call(session)),
              )
            : call(session);
          if (name !== 'start_loop' || reply.refused) return reply;
          return loopToEnd(rb, session, reply, extra);
        };
      },
      openSession,
    );
  }
  if (options.approvalToken !== undefined) {
    const expected = checkApprovalToken(options.approvalToken);
    for (const name of APPROVAL_TOOL_NAMES)
      registerTool(
        server,
        name,
        {
          description: APPROVAL_TOOLS[name].description,
          schema: APPROVAL_TOOLS[name].input.extend({ session_id: SESSION_ID }),
          readOnly: false,
        },
        log,
        (input) => {
          const call = prepareApprovalCall(name, input, expected);
          return async (session) => call(session);
        },
        // Answering never opens a session: one that is not there has no request to answer.
        async (id) => existingSession(rb, id, options.store),
      );
  }

  registerSessionResources(server, sdk, rb, options.store);
  // A loop goes on between tool calls: its notes reach the client while it is connected.
  const stopNotes = rb.on('note', (note) => {
    if (!server.isConnected()) return;
    const data = {
      session: note.sessionId,
      loop: note.loopId,
      ...(note.round === undefined ? {} : { round: note.round }),
      text: note.text,
    };
    server.sendLoggingMessage({ level: 'info', logger: 'rolebox', data }).catch((error) => {
      log(`rolebox mcp: a loop note was not sent: ${(error as Error)?.message ?? String(error)}`);
    });
  });
  const closed = server.server.onclose;
  server.server.onclose = () => {
    stopNotes();
    closed?.();
  };
  return server;
}

/** What rolebox reads of the SDK's extra argument to a tool callback. */
type ToolCallExtra = Pick<
  RequestHandlerExtra<ServerRequest, ServerNotification>,
  '_meta' | 'signal' | 'sendNotification'
>;

/** What the MCP server is told of a tool: its description, input and whether it reads only. */
interface RegisteredTool {
  readonly description: string;
  readonly schema: z.ZodType;
  readonly readOnly: boolean;
}

/** A tool call's arguments read (without `session_id`): the call to run on its session. */
type PreparedCall = (session: SessionHandle, extra: ToolCallExtra) => Promise<ToolReply>;

/**
 * Registers one tool: its arguments are read before the session is opened (a bad call opens
 * nothing), a refusal is a result with `isError` and `refused (<code>): …`, anything else
 * that went wrong is logged and answered as `error: …`.
 */
function registerTool(
  server: McpServer,
  name: string,
  tool: RegisteredTool,
  log: (line: string) => void,
  prepare: (input: Record<string, unknown>) => PreparedCall,
  sessionFor: (id: string) => Promise<SessionHandle>,
): void {
  server.registerTool(
    name,
    {
      description: tool.description,
      inputSchema: listedOnly(inputJsonSchema(tool.schema)),
      annotations: { readOnlyHint: tool.readOnly, openWorldHint: false },
    },
    async (args: Record<string, unknown>, extra: ToolCallExtra) => {
      const { session_id: sessionId, ...input } = args;
      try {
        checkSessionId(sessionId);
        const call = prepare(input);
        const reply = await call(await sessionFor(sessionId), extra);
        return {
          content: [{ type: 'text' as const, text: reply.text }],
          ...(reply.refused ? { isError: true } : {}),
        };
      } catch (error) {
        if (!isRoleboxError(error))
          log(`rolebox mcp: ${name} failed: ${(error as Error)?.stack ?? String(error)}`);
        return {
          content: [{ type: 'text' as const, text: toolErrorText(error) }],
          isError: true,
        };
      }
    },
  );
}

/** What a guarded tool's description adds: how its calls are approved. */
const GUARDED_NOTE = `The host must approve each call of this tool: a call without ${APPROVAL_REQUEST_ARGUMENT} does not run, it opens an approval request and answers its id. Once the host approved it, call again with the same arguments and ${APPROVAL_REQUEST_ARGUMENT} set to that id: the call runs, once.`;

const APPROVAL_REQUEST = z
  .string()
  .min(1)
  .optional()
  .describe(
    'The approval request (`<function>:r<n>`) an earlier call of this tool with the same arguments opened and the host approved.',
  );

/** A guarded call: opens its approval request, or runs under the approved one it names. */
function guardedCall(
  session: SessionHandle,
  name: string,
  args: Record<string, unknown>,
  requestId: unknown,
  run: () => ToolReply,
): ToolReply {
  if (requestId === undefined) return requestToolApproval(session, name, args);
  return runApprovedCall(session, name, args, requestId, run);
}

/**
 * Runs a guarded call and answers once what it did is stored: a reply that says a request
 * was opened or a call ran is never ahead of the store. The call's run and its record in
 * `mcp.approved-calls` change the same session record, so they are stored together: a kill
 * before the save loses both (the call runs once after a restart), a kill after it repeats
 * neither. Crash points (tests): `mcp-approved-ran` (run, not stored), `mcp-approved-saved`
 * (stored, not answered).
 */
async function storedGuardedCall(rb: Rolebox, guarded: () => ToolReply): Promise<ToolReply> {
  const reply = guarded();
  crashPoint('mcp-approved-ran');
  await rb.flush();
  crashPoint('mcp-approved-saved');
  return reply;
}

/**
 * A session live in `rb` or stored in `store`, never a new one.
 * Throws: `unknown_session` when neither holds it.
 */
async function existingSession(
  rb: Rolebox,
  id: string,
  store: McpServerOptions['store'],
): Promise<SessionHandle> {
  const stored = rb.sessions().includes(id) || (await store?.loadAll())?.some((r) => r.id === id);
  if (!stored)
    throw new RoleboxError('unknown_session', `no session ${describeValue(id)} to answer in`, {
      id,
    });
  return rb.openSession({ id, ifOpen: 'reuse' });
}

/**
 * For a `start_loop` call that asked for progress (MCP's `_meta.progressToken`): keeps the
 * call open until the loop ends, sending `notifications/progress` with that token as its
 * rounds end (progress = rounds ended, total = the loop's rounds, message = the round's
 * note), and answers how it ended: `isError` when it ended in `error` or `interrupted`. A
 * call without a token answers at once (the loop goes on; its notes are log messages).
 * Progress belongs to a request in flight, so it can only be sent while the call waits.
 */
async function loopToEnd(
  rb: Rolebox,
  session: SessionHandle,
  started: ToolReply,
  extra: ToolCallExtra,
): Promise<ToolReply> {
  const progressToken = extra._meta?.progressToken;
  const loop = session.view().loop;
  if (progressToken === undefined || !loop) return started;
  let sent: Promise<void> = Promise.resolve();
  const outcome = await followLoopProgress(
    rb,
    { sessionId: session.id, loopId: loop.id, total: loop.total },
    (progress) => {
      const sending = extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken, ...progress },
        })
        .catch(() => {}); // the client went away: the call ends with it
      sent = sent.then(() => sending);
    },
    extra.signal,
  );
  if (!outcome) return started;
  // The last round's progress is written in the same tick as the loop ends. The SDK's
  // client handles a notification a microtask later than a response read with it, and then
  // finds the call over (typescript-sdk#2580): the answer leaves in a later turn.
  await sent;
  await new Promise<void>((resolve) => setTimeout(resolve, 0));
  return {
    text: `${started.text}\nloop ${loop.id} ended ${outcome.phase} after ${outcome.rounds} of ${loop.total} round(s)`,
    refused: outcome.phase === 'error' || outcome.phase === 'interrupted',
  };
}

/**
 * Registers the session resources (`view`, `artifacts`): listed for the live sessions and
 * those in `store`, read from a live or activated session, never created by a read.
 */
function registerSessionResources(
  server: McpServer,
  sdk: McpSdk,
  rb: Rolebox,
  store: McpServerOptions['store'],
): void {
  // The live sessions, then the stored ones that are not live: listed from their records'
  // ids, not activated (reading one activates it, as a tool call would).
  const sessionIds = async (): Promise<string[]> => {
    const live = rb.sessions();
    if (!store) return live;
    const seen = new Set(live);
    const stored = (await store.loadAll())
      .map((record) => record.id)
      // A session's record has its id; the others ($system, $pipeline:…) start with `$`,
      // which no session id holds.
      .filter((id) => SESSION_ID_PATTERN.test(id) && !seen.has(id))
      .sort();
    return [...live, ...stored];
  };
  const listSessions = (uri: (id: string) => string, what: string) => async () => ({
    resources: (await sessionIds()).map((id) => ({
      uri: uri(id),
      name: `${id} ${what}`,
      mimeType: 'application/json',
    })),
  });
  // A resource is read, never created: a session nobody opened is "not found" (-32002, as
  // MCP says), any other refusal bad params; the RoleboxError's code goes along as data.
  const sessionOf = (variables: Record<string, string | string[]>): SessionHandle => {
    const raw = variables.session_id;
    const id = decodeURIComponent(Array.isArray(raw) ? (raw[0] ?? '') : (raw ?? ''));
    try {
      return rb.session(id);
    } catch (error) {
      if (!isRoleboxError(error)) throw error;
      const notFound = error.code === 'unknown_session';
      throw new ResourceRefusal(notFound ? -32002 : -32602, error);
    }
  };
  server.registerResource(
    'session-view',
    new sdk.ResourceTemplate('rolebox://session/{session_id}/view', {
      list: listSessions(sessionViewUri, 'view'),
    }),
    {
      title: 'Session view',
      description:
        'Where a session stands: phase, waiting reason, functions, loop, artifacts (content only when accepted).',
      mimeType: 'application/json',
    },
    (uri, variables) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify(factsOnlyView(sessionOf(variables).view()), null, 2),
        },
      ],
    }),
  );
  server.registerResource(
    'session-artifacts',
    new sdk.ResourceTemplate('rolebox://session/{session_id}/artifacts', {
      list: listSessions(sessionArtifactsUri, 'facts'),
    }),
    {
      title: 'Session facts',
      description: "A session's accepted artifacts: the only ones that may be used as facts.",
      mimeType: 'application/json',
    },
    (uri, variables) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify(sessionOf(variables).facts(), null, 2),
        },
      ],
    }),
  );
}

/**
 * A tool's input schema as the SDK takes it: it lists `schema` (zod writes an object's
 * metadata into its JSON Schema) and lets every object through to the tool, which reads
 * the arguments with rolebox's own checks, the rules `schema` states. So a bad call is
 * refused as every other refusal (`refused (<code>): …`, naming the value), not in the
 * SDK's words ("Input validation error: …").
 */
function listedOnly(schema: JsonSchema): z.ZodType<Record<string, unknown>> {
  return z.looseObject({}).meta(schema);
}

/**
 * A refused resource read, as the SDK answers a thrown error: its `code` and `data` go in
 * the JSON-RPC error. Not the SDK's McpError, whose message already starts with
 * `MCP error <code>:`, which the client's McpError prefixes once more.
 */
class ResourceRefusal extends Error {
  readonly code: number;
  readonly data: { readonly code: string };
  constructor(code: number, refusal: RoleboxError) {
    super(toolErrorText(refusal));
    this.name = 'ResourceRefusal';
    this.code = code;
    this.data = { code: refusal.code };
  }
}

/** Options of {@link serveMcpOverStdio}: the server's, and the streams (default the process's). */
export interface McpStdioOptions extends McpServerOptions {
  readonly stdin?: NodeJS.ReadableStream;
  readonly stdout?: NodeJS.WritableStream;
}

/** A server connected over stdio: `closed` resolves when the client is gone or `close()` was called. */
export interface McpStdioServer {
  readonly server: McpServer;
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves {@link createMcpServer} over stdio (stdin carries the client's frames, stdout only
 * the server's). `closed` resolves when stdin ends (the client went away) or on `close()`.
 * Throws: what {@link createMcpServer} throws.
 */
export async function serveMcpOverStdio(options: McpStdioOptions): Promise<McpStdioServer> {
  const sdk = options.sdk ?? (await loadMcpSdk());
  const server = await createMcpServer({ ...options, sdk });
  const stdin = options.stdin ?? process.stdin;
  const transport = new sdk.StdioServerTransport(
    stdin as typeof process.stdin,
    (options.stdout ?? process.stdout) as typeof process.stdout,
  );
  let markClosed = () => {};
  const closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      stdin.off('end', onEnd);
      await server.close();
      markClosed();
    })();
    return closing;
  };
  const onEnd = () => {
    close().catch(() => markClosed());
  };
  stdin.once('end', onEnd);
  transport.onclose = () => markClosed();
  await server.connect(transport);
  return { server, closed, close };
}
