// The Vercel AI SDK's tools are plain objects ({ description, inputSchema, execute }; its
// `tool()` helper only infers types), so this file needs `ai` for its types alone: the
// subpath loads, and toolDefinitions() works, where `ai` is not installed.
import type { Tool } from 'ai';
import { describeValue, RoleboxError } from '../errors.js';
import { SessionHandle } from '../rolebox/session-handle.js';
import {
  AGENT_TOOL_NAMES,
  callTool,
  type RoleboxToolInputs,
  type RoleboxToolName,
  toolSpec,
} from './tools.js';

/** A rolebox tool for the AI SDK: its input as the tool's zod schema types it, the reply text as output. */
export type RoleboxAiTool<N extends RoleboxToolName> = Tool<RoleboxToolInputs[N], string>;

/** The tools {@link sessionTools} answers, by name. */
export type RoleboxAiTools<N extends RoleboxToolName> = { readonly [K in N]: RoleboxAiTool<K> };

/**
 * One of rolebox's tools for the AI SDK (`generateText({ tools: { name: aiTool(session, name) } })`),
 * bound to a session: its `inputSchema` is the tool's zod schema, its `execute` runs
 * {@link callTool} and answers the reply text.
 *
 * A refused call throws the `RoleboxError` from `execute`, which is the AI SDK's own way to
 * report a failed tool: the agent loop goes on, the model reads the error's message as the
 * tool's result (a `tool-error` part), and the host finds the error, code included, in
 * `step.content` (`part.type === 'tool-error'`) or in `onStepFinish`.
 * Throws: `invalid_argument` for something that is not a session handle, or an unknown name.
 */
export function aiTool<N extends RoleboxToolName>(
  session: SessionHandle,
  name: N,
): RoleboxAiTool<N> {
  requireSession(session);
  const spec = toolSpec(name);
  const tool = {
    description: spec.description,
    inputSchema: spec.input,
    execute: (input: RoleboxToolInputs[N]) => callTool(session, name, input),
  };
  return tool as RoleboxAiTool<N>;
}

/** The `signal` tool for the AI SDK (see {@link aiTool}): the agent's out-of-band signals. */
export function signalTool(session: SessionHandle): RoleboxAiTool<'signal'> {
  return aiTool(session, 'signal');
}

/** The `start_loop` tool for the AI SDK (see {@link aiTool}): runs a task for N rounds. */
export function loopTool(session: SessionHandle): RoleboxAiTool<'start_loop'> {
  return aiTool(session, 'start_loop');
}

/** The `stop_loop` tool for the AI SDK (see {@link aiTool}). */
export function stopLoopTool(session: SessionHandle): RoleboxAiTool<'stop_loop'> {
  return aiTool(session, 'stop_loop');
}

/**
 * rolebox's tools for the AI SDK, by name, bound to a session: by default the agent's own
 * (`signal`, `start_loop`, `stop_loop`); `tools` picks others (`session_view`, `send_event`).
 * Spread them into `generateText({ tools: { ...sessionTools(session), ...yours } })`.
 * Throws: `invalid_argument` for something that is not a session handle or an unknown name.
 */
export function sessionTools<const N extends RoleboxToolName = (typeof AGENT_TOOL_NAMES)[number]>(
  session: SessionHandle,
  options: { readonly tools?: readonly N[] } = {},
): RoleboxAiTools<N> {
  requireSession(session);
  const names = options.tools ?? (AGENT_TOOL_NAMES as readonly RoleboxToolName[] as readonly N[]);
  if (!Array.isArray(names)) {
    throw new RoleboxError(
      'invalid_argument',
      `sessionTools: tools must be an array of tool names, got ${describeValue(names)}`,
    );
  }
  return Object.fromEntries(
    names.map((name) => [name, aiTool(session, name)]),
  ) as RoleboxAiTools<N>;
}

function requireSession(session: unknown): asserts session is SessionHandle {
  if (!(session instanceof SessionHandle)) {
    throw new RoleboxError(
      'invalid_argument',
      `rolebox's AI SDK tools need a session handle (rb.openSession()), got ${describeValue(session)}`,
    );
  }
}
