import type { LoopPhase } from '../loop/types.js';
import type { RemoteCommand } from '../session/commands.js';
import type { SignalType } from '../signal/catalogue.js';
import type { SignalPayload } from '../signal/schema.js';
import type { ExecutionAttempt, ExecutorError } from './results.js';

/** The source events the actor system feeds the pipeline with (SPEC-pipeline §7). */
export const PIPELINE_SOURCE_TYPES = {
  agentSignalEmitted: 'agent.signal.emitted',
  functionCompleted: 'function.completed',
  loopRoundCompleted: 'loop.round.completed',
  loopFinished: 'loop.finished',
  sessionPhaseChanged: 'session.phase.changed',
  artifactStatusChanged: 'artifact.status.changed',
} as const;

/** A source type of {@link PIPELINE_SOURCE_TYPES}. */
export type RoleboxSourceType = (typeof PIPELINE_SOURCE_TYPES)[keyof typeof PIPELINE_SOURCE_TYPES];

/** The payload of each of rolebox's source events, by type. */
export interface RoleboxSourcePayloads {
  /** An agent signal recorded in a session: its type, payload and the functions that recorded it. */
  'agent.signal.emitted': {
    readonly sessionId: string;
    readonly signalType: SignalType;
    readonly payload: SignalPayload;
    readonly recordedOn: readonly string[];
    /**
     * The approval requests it opened (a pausing signal) or resolved (an answer, a
     * rejection), as `<function>:r<n>` (SPEC §9); empty when none. A policy that answers a
     * request names it (`payload.requestId`), so it never approves one opened later.
     */
    readonly requests: readonly string[];
    /**
     * The function version each of `requests` carried when it opened, by request id: what
     * a policy judging the request saw. Approving with it as `seenVersion` makes the
     * approval `stale_approval` when the function changed after the request opened (fail
     * closed). A request whose function is no longer in the session has no entry.
     */
    readonly versions: Readonly<Record<string, number>>;
  };
  'function.completed': { readonly sessionId: string; readonly function: string };
  'loop.round.completed': {
    readonly sessionId: string;
    readonly loopId: string;
    readonly round: number;
    readonly total: number;
    readonly taskId: string;
    readonly status: 'completed' | 'error' | 'cancelled';
    readonly durationMs?: number;
  };
  'loop.finished': {
    readonly sessionId: string;
    readonly loopId: string;
    readonly phase: LoopPhase;
  };
  /** A runtime phase change; `waitingReason` is the waiting reason's kind in `waiting_user`. */
  'session.phase.changed': {
    readonly sessionId: string;
    readonly from: string;
    readonly to: string;
    readonly waitingReason: string | null;
  };
  /** An artifact written (`from: null`) or moved along its review lifecycle. */
  'artifact.status.changed': {
    readonly sessionId: string;
    readonly artifactId: string;
    readonly name: string;
    readonly from: string | null;
    readonly to: string;
  };
}

/** The built-in result signals the scheduler makes of an action's ExecutorResult. */
export const PIPELINE_RESULT_SIGNAL_TYPES = {
  actionApplied: 'signal.action.applied',
  actionSkipped: 'signal.action.skipped',
  actionFailed: 'signal.action.failed',
} as const;

/** A type of {@link PIPELINE_RESULT_SIGNAL_TYPES}. */
export type ResultSignalType =
  (typeof PIPELINE_RESULT_SIGNAL_TYPES)[keyof typeof PIPELINE_RESULT_SIGNAL_TYPES];

/** The payload of every built-in result signal (a type, not an interface, so it is a JSON object to the type checker too). */
export type ActionResultPayload = {
  readonly actionId: string;
  readonly actionType: string;
  readonly attempt: ExecutionAttempt;
  readonly detail?: string;
  readonly output?: unknown;
  readonly error?: ExecutorError;
};

/** The payload of each built-in signal, by type. */
export interface BuiltinSignalPayloads {
  'signal.action.applied': ActionResultPayload;
  'signal.action.skipped': ActionResultPayload;
  'signal.action.failed': ActionResultPayload;
}

/** The built-in actions. */
export const PIPELINE_ACTION_TYPES = {
  /** Delivers a command (an agent signal, idle, a message, a runtime event) to a session. */
  roleboxSend: 'action.rolebox.send',
} as const;

/** The payload of each built-in action, by type. */
export interface BuiltinActionPayloads {
  'action.rolebox.send': {
    readonly sessionId: string;
    readonly command: RemoteCommand;
    /** Sent once per key (default: the action's id). */
    readonly idempotencyKey?: string;
  };
}
