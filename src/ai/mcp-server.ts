// rolebox's tools and session resources as an MCP server. The MCP SDK is an optional peer
// dependency: it is loaded when a server is made, and only its types are imported here.
import type { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { describeValue, isRoleboxError, RoleboxError } from '../errors.js';
import type { Rolebox } from '../rolebox/rolebox.js';
import type { SessionHandle } from '../rolebox/session-handle.js';
import {
  callTool,
  factsOnlyView,
  ROLEBOX_TOOL_NAMES,
  type RoleboxToolName,
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
}

const SESSION_ID = z
  .string()
  .min(1)
  .describe('The session to act on: opened the first time it is named, the same one after that.');

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
 * call is a tool result with `isError: true` and the text `refused (<code>): <message>`.
 * Resources: `rolebox://session/<id>/view` (the view as JSON, without the content of
 * artifacts that are not accepted) and `rolebox://session/<id>/artifacts` (the accepted
 * artifacts: the session's facts).
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

  for (const name of tools) {
    const spec = toolSpec(name);
    server.registerTool(
      name,
      {
        description: spec.description,
        inputSchema: z.strictObject({ session_id: SESSION_ID, ...toolSchemaShape(name) }),
        annotations: { readOnlyHint: spec.readOnly, openWorldHint: false },
      },
      async (args: Record<string, unknown>) => {
        const { session_id: sessionId, ...input } = args;
        try {
          const session = await openSession(sessionId as string);
          return { content: [{ type: 'text' as const, text: callTool(session, name, input) }] };
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

  const listSessions = (uri: (id: string) => string, what: string) => () => ({
    resources: rb.sessions().map((id) => ({
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
      throw new sdk.McpError(notFound ? -32002 : -32602, error.message, { code: error.code });
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
  return server;
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
