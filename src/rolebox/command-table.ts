/**
 * The session API as one table (DESIGN §10): every command and read of a session handle and
 * of its artifacts handle, with its arguments, whether it changes the session, the error
 * codes it throws and the Restate handler that serves it. The surfaces are derived from it:
 * the handles' guard (`guardCommands`), the Restate object's exclusive and shared handlers,
 * the Restate client's handle (src/restate/), and the commands of `rolebox send`
 * (src/cli/send-commands.ts). A new command is one row here plus its method and its machine
 * handling; test/command-table.test.ts fails for a method without a row, a row without a
 * method, a Restate handler or client method the table does not list, and a row
 * `rolebox send` does not reach.
 */
import { z } from 'zod';
import { ARTIFACT_NAME_PATTERN } from '../base/input-limits.js';
import type { ErrorCode } from '../errors.js';
import { ARTIFACT_STATUSES } from '../session/artifact-lifecycle.js';
import { RUNTIME_EVENT_SCHEMAS } from '../session/runtime-event-schema.js';
import { MAX_APPROVAL_TIMEOUT_MS } from '../signal/approval-timeout.js';
import { signalArgsSchema } from '../signal/schema.js';

/** One row of the command table: what one method of a handle takes, does and throws. */
export interface CommandRow {
  /**
   * `command`: may change the session (an exclusive handler on Restate, one step at a time);
   * `read`: only reads it (a shared handler, concurrent with the others).
   */
  readonly kind: 'command' | 'read';
  /** The parameters' names, in order: what the guard's errors name. */
  readonly parameters: readonly string[];
  /**
   * The arguments' shape, as a zod tuple (what agents and tools are told). The method still
   * checks its arguments itself, with the codes of `throws`: the schema describes, it does
   * not replace those checks.
   */
  readonly arguments: z.ZodType<readonly unknown[]>;
  /** The codes the method itself throws, besides the guard's ({@link GUARD_CODES}). */
  readonly throws: readonly ErrorCode[];
  /**
   * The Restate handler that serves it (src/restate/session-object.ts), or `null` for one
   * served by no handler. Two read rows may name the same handler when they answer the same.
   */
  readonly restate: string | null;
  /**
   * For agents: the agent tool that exposes this row (src/ai/tools.ts, served by the MCP
   * server and the AI SDK wrappers). Rows without it are for host code only.
   */
  readonly agentTool?: string;
}

/**
 * The codes every row may throw before its method runs: the guard's (an argument that cannot
 * be read, a session that is not live in this rolebox or whose rolebox is not running).
 */
export const GUARD_CODES = [
  'invalid_argument',
  'unknown_session',
  'session_owned_elsewhere',
  'not_started',
  'stopped',
  'store_failed',
] as const satisfies readonly ErrorCode[];

const name = z.string().min(1);
const toolName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/);
const runtimeEvent = z.union(Object.values(RUNTIME_EVENT_SCHEMAS));
const json = z.unknown();

