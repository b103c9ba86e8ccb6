import { evaluateCondition } from './condition/evaluate.js';
import { formatCondition } from './condition/parse.js';
import type { ConditionRegistry } from './condition/registry.js';
import { describeValue, RoleboxError } from './errors.js';
import type { FunctionCatalog } from './function/catalog.js';
import { functionConditionEnv } from './function/condition-env.js';
import type { FunctionContext, FunctionPhase } from './function/machine-types.js';
import type { HostEvent, HostEventOf, IdleReport } from './host-events.js';
import type { RoleboxLimits } from './limits.js';
import { expandStopLoopCommand, shouldCancelLoop } from './loop/cancellation.js';
import { promptFingerprint } from './loop/fingerprint.js';
import type { LoopInput } from './loop/machine-types.js';
import { parseLoopCommand } from './loop/parse-loop-command.js';
import { checkLoopRegistration, type LoopRegistry } from './loop/registry.js';
import type { LoopState } from './loop/types.js';
import type { SessionCommand } from './session/commands.js';
import type { SessionContext } from './session/machine-types.js';
import { parseSignalArguments } from './signal/parse-signal-text.js';
import type { SignalReceipt } from './signal/reply.js';
import { parseSignalArgs, type SignalArgs } from './signal/schema.js';
import { parseToolCallText } from './tool-call.js';
import { type SessionView, sessionView } from './views.js';

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

/** What a session handle needs from its rolebox. Internal: hosts never implement it. */
export interface SessionHost {
  readonly catalog: FunctionCatalog;
  readonly conditions: ConditionRegistry;
  readonly limits: RoleboxLimits;
  readonly hasDispatcher: boolean;
  newId(prefix: string): string;
  now(): number;
  loopRegistry(): LoopRegistry;
  /** The state of a live loop actor, if it is live. */
  liveLoop(loopId: string): LoopState | undefined;
  startLoop(sessionId: string, loop: LoopInput, rootLoopId: string): readonly HostEvent[];
  /** Sends a command to the session; returns the host events it caused. */
  deliver(sessionId: string, command: SessionCommand): readonly HostEvent[];
  /** Throws `unknown_session` / `stopped` when the session is not live. */
  sessionContext(sessionId: string): SessionContext;
  /** The phase and context of a live function actor, if it is live. */
  liveFunction(
    sessionId: string,
    name: string,
  ): { phase: FunctionPhase; context: FunctionContext } | undefined;
  close(sessionId: string): void;
}

const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * The host's handle on one live session. Every method validates its input and either
 * applies it completely or throws a `RoleboxError` and changes nothing.
 */
export class SessionHandle {
  /** The session id. */
  readonly id: string;
  readonly #host: SessionHost;

  /** Internal: use `rb.openSession()` or `rb.session(id)`. */
  constructor(id: string, host: SessionHost) {
    this.id = id;
    this.#host = host;
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
   * Throws: `unknown_signal_type`, `invalid_signal_payload`, `invalid_argument`.
   */
  signal(args: SignalInput): SignalReceipt {
    return this.#signal(parseSignalArgs(args));
  }

  #signal(signal: SignalArgs): SignalReceipt {
    this.#context();
    const events = this.#deliver({ type: 'session.signal', signal, at: this.#host.now() });
    return this.#expect(events, 'signal').receipt;
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
    const agent = options.agent ?? 'default';
    if (typeof agent !== 'string' || agent === '') {
      throw new RoleboxError(
        'invalid_argument',
        `loop agent must be a non-empty string, got ${describeValue(agent)}`,
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
      this.#host.loopRegistry(),
      { originSessionId: this.id, fingerprint },
      this.#host.limits.maxTreeLoops,
    );
    if (!check.ok) return check;
    const loopId = this.#host.newId('loop_');
    this.#host.startLoop(
      this.id,
      {
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
      check.rootLoopId ?? loopId,
    );
    return { ok: true, loopId };
  }

  /**
   * Stops the session's loop. `now: false` (the default) lets the round in flight finish
   * and ends the loop as cancelled at its summary; `now: true` cancels the worker at once
   * (and, through the system, every child loop).
   * Throws: `no_active_loop` when the session has no running loop.
   */
  stopLoop(options: { readonly now?: boolean } = {}): void {
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
    const context = this.#context();
    const expanded = expandStopLoopCommand(text);
    const loop =
      context.activeLoopId === null ? undefined : this.#host.liveLoop(context.activeLoopId);
    this.#deliver({ type: 'session.message', text: expanded, at: this.#host.now() });
    return { loopStopped: loop !== undefined && shouldCancelLoop(loop, expanded) };
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
    const { gate } = this.#host.catalog.require(name);
    if (gate) {
      const open = evaluateCondition(
        gate,
        functionConditionEnv(live.context, this.#host.catalog.require(name)),
        this.#host.conditions,
      );
      if (!open) {
        throw new RoleboxError(
          'gate_closed',
          `function ${describeValue(name)} opens only when its gate holds: ${formatCondition(gate)}`,
          {
            name,
          },
        );
      }
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
    let json: unknown;
    try {
      json = value === undefined ? undefined : JSON.parse(JSON.stringify(value));
    } catch {
      json = undefined;
    }
    if (json === undefined) {
      throw new RoleboxError(
        'invalid_argument',
        `kv value must be JSON, got ${describeValue(value)}`,
        { key },
      );
    }
    this.#deliver({ type: 'session.kv_set', name, key, value: json, at: this.#host.now() });
  }

  /** A plain-JSON picture of the session: functions, artifacts and its loop. */
  view(): SessionView {
    const context = this.#context();
    const loop =
      context.activeLoopId === null
        ? context.lastLoop
        : (this.#host.liveLoop(context.activeLoopId) ?? null);
    return sessionView(
      context,
      (name) => this.#host.liveFunction(this.id, name),
      this.#host.catalog,
      loop,
    );
  }

  /** Stops the session and its functions. Throws: `unknown_session` when already closed. */
  close(): void {
    this.#context();
    this.#host.close(this.id);
  }

  #context(): SessionContext {
    return this.#host.sessionContext(this.id);
  }

  #isLive(name: string): boolean {
    return this.#context().liveFunctions.includes(name);
  }

  #requireLive(name: string): { phase: FunctionPhase; context: FunctionContext } {
    this.#host.catalog.require(name);
    const live = this.#isLive(name) ? this.#host.liveFunction(this.id, name) : undefined;
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
    return this.#host.deliver(this.id, command);
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
