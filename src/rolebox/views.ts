import { topStateOf } from '../base/state-value.js';
import { formatCondition } from '../condition/parse.js';
import type { FunctionCatalog } from '../function/catalog.js';
import type { FunctionContext, FunctionPhase } from '../function/machine-types.js';
import type { LoopState } from '../loop/types.js';
import type { ArtifactRecord } from '../session/artifact.js';
import type { SessionContext } from '../session/machine-types.js';
import type {
  AcceptanceMode,
  PendingEffect,
  RuntimePhase,
  WaitingReason,
} from '../session/runtime-types.js';
import { type ApprovalRequest, readRequests } from '../signal/approval-requests.js';
import { readLedgerRecord, SIGNAL_TYPE_KEY } from '../signal/ledger.js';
import { approvalTrail } from './approvals-view.js';

/** The evidence tag a pausing signal sets (SPEC §1). */
const PAUSED_EVIDENCE = 'paused';

/** A plain-JSON picture of one function in a session. */
export interface FunctionView {
  readonly name: string;
  readonly phase: FunctionPhase;
  /** `live` while its actor runs; otherwise why it stopped. */
  readonly status: 'live' | 'completed' | 'deactivated';
  /** The signal ledger: type → last payload (null when none). */
  readonly signals: Readonly<Record<string, unknown>>;
  /** The last terminating signal recorded (`answer`, `revise_needed`, `escalate`), else null. */
  readonly terminatingSignal: string | null;
  /**
   * Evidence tags observed. `paused` shows only while the function is `gated`: conditions
   * keep reading it afterwards (`evidence_observed(paused)`), but it no longer describes the
   * function once it left the gate.
   */
  readonly evidence: Readonly<Record<string, boolean>>;
  readonly toolsObserved: readonly string[];
  /** The kv store as the host set it: rolebox's own `__` keys (ledger, signal type) left out. */
  readonly kv: Readonly<Record<string, unknown>>;
  readonly continuations: number;
  readonly activatedAtTurn: number;
  /**
   * What changed the function, counted (signals but answers and rejections, tools observed,
   * kv values set): pass it as `approve(id, { seenVersion })` to approve what you saw.
   */
  readonly version: number;
  /** Its approval requests, oldest first, open and resolved (SPEC §9). */
  readonly requests: readonly ApprovalRequest[];
  /** The gate and continue_until as text, when defined. */
  readonly gate?: string;
  readonly continueUntil?: string;
}

/** A plain-JSON picture of a session: what `session.view()` returns. */
export interface SessionView {
  readonly id: string;
  /** The runtime phase (SPEC §4.1). */
  readonly phase: RuntimePhase;
  /** Why the session waits, in `waiting_user`; otherwise null. */
  readonly waitingReason: WaitingReason | null;
  /**
   * When the current wait for the user expires (clock time; `limits.waitUserTimeoutMs`
   * after it began), else null: not waiting, or no limit set.
   */
  readonly waitExpiresAt: number | null;
  /** The worker in flight, if any (the main agent is paused meanwhile). */
  readonly currentWorkerId: string | null;
  readonly acceptanceMode: AcceptanceMode;
  /** Loop-tool calls since the last user action. */
  readonly toolLoopBurstCount: number;
  /** Why the session is in `error`, if it is. */
  readonly errorReason: string | null;
  readonly slots: Readonly<Record<string, unknown>>;
  /** Turns completed (idle cycles). */
  readonly turn: number;
  /** Continuations granted so far. */
  readonly continuations: number;
  /** Live functions first (activation order), then retired ones. */
  readonly functions: readonly FunctionView[];
  readonly artifacts: readonly ArtifactRecord[];
  /** The running loop, else the last one that finished here, else null. */
  readonly loop: LoopState | null;
  /** The effects emitted and not settled yet, oldest first (the outbox). */
  readonly pendingEffects: readonly PendingEffect[];
  /**
   * The approval audit trail: every function's requests (SPEC §9), the open ones first
   * (oldest first), then the resolved ones in the order they were resolved, each with who
   * resolved it, when, the note, the `seenVersion` and how it ended (`status`).
   */
  readonly approvals: readonly ApprovalRequest[];
}

