import { checkOptionNames } from '../base/option-names.js';
import { parseToolCallText } from '../base/tool-call.js';
import { formatCondition } from '../condition/parse.js';
import type { ConditionRegistry } from '../condition/registry.js';
import { describeValue, RoleboxError } from '../errors.js';
import { answerProblem } from '../function/approval-check.js';
import type { FunctionCatalog } from '../function/catalog.js';
import {
  checkExtension,
  type ExtendReceipt,
  type ExtendRequestOptions,
} from '../function/request-extension.js';
import { readRequestOptions } from '../function/request-options.js';
import { expandStopLoopCommand } from '../loop/cancellation.js';
import { promptFingerprint } from '../loop/fingerprint.js';
import { parseLoopCommand } from '../loop/parse-loop-command.js';
import { checkLoopRegistration } from '../loop/registry.js';
import type { LoopState } from '../loop/types.js';
import type { CommandPath } from '../runtime/command-path.js';
import type { FunctionRead, SessionRead, SystemAccess } from '../runtime/system-access.js';
import type { ArtifactRecord } from '../session/artifact.js';
import type { EffectCommand, SessionCommand } from '../session/commands.js';
import type { SessionContext } from '../session/machine-types.js';
import { parseRuntimeEvent } from '../session/runtime-event-schema.js';
import type {
  RuntimeEvent,
  RuntimePhase,
  SessionEffect,
  TimedRuntimeEvent,
  WaitingReason,
} from '../session/runtime-types.js';
import { parseSignalArguments } from '../signal/parse-signal-text.js';
import type { SignalReceipt } from '../signal/reply.js';
import { parseSignalArgs, type SignalArgs } from '../signal/schema.js';
import type { RoleboxLimits } from '../system/limits.js';
import { ArtifactsHandle } from './artifacts-handle.js';
import { guardCommands } from './command-guard.js';
import { SESSION_COMMAND_ROWS } from './command-table.js';
import type { HostEvent, HostEventOf, IdleReport } from './host-events.js';
import { effectResultProblem, runtimeEventProblem } from './runtime-event-problem.js';
import { runtimePhaseOf, type SessionView, sessionView } from './views.js';

/** Signal arguments as a host passes them; validated on the way in. */
export interface SignalInput {
  readonly type: string;
  readonly payload?: Record<string, unknown>;
}

/** What `session.tool(text)` answers. */
export type ToolReceipt =
  | ({ readonly kind: 'signal' } & SignalReceipt)
  | ({ readonly kind: 'loop'; readonly text: string } & StartLoopResult)
  | {
      readonly kind: 'tool';
      readonly tool: string;
      readonly observedOn: number;
      readonly text: string;
    };

/** What `session.startLoop` answers: the loop's id, or why it was refused. */
export type StartLoopResult =
  | { readonly ok: true; readonly loopId: string }
  | { readonly ok: false; readonly reason: string };

/** What `session.message` answers. */
export interface MessageReceipt {
  /** True when the message carried the stop-loop marker and the loop was stopped by it. */
  readonly loopStopped: boolean;
}

/** What the facade reads of a live session actor (see `CommandPath.requireSession`). */
export type SessionSnapshotView = SessionRead;

/** What `session.send(event)` answers: where the session is now, and what the host must do. */
export interface SendResult {
  readonly phase: RuntimePhase;
  readonly waitingReason: WaitingReason | null;
  /** The effects the event caused, in order (also delivered as `effect` host events). */
  readonly effects: readonly SessionEffect[];
}

/** What `session.toolCall()` answers. */
export type ToolCallResult =
  | { readonly allowed: true; readonly burst: number }
  | { readonly allowed: false; readonly reason: 'burst_limit'; readonly message: string };

/**
 * What a session handle needs from its rolebox: a slice of its command path and of its
 * `SystemAccess`, and its settings. Internal: hosts never implement it.
 */
export interface SessionHost {
  readonly access: Pick<SystemAccess, 'readFunction' | 'readLoop' | 'loopRegistry'>;
  /** The command path: every command, and the check before every read of the session. */
  readonly path: Pick<CommandPath, 'requireLive' | 'requireSession' | 'dispatch'>;
  readonly catalog: FunctionCatalog;
  readonly conditions: ConditionRegistry;
  readonly limits: RoleboxLimits;
  readonly hasDispatcher: boolean;
  /** Strict sessions: a runtime event the phase does not allow sends the session to `error`. */
  readonly strictSessions: boolean;
  newId(prefix: string): string;
  now(): number;
  close(sessionId: string): void;
}