/** Every command and read of `SessionHandle`, by method name. */
export const SESSION_COMMAND_ROWS = {
  send: {
    kind: 'command',
    parameters: ['event'],
    arguments: z.tuple([runtimeEvent]),
    throws: [
      'invalid_event',
      'event_not_allowed',
      'decision_mismatch',
      'artifact_mismatch',
      'unknown_artifact',
      'invalid_artifact_transition',
    ],
    restate: 'send',
    agentTool: 'send_event',
  },
  toolCall: {
    kind: 'command',
    parameters: ['call'],
    arguments: z.tuple([z.object({ name: toolName, kind: z.enum(['loop', 'boundary']) })]),
    throws: ['tool_not_allowed', 'invalid_argument'],
    restate: 'toolCall',
  },
  facts: { kind: 'read', parameters: [], arguments: z.tuple([]), throws: [], restate: 'facts' },
  setSlot: {
    kind: 'command',
    parameters: ['key', 'value'],
    arguments: z.tuple([name, json]),
    throws: ['invalid_argument'],
    restate: 'setSlot',
  },
  activate: {
    kind: 'command',
    parameters: ['name'],
    arguments: z.tuple([name]),
    throws: ['unknown_function', 'function_already_active'],
    restate: 'activate',
    agentTool: 'send_event',
  },
  deactivate: {
    kind: 'command',
    parameters: ['name'],
    arguments: z.tuple([name]),
    throws: ['unknown_function', 'function_not_active'],
    restate: 'deactivate',
    agentTool: 'send_event',
  },
  signal: {
    kind: 'command',
    parameters: ['args'],
    arguments: z.tuple([signalArgsSchema]),
    throws: [
      'unknown_signal_type',
      'invalid_signal_payload',
      'invalid_argument',
      'stale_answer',
      'stale_approval',
      'approval_host_only',
    ],
    restate: 'signal',
    agentTool: 'signal',
  },
  tool: {
    kind: 'command',
    parameters: ['text'],
    arguments: z.tuple([z.string()]),
    throws: [
      'malformed_tool_text',
      'malformed_signal_text',
      'unknown_signal_type',
      'invalid_signal_payload',
      'invalid_argument',
      'stale_answer',
      'stale_approval',
      'approval_host_only',
      'malformed_loop_text',
      'no_dispatcher',
    ],
    restate: 'tool',
  },
  // Host only (no agent tool): an agent must not approve its own requests through them.
  approve: {
    kind: 'command',
    parameters: ['requestId', 'options'],
    arguments: z.tuple([
      z.string(),
      z
        .strictObject({
          by: z.string().optional(),
          note: z.string().optional(),
          seenVersion: z.number().int().min(0).optional(),
        })
        .optional(),
    ]),
    throws: ['stale_answer', 'stale_approval', 'invalid_argument'],
    restate: 'approve',
  },
  reject: {
    kind: 'command',
    parameters: ['requestId', 'options'],
    arguments: z.tuple([
      z.string(),
      z.strictObject({ by: z.string().optional(), reason: z.string().min(1) }),
    ]),
    throws: ['stale_answer', 'invalid_argument'],
    restate: 'reject',
  },
  extendRequest: {
    kind: 'command',
    parameters: ['requestId', 'options'],
    arguments: z.tuple([
      z.string(),
      z.strictObject({
        timeoutMs: z.number().int().min(1).max(MAX_APPROVAL_TIMEOUT_MS),
        by: z.string().optional(),
      }),
    ]),
    throws: ['stale_answer', 'invalid_argument'],
    restate: 'extendRequest',
  },
  startLoop: {
    kind: 'command',
    parameters: ['text', 'options'],
    arguments: z.tuple([z.string(), z.strictObject({ agent: z.string().optional() }).optional()]),
    throws: ['malformed_loop_text', 'no_dispatcher', 'invalid_argument'],
    restate: 'startLoop',
    agentTool: 'start_loop',
  },
  stopLoop: {
    kind: 'command',
    parameters: ['options'],
    arguments: z.tuple([z.strictObject({ now: z.boolean().optional() }).optional()]),
    throws: ['no_active_loop', 'invalid_argument'],
    restate: 'stopLoop',
    agentTool: 'stop_loop',
  },
  observeTool: {
    kind: 'command',
    parameters: ['name'],
    arguments: z.tuple([toolName]),
    throws: ['invalid_argument'],
    restate: 'observeTool',
  },
  idle: {
    kind: 'command',
    parameters: [],
    arguments: z.tuple([]),
    throws: [],
    restate: 'idle',
    agentTool: 'send_event',
  },
  message: {
    kind: 'command',
    parameters: ['text'],
    arguments: z.tuple([z.string()]),
    throws: ['invalid_argument'],
    restate: 'message',
    agentTool: 'send_event',
  },
  resume: {
    kind: 'command',
    parameters: ['name'],
    arguments: z.tuple([name]),
    throws: ['unknown_function', 'function_not_active', 'function_not_gated', 'gate_closed'],
    restate: 'resume',
    agentTool: 'send_event',
  },
  setKv: {
    kind: 'command',
    parameters: ['name', 'key', 'value'],
    arguments: z.tuple([name, name, json]),
    throws: ['unknown_function', 'function_not_active', 'invalid_argument'],
    restate: 'setKv',
  },
  view: {
    kind: 'read',
    parameters: [],
    arguments: z.tuple([]),
    throws: [],
    restate: 'view',
    agentTool: 'session_view',
  },
  settleEffect: {
    kind: 'command',
    parameters: ['effectId', 'settlement'],
    arguments: z.tuple([
      z.string(),
      z
        .strictObject({ events: z.array(runtimeEvent).optional(), error: z.string().optional() })
        .optional(),
    ]),
    throws: ['unknown_effect', 'invalid_event', 'invalid_argument'],
    restate: 'settleEffect',
  },
  close: { kind: 'command', parameters: [], arguments: z.tuple([]), throws: [], restate: 'close' },
} as const satisfies Readonly<Record<string, CommandRow>>;

/** Every command and read of `session.artifacts` (`ArtifactsHandle`), by method name. */
export const ARTIFACT_COMMAND_ROWS = {
  write: {
    kind: 'command',
    parameters: ['artifact'],
    arguments: z.tuple([
      z.object({
        name: z.string().regex(ARTIFACT_NAME_PATTERN),
        workerId: z.string().optional(),
        content: z.string().optional(),
        summary: z.string().optional(),
      }),
    ]),
    throws: ['invalid_argument'],
    restate: 'writeArtifact',
  },
  setStatus: {
    kind: 'command',
    parameters: ['id', 'status'],
    arguments: z.tuple([z.string(), z.enum(ARTIFACT_STATUSES)]),
    throws: ['unknown_artifact', 'invalid_artifact_transition'],
    restate: 'setArtifactStatus',
  },
  get: {
    kind: 'read',
    parameters: ['id'],
    arguments: z.tuple([z.string()]),
    throws: [],
    restate: 'artifact',
  },
  // Embedded only: on Restate, `get` answers undefined for a missing artifact.
  require: {
    kind: 'read',
    parameters: ['id'],
    arguments: z.tuple([z.string()]),
    throws: ['unknown_artifact'],
    restate: null,
  },
  list: { kind: 'read', parameters: [], arguments: z.tuple([]), throws: [], restate: 'artifacts' },
  // The same accepted artifacts as `session.facts()`: served by its handler.
  facts: { kind: 'read', parameters: [], arguments: z.tuple([]), throws: [], restate: 'facts' },
} as const satisfies Readonly<Record<string, CommandRow>>;

/** The rows of a handle's table. */
export type CommandRows = Readonly<Record<string, CommandRow>>;

/** The names of a table's rows that a Restate handler serves. */
export type ServedOnRestate<R extends CommandRows> = {
  [K in keyof R]: R[K]['restate'] extends string ? K : never;
}[keyof R] &
  string;

/** The Restate handler names of a table's rows of one kind. */
export type RestateHandlerOf<R extends CommandRows, Kind extends CommandRow['kind']> = {
  [K in keyof R]: R[K]['kind'] extends Kind ? Exclude<R[K]['restate'], null> : never;
}[keyof R];