/** Builds a {@link FunctionView} from a function's phase and context. */
export function functionView(
  phase: FunctionPhase,
  status: FunctionView['status'],
  context: FunctionContext,
  catalog: FunctionCatalog,
): FunctionView {
  const definition = catalog.get(context.name);
  const signalType = context.kv[SIGNAL_TYPE_KEY];
  return structuredClone({
    name: context.name,
    phase,
    status,
    signals: readLedgerRecord(context.kv),
    terminatingSignal: typeof signalType === 'string' ? signalType : null,
    evidence: visibleEvidence(phase, context.evidenceObserved),
    toolsObserved: context.toolsObserved,
    kv: hostKv(context.kv),
    continuations: context.continuations,
    activatedAtTurn: context.activatedAtTurn,
    version: context.version,
    requests: readRequests(context.kv),
    ...(definition?.gate ? { gate: formatCondition(definition.gate) } : {}),
    ...(definition?.continueUntil
      ? { continueUntil: formatCondition(definition.continueUntil) }
      : {}),
  });
}

/**
 * The kv a user sees: keys starting with `__` are rolebox's own (the host cannot set them,
 * `kv_set` refuses them), so they stay out of the view while conditions still read them.
 */
function hostKv(kv: FunctionContext['kv']): Record<string, unknown> {
  const visible: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(kv)) if (!key.startsWith('__')) visible[key] = value;
  return visible;
}

/** Evidence as shown: `paused` marks the current gate, so it is dropped once the function left it. */
function visibleEvidence(
  phase: FunctionPhase,
  evidence: FunctionContext['evidenceObserved'],
): Record<string, boolean> {
  if (phase === 'gated' || !Object.hasOwn(evidence, PAUSED_EVIDENCE)) return { ...evidence };
  const { [PAUSED_EVIDENCE]: _paused, ...rest } = evidence;
  return rest;
}

/** The runtime phase of a session snapshot value (`'running'`, `{ waiting_user: 'input' }`, …). */
export function runtimePhaseOf(value: unknown): RuntimePhase {
  return topStateOf(value) as RuntimePhase;
}

/** Builds a {@link SessionView}; `liveFunction` reads a live function's phase and context. */
export function sessionView(
  value: unknown,
  context: SessionContext,
  artifacts: readonly ArtifactRecord[],
  liveFunction: (name: string) => { phase: FunctionPhase; context: FunctionContext } | undefined,
  catalog: FunctionCatalog,
  loop: LoopState | null,
): SessionView {
  const functions: FunctionView[] = [];
  for (const name of context.liveFunctions) {
    const live = liveFunction(name);
    if (live) functions.push(functionView(live.phase, 'live', live.context, catalog));
  }
  for (const retired of Object.values(context.retiredFunctions)) {
    functions.push(functionView(retired.phase, retired.reason, retired.context, catalog));
  }
  return {
    id: context.sessionId,
    phase: runtimePhaseOf(value),
    waitingReason: context.waitingReason === null ? null : structuredClone(context.waitingReason),
    waitExpiresAt: context.waitExpiresAt,
    currentWorkerId: context.currentWorkerId,
    acceptanceMode: context.acceptanceMode,
    toolLoopBurstCount: context.toolLoopBurstCount,
    errorReason: context.errorReason,
    slots: structuredClone(context.slots),
    turn: context.turn,
    continuations: context.continuations,
    functions,
    artifacts: structuredClone(artifacts) as ArtifactRecord[],
    loop: loop === null ? null : structuredClone(loop),
    pendingEffects: structuredClone(context.pendingEffects) as PendingEffect[],
    approvals: approvalTrail(functions),
  };
}