/** An outbox command as another process reports it: the session's own clock gives its time. */
export type UntimedEffectCommand = EffectCommand extends infer C
  ? C extends { readonly at: number }
    ? Omit<C, 'at'>
    : never
  : never;

/** Set by {@link SessionHandle}'s static block: it reaches the handle's private command path. */
let deliverOutbox: (handle: SessionHandle, command: UntimedEffectCommand) => readonly HostEvent[];

/**
 * Internal (the Restate endpoint, whose effect handlers run in a service of their own):
 * tells the live session what became of an effect in its outbox (an attempt started or
 * failed, a handler's events), at the session's time, through the command path the
 * in-process effect runner takes. Not a host API: hosts settle effects with `settleEffect`.
 * Returns: the host events it caused. Throws: `unknown_session` when the session is not live.
 */
export function deliverEffectCommand(
  handle: SessionHandle,
  command: UntimedEffectCommand,
): readonly HostEvent[] {
  return deliverOutbox(handle, command);
}

/** What {@link openToolApprovalRequest} opens: a tool call held for the host's approval. */
export interface ToolApprovalOpening {
  /** The tool's name (as the model calls it). */
  readonly tool: string;
  /** The request's payload: the tool, its arguments and the call's key (plain JSON). */
  readonly payload: Record<string, unknown>;
  /** The function whose ledger takes it; default: the first live one listing the tool in `requires_approval_for`. */
  readonly function?: string;
}

/** Set by {@link SessionHandle}'s static block: the host's own need_approval, to one function. */
let openHostRequest: (handle: SessionHandle, opening: ToolApprovalOpening) => string;

/**
 * Internal (`requireApproval`, src/ai/require-approval.ts): opens a host-only approval
 * request for a tool call (SPEC §9) in the ledger of one live function: the named one, else
 * the first live function whose definition lists the tool in `requires_approval_for`. The
 * function is gated until the host answers it (`approve` / `reject`); an agent's own
 * `answer` never does. Not a host API: it is the command path of a tool wrapper, which
 * agents cannot reach.
 * Returns: the request's id. Throws: `function_not_active` when no live function takes it,
 * `unknown_function` for a function name with no definition.
 */
export function openToolApprovalRequest(
  handle: SessionHandle,
  opening: ToolApprovalOpening,
): string {
  return openHostRequest(handle, opening);
}

/**
 * A handler's reported events the session would refuse as `send` would (the checks of
 * `effectResultProblem`) become the effect's error, with the refusal's code and message:
 * the report is applied whole or not at all, as the in-process runner records a result.
 */
function refusedAsError(
  handle: SessionHandle,
  command: UntimedEffectCommand,
  at: number,
): UntimedEffectCommand {
  if (command.type !== 'session.settle_effect' || !command.events?.length) return command;
  const problem = effectResultProblem(
    SessionHandle.readOf(handle),
    command.effectId,
    command.events,
    at,
  );
  if (!problem) return command;
  const { events: _refused, ...rest } = command;
  return { ...rest, error: `${problem.code}: ${problem.message}` };
}

const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** An agent name: printable, no control characters, not blank. */
const AGENT_NAME = /^(?=.*\S)[^\p{Cc}]{1,128}$/u;

/**
 * The host's handle on one live session. Every method validates its input and either
 * applies it completely or throws a `RoleboxError` and changes nothing. Every method goes
 * through one guard first (`guardCommands`, driven by its rows in `SESSION_COMMAND_ROWS`,
 * src/rolebox/command-table.ts): its arguments are read once (one that
 * throws when read is `invalid_argument`), and the session must be live in this rolebox
 * (`unknown_session` once it is closed, `session_owned_elsewhere` once another process
 * drives it), so no call reaches an actor of a session that is not this handle's to drive.
 */
