/**
 * Every error code rolebox can raise, with what it means. Codes are stable: hosts may
 * switch on them. Add new ones; never rename or reuse one.
 */
export const ERROR_CODES = {
  invalid_argument: 'an argument has the wrong type or shape',
  unknown_signal_type: 'a signal type outside the eight of the catalogue',
  invalid_signal_payload: 'a signal payload that is not a JSON object',
  malformed_tool_text: 'agent tool-call text that is not `|name| args`',
  malformed_signal_text: 'a `|signal|` call whose arguments cannot be parsed',
  condition_syntax: 'a condition expression that cannot be parsed',
  unknown_condition: 'a condition name that is neither built in nor registered',
  invalid_condition_argument: 'a condition argument the named condition does not accept',
  duplicate_condition: 'a condition name registered twice',
  invalid_function_definition: 'a function definition that fails validation',
  duplicate_function: 'two function definitions with the same name',
  unknown_function: 'a function name with no definition',
  function_already_active: 'activating a function that is already live in the session',
  function_not_active: 'addressing a function that is not live in the session',
  gate_closed: 'resuming a function whose gate does not hold',
  function_not_gated: 'resuming a function that is not gated',
  stale_answer:
    'an answer or rejection naming an approval request that is unknown or already resolved',
  stale_approval:
    'an answer whose seenVersion is older than the version of the function it would approve',
  approval_host_only:
    "an agent's answer or rejection naming a request only the host may answer (a tool call held for approval)",
  unknown_session: 'a session id that is not live',
  duplicate_session: 'opening a session with an id that is already live',
  malformed_loop_text: 'a `|loop|` call whose parameters cannot be parsed',
  no_dispatcher: 'starting a loop on a rolebox created without a dispatcher',
  no_active_loop: 'stopping a loop when the session has none running',
  invalid_event: 'a runtime event with an unknown type or a malformed field',
  event_not_allowed: 'a runtime event the current phase and waiting reason do not accept',
  decision_mismatch: 'approving or rejecting a decision other than the one awaiting approval',
  unknown_artifact: 'an artifact id the session does not have',
  artifact_mismatch: 'reviewing an artifact other than the one under review',
  invalid_artifact_transition: 'an artifact status change the lifecycle forbids',
  tool_not_allowed: 'a tool call in a phase that does not allow it',
  unknown_effect: 'an effect id that is not pending in the session',
  invalid_snapshot: 'a stored record that is not a valid rolebox snapshot',
  snapshot_too_new: 'a stored record written by a newer version of rolebox',
  store_failed: 'the snapshot store could not read or write',
  not_started: 'a call that needs rb.start() first',
  stopped: 'a call on a rolebox that has been stopped',
  invalid_source_event: 'a pipeline source event with a missing or malformed field',
  invalid_pipeline_node: 'a signal or action a handler dispatched that is not a built node',
  invalid_handler: 'a pipeline handler or policy definition with a missing or malformed field',
  duplicate_handler: 'two pipeline handlers with the same id for the same type',
  invalid_pipeline_record: 'a stored pipeline event that cannot be read back',
  pipeline_stopped: 'a call on a pipeline that has been stopped',
  session_owned_elsewhere: 'a session another live process owns',
  session_passivated: 'a passivated session the store cannot load at once (open it first)',
  restate_failed: 'a call through a Restate server that could not be made or did not succeed',
  missing_dependency: 'an optional package a feature needs is not installed',
  port_in_use: 'a port to listen on that another process already holds',
  invalid_agent_output:
    'an agent (rolebox/ai agentEffects) whose model ended without a valid decision or result',
  approval_refused:
    'a tool call the host guards whose approval is missing, rejected, expired, already used or for another call, or an agent answering such a request itself',
} as const;

/** A stable machine-readable error code; see {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The one error type rolebox throws for bad input and refused commands.
 *
 * Use when: a caller must be told exactly what was wrong. The message names the offending
 * value; `details` carries it in structured form. Whatever raised it changed nothing.
 */
export class RoleboxError extends Error {
  /** Stable code to switch on. */
  readonly code: ErrorCode;
  /** Structured facts about the failure (offending value, field, file, …). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'RoleboxError';
    this.code = code;
    this.details = details;
  }
}

/** True when `error` is a {@link RoleboxError}, optionally with the given code. */
export function isRoleboxError(error: unknown, code?: ErrorCode): error is RoleboxError {
  return error instanceof RoleboxError && (code === undefined || error.code === code);
}

/** Renders a value for an error message: short, quoted when a string, never throws. */
export function describeValue(value: unknown): string {
  const short = (text: string) => (text.length > 120 ? `${text.slice(0, 117)}...` : text);
  if (typeof value === 'string') return JSON.stringify(short(value));
  if (value === undefined) return 'undefined';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'symbol' || typeof value === 'function') {
    try {
      return short(String(value).split('\n')[0] as string);
    } catch {
      return typeof value;
    }
  }
  try {
    // A bigint inside is shown as such instead of making JSON.stringify throw.
    const text = JSON.stringify(value, (_key, item: unknown) =>
      typeof item === 'bigint' ? `${item}n` : item,
    );
    if (typeof text === 'string') return short(text);
  } catch {
    // Cyclic, too deep, or a throwing toJSON: fall through to the tag.
  }
  try {
    return short(String(value));
  } catch {
    // Null prototype, or a toString that is not a function.
  }
  try {
    return Object.prototype.toString.call(value);
  } catch {
    // A Proxy whose traps throw (reading Symbol.toStringTag runs its get trap).
    return `an unreadable ${typeof value}`;
  }
}