export class SessionHandle {
  static {
    guardCommands(SessionHandle.prototype, 'session', SESSION_COMMAND_ROWS, (handle) => {
      if (typeof handle !== 'object' || handle === null || !(#host in handle))
        throw new RoleboxError(
          'invalid_argument',
          `a session handle method was called on ${describeValue(handle)}, not on a session handle (call it as session.method(…))`,
        );
      handle.#host.path.requireLive(handle.id);
    });
    deliverOutbox = (handle, command) => {
      handle.#host.path.requireLive(handle.id);
      const at = handle.#host.now();
      return handle.#deliver({ ...refusedAsError(handle, command, at), at } as EffectCommand);
    };
    openHostRequest = (handle, opening) => {
      handle.#host.path.requireLive(handle.id);
      const to = handle.#approvalFunctionFor(opening);
      const receipt = handle.#signal(
        { type: 'need_approval', payload: opening.payload },
        { byHost: true, to },
      );
      const [id] = receipt.requests ?? [];
      if (id === undefined)
        throw new Error(`rolebox internal error: ${to} opened no request for ${opening.tool}`);
      return id;
    };
  }

  /** The live function a tool call's request goes to (see {@link openToolApprovalRequest}). */
  #approvalFunctionFor(opening: ToolApprovalOpening): string {
    if (opening.function !== undefined) return this.#requireLive(opening.function).context.name;
    const taker = this.#context().liveFunctions.find((name) =>
      this.#host.catalog.get(name)?.requiresApprovalFor?.includes(opening.tool),
    );
    if (taker !== undefined) return taker;
    throw new RoleboxError(
      'function_not_active',
      `tool ${describeValue(opening.tool)} needs approval, but no live function of session ${this.id} takes its requests (give requireApproval a function, or list the tool in a live function's requires_approval_for)`,
      { sessionId: this.id, tool: opening.tool },
    );
  }

  /** The session id. */
  readonly id: string;
  readonly #host: SessionHost;

  /** The live session as the command checks read it (for a reported effect result). */
  static readOf(handle: SessionHandle): SessionRead {
    return handle.#host.path.requireSession(handle.id);
  }

  /** The session's artifacts (write, review statuses, facts). */
  readonly artifacts: ArtifactsHandle;

  /** Internal: use `rb.openSession()` or `rb.session(id)`. */
  constructor(id: string, host: SessionHost) {
    this.id = id;
    this.#host = host;
    this.artifacts = new ArtifactsHandle({
      sessionId: id,
      now: () => host.now(),
      requireSession: () => host.path.requireLive(id),
      artifacts: () => host.path.requireSession(id).artifacts,
      deliver: (command) => {
        host.path.dispatch({ type: 'system.deliver', sessionId: id, command });
      },
    });
  }

  /**
   * Sends a runtime event (SPEC §4.2), validated per type. An event the current phase and
   * waiting reason do not accept is refused with `event_not_allowed` naming both (or, with
   * `createRolebox({ strictSessions: true })`, sends the session to `error`).
   * Returns: the phase, the waiting reason and the effects the host must carry out.
   * Throws: `invalid_event`, `event_not_allowed`, `decision_mismatch`, `artifact_mismatch`,
   * `unknown_artifact`, `invalid_artifact_transition`; none of them changes anything.
   */
  send(event: RuntimeEvent): SendResult {
    const parsed = parseRuntimeEvent(event);
    const snapshot = this.#host.path.requireSession(this.id);
    const timed = { ...parsed, at: this.#host.now() } as TimedRuntimeEvent;
    const problem = runtimeEventProblem(snapshot, timed);
    let events: readonly HostEvent[];
    if (problem) {
      if (!this.#host.strictSessions) throw problem;
      events = this.#deliver({
        type: 'session.runtime_rejected',
        event: parsed,
        reason: problem.message,
        at: timed.at,
      });
    } else {
      events = this.#deliver(timed);
    }
    return this.#sendResult(events);
  }

  /** Where the session is now, and the effects among `events` (what `send` answers). */
  #sendResult(events: readonly HostEvent[]): SendResult {
    const after = this.#host.path.requireSession(this.id);
    return {
      phase: runtimePhaseOf(after.value),
      waitingReason:
        after.context.waitingReason === null ? null : structuredClone(after.context.waitingReason),
      effects: events.flatMap((hostEvent) =>
        hostEvent.type === 'effect' && hostEvent.sessionId === this.id && !hostEvent.redelivered
          ? [hostEvent.effect]
          : [],
      ),
    };
  }

  /**
   * Asks whether the main agent may call a tool now (SPEC §4.3), and records the call.
   * Loop tools (read-only) count towards the burst limit: the call past
   * `limits.maxToolBurst` is refused and the session waits for the user (`waiting_user.input`).
   * Boundary tools (run_worker, ask_user, finish, …) do not count. Allowed calls are also
   * reported to the functions, like `observeTool`.
   * Throws: `tool_not_allowed` unless the session is `running` with no worker in flight;
   * `invalid_argument` for a bad name or kind.
   */
  toolCall(call: { readonly name: string; readonly kind: 'loop' | 'boundary' }): ToolCallResult {
    if (
      typeof call !== 'object' ||
      call === null ||
      typeof call.name !== 'string' ||
      !TOOL_NAME.test(call.name)
    ) {
      throw new RoleboxError(
        'invalid_argument',
        `toolCall needs { name, kind }, with an identifier as name, got ${describeValue(call)}`,
      );
    }
    if (call.kind !== 'loop' && call.kind !== 'boundary') {
      throw new RoleboxError(
        'invalid_argument',
        `tool kind must be "loop" or "boundary", got ${describeValue(call.kind)}`,
        { kind: call.kind },
      );
    }
    const snapshot = this.#host.path.requireSession(this.id);
    const toolCall = {
      type: 'session.tool_call',
      name: call.name,
      kind: call.kind,
      at: this.#host.now(),
    } as const;
    // The session machine decides (SPEC §4.3); a refusal is explained from its state.
    if (!snapshot.can(toolCall)) {
      const phase = runtimePhaseOf(snapshot.value);
      const workerId = snapshot.context.currentWorkerId;
      throw new RoleboxError(
        'tool_not_allowed',
        phase !== 'running'
          ? `tool ${call.name} refused: the session is ${phase}, tools run only while it is running`
          : `tool ${call.name} refused: worker ${workerId} is running and the main agent is paused`,
        phase !== 'running' ? { tool: call.name, phase } : { tool: call.name, workerId },
      );
    }
    this.#deliver(toolCall);
    const after = this.#host.path.requireSession(this.id);
    if (runtimePhaseOf(after.value) === 'waiting_user') {
      const reason = after.context.waitingReason;
      return {
        allowed: false,
        reason: 'burst_limit',
        message: reason?.kind === 'input' ? (reason.message ?? '') : '',
      };
    }
    return { allowed: true, burst: after.context.toolLoopBurstCount };
  }

  /** The accepted artifacts: the only ones that may be served as facts. */
  facts(): ArtifactRecord[] {
    return this.artifacts.facts();
  }

  /** Sets a host-owned slot (`view().slots`). Throws: `invalid_argument` for a bad key or a value that is not JSON. */
  setSlot(key: string, value: unknown): void {
    if (typeof key !== 'string' || key === '') {
      throw new RoleboxError(
        'invalid_argument',
        `slot key must be a non-empty string, got ${describeValue(key)}`,
        { key },
      );
    }
    this.#deliver({
      type: 'session.set_slot',
      key,
      value: toJson(value, `slot ${key}`),
      at: this.#host.now(),
    });
  }

  /**
   * Activates a function: its FSM actor is spawned in this session, `gated` when it has a
   * gate that does not hold, else `active`.
   * Throws: `unknown_function`, `function_already_active`.
   */
  activate(name: string): void {
    this.#host.catalog.require(name);
    if (this.#isLive(name)) {
      throw new RoleboxError(
        'function_already_active',
        `function ${describeValue(name)} is already active in session ${this.id}`,
        {
          sessionId: this.id,
          name,
        },
      );
    }
    this.#deliver({ type: 'session.activate', name, at: this.#host.now() });
  }

  /**
   * Deactivates a live function: its actor stops and its last state stays in `view()`.
   * Throws: `unknown_function`, `function_not_active`.
   */
  deactivate(name: string): void {
    this.#requireLive(name);
    this.#deliver({ type: 'session.deactivate', name, at: this.#host.now() });
  }

  /**
   * Delivers an agent signal to every live function of the session.
   * Returns: the receipt, whose `text` is the `|signal|` tool's reply for the agent.
   * Throws: `unknown_signal_type`, `invalid_signal_payload`, `invalid_argument`;
   * `stale_answer` / `stale_approval` (SPEC §9); `approval_host_only` for an answer or
   * rejection naming a request only the host answers (a tool call held for approval: an
   * unnamed answer passes over such requests).
   */
  signal(args: SignalInput): SignalReceipt {
    return this.#signal(parseSignalArgs(args));
  }

  /**
   * `from`: set only by the host's own paths (approve, reject, a tool call's request), never
   * by `signal()`, which is what agents reach: an agent cannot answer a host-only request.
   */
  #signal(signal: SignalArgs, from: { byHost?: true; to?: string } = {}): SignalReceipt {
    const problem = answerProblem(signal, this.#liveFunctionContexts(), from.byHost === true);
    if (problem) throw problem;
    const events = this.#deliver({
      type: 'session.signal',
      signal,
      at: this.#host.now(),
      ...from,
    });
    return this.#expect(events, 'signal').receipt;
  }

  /**
   * Approves an approval request (SPEC §9): an `answer` signal naming it, delivered to its
   * function only. With `seenVersion` (the function's `version` the reviewer saw, in
   * `view().functions`), it is refused when the function changed since.
   * Returns: the answer's receipt (`requests` names the request).
   * Throws: `stale_answer` for a request that is unknown or already resolved;
   * `stale_approval` when the function changed since `seenVersion` (the request stays open);
   * `invalid_argument` for a bad option. None of them changes anything.
   */
  approve(
    requestId: string,
    options: { readonly by?: string; readonly note?: string; readonly seenVersion?: number } = {},
  ): SignalReceipt {
    const { by, note, seenVersion } = readRequestOptions(
      requestId,
      options,
      ['by', 'note', 'seenVersion'],
      'approval',
    );
    if (
      seenVersion !== undefined &&
      (!Number.isInteger(seenVersion) || (seenVersion as number) < 0)
    )
      throw new RoleboxError(
        'invalid_argument',
        `approve seenVersion must be a whole number, got ${describeValue(seenVersion)}`,
      );
    return this.#signal(
      { type: 'answer', payload: { requestId, ...definedOnly({ by, note, seenVersion }) } },
      { byHost: true },
    );
  }

  /**
   * Rejects an approval request (SPEC §9): a `revise_needed` signal naming it with the
   * reason, delivered to its function only. The request is `rejected`; a gate
   * `signal_observed(answer)` stays closed until a new request is answered.
   * Returns: the rejection's receipt. Throws: `stale_answer` for a request that is unknown
   * or already resolved; `invalid_argument` without a reason or for a bad option.
   */
  reject(
    requestId: string,
    options: { readonly by?: string; readonly reason: string },
  ): SignalReceipt {
    const { by, reason } = readRequestOptions(requestId, options, ['by', 'reason'], 'approval');
    if (typeof reason !== 'string' || reason === '')
      throw new RoleboxError(
        'invalid_argument',
        `reject needs a reason (a non-empty string), got ${describeValue(reason)}`,
      );
    return this.#signal(
      { type: 'revise_needed', payload: { requestId, reason, ...definedOnly({ by }) } },
      { byHost: true },
    );
  }

  /**
   * Moves an open approval request's deadline to now + `timeoutMs` (SPEC §9, the host's
   * per-request override of `approval_timeout`), recorded on the request (`extendedAt`,
   * `extendedBy`); a request without a deadline gets one, expiring as its function's
   * `on_timeout` says. Host only: no agent tool.
   * Returns: the request id and its new deadline. Throws: `stale_answer` for a request that
   * is unknown or no longer open; `invalid_argument` for a bad `timeoutMs` (a positive whole
   * number of ms, at most a year) or option. None of them changes anything.
   */
  extendRequest(requestId: string, options: ExtendRequestOptions): ExtendReceipt {
    const checked = checkExtension(requestId, options, this.#liveFunctionContexts());
    const at = this.#host.now();
    const expiresAt = at + checked.timeoutMs;
    this.#deliver({
      type: 'session.extend_request',
      requestId: checked.requestId,
      expiresAt,
      at,
      ...(checked.by === undefined ? {} : { by: checked.by }),
    });
    const text = `request ${checked.requestId} now expires ${new Date(expiresAt).toISOString()}`;
    return { requestId: checked.requestId, expiresAt, text };
  }

  /**
   * Handles the agent's tool-call text: `|signal| …` is parsed and delivered as a signal;
   * any other `|name| …` is reported to the functions as an observed tool.
   * Throws: `malformed_tool_text`, `malformed_signal_text` and the errors of `signal()`.
   */
  tool(text: string): ToolReceipt {
    const call = parseToolCallText(text);
    if (call.name === 'signal') {
      if (call.params !== undefined) {
        throw new RoleboxError(
          'malformed_signal_text',
          `"|signal|" takes no parameters inside the bars, got ${describeValue(text)}`,
          { text },
        );
      }
      return {
        kind: 'signal',
        ...this.#signal(parseSignalArgs(parseSignalArguments(call.args, text))),
      };
    }
    if (call.name === 'loop') {
      const result = this.startLoop(text);
      const reply = result.ok ? `loop started: ${result.loopId}` : `loop refused: ${result.reason}`;
      return { kind: 'loop', ...result, text: reply };
    }
    return this.observeTool(call.name);
  }

  /**
   * Starts a loop from `|loop:N[,mode]| task` (SPEC §3.1): each round is a worker task run
   * by the dispatcher, advanced by the worker's termination. Progress arrives as `note`
   * host events.
   * Returns: `{ ok: true, loopId }`, or `{ ok: false, reason }` when registration is refused
   * (the session already runs a loop, the same prompt as an ancestor loop, the tree cap).
   * Throws: `malformed_loop_text` for bad syntax, `no_dispatcher` without a dispatcher.
   */
  startLoop(text: string, options: { readonly agent?: string } = {}): StartLoopResult {
    const command = parseLoopCommand(text, this.#host.limits);
    checkOptionNames(options, ['agent'], 'startLoop options');
    const agent = options.agent ?? 'default';
    // The agent reaches the worker's environment (ROLEBOX_AGENT): no control characters.
    if (typeof agent !== 'string' || !AGENT_NAME.test(agent)) {
      throw new RoleboxError(
        'invalid_argument',
        `loop agent must be 1-128 printable characters (no control characters such as NUL or newline), got ${describeValue(agent)}`,
        { agent },
      );
    }
    if (!this.#host.hasDispatcher) {
      throw new RoleboxError(
        'no_dispatcher',
        'this rolebox has no dispatcher to run loop rounds; pass createRolebox({ dispatcher })',
      );
    }
    this.#context();
    const fingerprint = promptFingerprint(command.task);
    const check = checkLoopRegistration(
      this.#host.access.loopRegistry(),
      { originSessionId: this.id, fingerprint },
      this.#host.limits.maxTreeLoops,
    );
    if (!check.ok) return check;
    const loopId = this.#host.newId('loop_');
    this.#host.path.dispatch({
      type: 'system.start_loop',
      sessionId: this.id,
      rootLoopId: check.rootLoopId ?? loopId,
      loop: {
        loopId,
        originSessionId: this.id,
        agent,
        basePrompt: command.task,
        mode: command.mode,
        total: command.iterations,
        requested: command.requested,
        clamped: command.clamped,
        ...(check.parentLoopId === undefined ? {} : { parentLoopId: check.parentLoopId }),
        promptFingerprint: fingerprint,
        at: this.#host.now(),
      },
    });
    return { ok: true, loopId };
  }

  /**
   * Stops the session's loop. `now: false` (the default) lets the round in flight finish
   * and ends the loop as cancelled at its summary; `now: true` cancels the worker at once
   * (and, through the system, every child loop).
   * Throws: `no_active_loop` when the session has no running loop.
   */
  stopLoop(options: { readonly now?: boolean } = {}): void {
    checkOptionNames(options, ['now'], 'stopLoop options');
    if (
      typeof options !== 'object' ||
      options === null ||
      (options.now !== undefined && typeof options.now !== 'boolean')
    ) {
      throw new RoleboxError(
        'invalid_argument',
        `stopLoop options must be { now?: boolean }, got ${describeValue(options)}`,
      );
    }
    const context = this.#context();
    if (context.activeLoopId === null) {
      throw new RoleboxError('no_active_loop', `session ${this.id} has no running loop`, {
        sessionId: this.id,
      });
    }
    this.#deliver({ type: 'session.stop_loop', now: options.now === true, at: this.#host.now() });
  }

  /**
   * Reports that the agent called tool `name` (for `tool_observed()` and `observe` entries).
   * Throws: `invalid_argument` for a name that is not an identifier.
   */
  observeTool(name: string): ToolReceipt {
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      throw new RoleboxError(
        'invalid_argument',
        `tool name must be an identifier like write_file, got ${describeValue(name)}`,
        { name },
      );
    }
    this.#context();
    const events = this.#deliver({ type: 'session.tool', tool: name, at: this.#host.now() });
    const { observedOn } = this.#expect(events, 'tool');
    return {
      kind: 'tool',
      tool: name,
      observedOn,
      text: `tool: ${name} observed by ${observedOn} function(s)`,
    };
  }

  /**
   * Ends the agent's turn (an idle cycle): active functions whose `continue_until` holds
   * complete; the others may ask to continue the agent, within the limits.
   * Returns: what the cycle decided; `continued` tells the host to continue the agent.
   */
  idle(): IdleReport {
    this.#context();
    const events = this.#deliver({ type: 'session.idle', at: this.#host.now() });
    return this.#expect(events, 'idle').report;
  }

  /**
   * Records a user message in the current turn: `user_approval()` holds until the next
   * idle, and gated functions without a gate resume (a user action). A message carrying
   * `[rolebox:stop-loop]` (or the command `/stop-loop`) cancels the loop when its worker
   * side owns it (SPEC §3.5).
   * Throws: `invalid_argument` when `text` is not a string.
   */
  message(text: string): MessageReceipt {
    if (typeof text !== 'string') {
      throw new RoleboxError(
        'invalid_argument',
        `message text must be a string, got ${describeValue(text)}`,
        { text },
      );
    }
    const before = this.#loopNow();
    this.#deliver({
      type: 'session.message',
      text: expandStopLoopCommand(text),
      at: this.#host.now(),
    });
    // The session machine decides whether the message stops the loop (SPEC §3.5): ask the
    // loop whether a stop was requested by it.
    const after = before === undefined ? undefined : this.#loopNow(before.id);
    return { loopStopped: before?.cancelRequested === false && after?.cancelRequested === true };
  }

  /**
   * Resumes a gated function by hand. Only a function without a gate, or whose gate holds,
   * can be resumed. Throws: `function_not_active`, `function_not_gated`, `gate_closed`.
   */
  resume(name: string): void {
    const live = this.#requireLive(name);
    if (live.phase !== 'gated') {
      throw new RoleboxError(
        'function_not_gated',
        `function ${describeValue(name)} is ${live.phase}, not gated`,
        { name, phase: live.phase },
      );
    }
    // The function machine decides whether a resume opens its gate; this only asks.
    const resume = { type: 'fn.resume', facts: live.context.facts, at: this.#host.now() } as const;
    if (!live.can(resume)) {
      const { gate } = this.#host.catalog.require(name);
      throw new RoleboxError(
        'gate_closed',
        `function ${describeValue(name)} opens only when its gate holds${gate ? `: ${formatCondition(gate)}` : ''}`,
        { name },
      );
    }
    this.#deliver({ type: 'session.resume', name, at: this.#host.now() });
  }

  /**
   * Sets `kv[key]` of a live function (for `state_eq(key=value)`).
   * Throws: `function_not_active`, `invalid_argument` for a reserved or empty key or a
   * value that is not JSON.
   */
  setKv(name: string, key: string, value: unknown): void {
    this.#requireLive(name);
    if (typeof key !== 'string' || key.trim() === '' || key.startsWith('__')) {
      throw new RoleboxError(
        'invalid_argument',
        `kv key must be a non-empty string not starting with "__", got ${describeValue(key)}`,
        { key },
      );
    }
    const json = toJson(value, `kv value ${key}`);
    this.#deliver({ type: 'session.kv_set', name, key, value: json, at: this.#host.now() });
  }

  /** A plain-JSON picture of the session: phase, waiting reason, functions, artifacts, loop. */
  view(): SessionView {
    const snapshot = this.#host.path.requireSession(this.id);
    const { context } = snapshot;
    const loop =
      context.activeLoopId === null
        ? context.lastLoop
        : (this.#host.access.readLoop(context.activeLoopId) ?? null);
    return sessionView(
      snapshot.value,
      context,
      snapshot.artifacts,
      (name) => this.#host.access.readFunction(this.id, name),
      this.#host.catalog,
      loop,
    );
  }

  /** Stops the session and its functions. Throws: `unknown_session` when already closed. */
  /**
   * Settles a pending effect by hand (`view().pendingEffects`): with `events`, they are
   * applied in one step as the effect's answer; with `error`, the effect is `failed` and the
   * session gets `runtime_failed` with it; with neither, it is just settled. For hosts that
   * carry out effects themselves, and for an effect that failed or that no event answers.
   * Returns: what `send` returns (the phase, the waiting reason, the new effects).
   * Throws: `unknown_effect` for an id that is not pending; `invalid_event` for an event
   * that is not a runtime event; `invalid_argument` for a bad settlement (both events and
   * error, an unknown field, an empty error); what `send` throws for an event the session
   * would refuse after the ones before it (`event_not_allowed`, `decision_mismatch`,
   * `unknown_artifact`, …); none of them changes anything.
   */
  settleEffect(
    effectId: string,
    settlement: { readonly events?: readonly RuntimeEvent[]; readonly error?: string } = {},
  ): SendResult {
    const pending = this.#context().pendingEffects;
    if (typeof effectId !== 'string' || !pending.some((entry) => entry.id === effectId))
      throw new RoleboxError(
        'unknown_effect',
        `effect ${describeValue(effectId)} is not pending in session ${describeValue(this.id)}; pending: ${pending.map((entry) => entry.id).join(', ') || '(none)'}`,
        { sessionId: this.id, effectId },
      );
    checkOptionNames(settlement, ['events', 'error'], 'settleEffect settlement', 'field');
    const { events, error } = settlement;
    if (error !== undefined && (typeof error !== 'string' || error === ''))
      throw new RoleboxError(
        'invalid_argument',
        `settleEffect error must be a non-empty string, got ${describeValue(error)}`,
      );
    if (events !== undefined && !Array.isArray(events))
      throw new RoleboxError(
        'invalid_argument',
        `settleEffect events must be an array of runtime events, got ${describeValue(events)}`,
      );
    if (error !== undefined && events !== undefined && events.length > 0)
      throw new RoleboxError('invalid_argument', 'settleEffect takes events or an error, not both');
    const parsed = (events ?? []).map((event) => parseRuntimeEvent(event));
    const at = this.#host.now();
    const problem = effectResultProblem(
      this.#host.path.requireSession(this.id),
      effectId,
      parsed,
      at,
    );
    if (problem) throw problem;
    const emitted = this.#deliver({
      type: 'session.settle_effect',
      effectId,
      by: 'host',
      ...(parsed.length > 0 ? { events: parsed } : {}),
      ...(error !== undefined ? { error } : {}),
      at,
    });
    return this.#sendResult(emitted);
  }

  close(): void {
    this.#context();
    this.#host.close(this.id);
  }

  /** The session's loop as it stands: the live one, else (given its id) the one that just ended. */
  #loopNow(loopId?: string): LoopState | undefined {
    const context = this.#context();
    if (context.activeLoopId !== null) return this.#host.access.readLoop(context.activeLoopId);
    return loopId !== undefined && context.lastLoop?.id === loopId ? context.lastLoop : undefined;
  }

  #context(): SessionContext {
    return this.#host.path.requireSession(this.id).context;
  }

  /** The contexts of the session's live functions (what an answer is checked against). */
  #liveFunctionContexts(): FunctionRead['context'][] {
    return this.#context().liveFunctions.flatMap((name) => {
      const live = this.#host.access.readFunction(this.id, name);
      return live ? [live.context] : [];
    });
  }

  #isLive(name: string): boolean {
    return this.#context().liveFunctions.includes(name);
  }

  #requireLive(name: string): FunctionRead {
    this.#host.catalog.require(name);
    const live = this.#isLive(name) ? this.#host.access.readFunction(this.id, name) : undefined;
    if (!live) {
      throw new RoleboxError(
        'function_not_active',
        `function ${describeValue(name)} is not active in session ${this.id}`,
        {
          sessionId: this.id,
          name,
        },
      );
    }
    return live;
  }

  #deliver(command: SessionCommand): readonly HostEvent[] {
    return this.#host.path.dispatch({ type: 'system.deliver', sessionId: this.id, command });
  }

  #expect<T extends HostEvent['type']>(events: readonly HostEvent[], type: T): HostEventOf<T> {
    const found = events.find(
      (event) => event.type === type && 'sessionId' in event && event.sessionId === this.id,
    );
    if (!found)
      throw new Error(`rolebox internal error: session ${this.id} did not answer ${type}`);
    return found as HostEventOf<T>;
  }
}

/** `values` without its undefined entries. */
function definedOnly(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
}

/** Clones a value through JSON. Throws: `invalid_argument` when it is not JSON. */
function toJson(value: unknown, what: string): unknown {
  let json: unknown;
  try {
    json = value === undefined ? undefined : JSON.parse(JSON.stringify(value));
  } catch {
    json = undefined;
  }
  if (json === undefined)
    throw new RoleboxError(
      'invalid_argument',
      `${what} must be JSON, got ${describeValue(value)}`,
      { what },
    );
  return json;
}
