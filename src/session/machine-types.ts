import type { ContinuationBlock } from '../function/continuation.js';
import type {
  FunctionContext,
  FunctionPhase,
  FunctionToSessionEvent,
} from '../function/machine-types.js';
import type { LoopToSessionEvent } from '../loop/machine-types.js';
import type { LoopState } from '../loop/types.js';
import type { SessionCommand } from './commands.js';
import type {
  AcceptanceMode,
  HistoryEntry,
  MainAgentDecision,
  PendingEffect,
  ResumeContext,
  SkillIndexEntry,
  TimedRuntimeEvent,
  WaitingReason,
} from './runtime-types.js';

/** Why a function stopped being live: it completed, or it was deactivated. */
export const RETIREMENT_REASONS = ['completed', 'deactivated'] as const;

/** One of {@link RETIREMENT_REASONS}. */
export type RetirementReason = (typeof RETIREMENT_REASONS)[number];

/** A function that is no longer live: its last state stays readable. */
export interface RetiredFunction {
  readonly phase: FunctionPhase;
  readonly reason: RetirementReason;
  readonly at: number;
  readonly context: FunctionContext;
}

/** The bookkeeping of one idle cycle while the functions answer. */
export interface IdleCycle {
  readonly cycle: number;
  /** Functions that have not answered yet. */
  readonly awaiting: readonly string[];
  readonly continuing: readonly string[];
  readonly completed: readonly string[];
  readonly gated: readonly string[];
  readonly blocked: readonly { readonly function: string; readonly reason: ContinuationBlock }[];
}

/** The context of a session actor: plain JSON. The phase is the machine's top-level state. */
export interface SessionContext {
  readonly sessionId: string;
  readonly createdAt: number;
  readonly updatedAt: number;

  // Functions and the agent's turns.
  /** Turns completed (idle cycles). */
  readonly turn: number;
  /** The user sent a message since the last idle. */
  readonly userMessageInTurn: boolean;
  /** Live function names in activation order; their actors are children `fn:<name>` (systemId `fn:<id>:<name>`). */
  readonly liveFunctions: readonly string[];
  /** Completed or deactivated functions by name, with their last state. */
  readonly retiredFunctions: Readonly<Record<string, RetiredFunction>>;
  /** Continuations granted in this session. */
  readonly continuations: number;
  /** Number of idle cycles started. */
  readonly idleCycle: number;
  /** The idle cycle being answered, if any. */
  readonly idle: IdleCycle | null;

  // Loops.
  /** The loop running in this session (child `loop`, systemId `loop:<id>`), if any. */
  readonly activeLoopId: string | null;
  /** The last loop that finished here, as it ended. */
  readonly lastLoop: LoopState | null;

  // The runtime model (SPEC §4).
  /** Why the session waits, while it is in `waiting_user`; the sub-state has the same name. */
  readonly waitingReason: WaitingReason | null;
  /**
   * When the current wait for the user expires (`limits.waitUserTimeoutMs` after it began),
   * while in `waiting_user` with the limit set; otherwise null.
   */
  readonly waitExpiresAt: number | null;
  /** The worker in flight; while set, the main agent is paused. */
  readonly currentWorkerId: string | null;
  /** How the current worker's artifact becomes a fact. */
  readonly acceptanceMode: AcceptanceMode;
  /** A worker waiting for the user's answers. */
  readonly resumeContext: ResumeContext | null;
  /** A decision waiting for the user's approval. */
  readonly pendingDecision: MainAgentDecision | null;
  /** The artifact under programmatic review, if any. */
  readonly reviewArtifactId: string | null;
  /** Host-owned values. */
  readonly slots: Readonly<Record<string, unknown>>;
  readonly availableSkills: readonly SkillIndexEntry[];
  readonly skill: string | null;
  readonly intakePrompt: string | null;
  /** Loop-tool calls since the last user action (SPEC §4.3). */
  readonly toolLoopBurstCount: number;
  /** Why the session is in `error`. */
  readonly errorReason: string | null;
  /** Every applied runtime event, in order. */
  readonly history: readonly HistoryEntry[];

  // The effect outbox (DESIGN §10).
  /**
   * This incarnation's nonce, drawn from the id source when the session was opened: its
   * effects are `<sessionId>:<effectNonce>:e<n>`. Null for a session opened before nonces
   * existed (its effects are `<sessionId>:e<n>`).
   */
  readonly effectNonce: string | null;
  /** Effects emitted so far: the next one is numbered `effectCount + 1`. */
  readonly effectCount: number;
  /** Effects emitted and not settled yet, oldest first: saved with the step that emitted them. */
  readonly pendingEffects: readonly PendingEffect[];
}

/** What the system passes when it spawns a session. */
export interface SessionInput {
  readonly sessionId: string;
  readonly at: number;
  /** The default acceptance mode (default `user_confirmed`). */
  readonly acceptanceMode?: AcceptanceMode;
  /**
   * The incarnation's nonce (from the rolebox's id source; effect ids carry it). A run
   * recorded before nonces existed opens its sessions without one.
   */
  readonly nonce?: string;
  /** A persisted snapshot to restore instead of starting fresh (on-demand restore). */
  readonly restore?: unknown;
}

/** Every event a session actor accepts. */
export type SessionEvent =
  | SessionCommand
  | TimedRuntimeEvent
  | FunctionToSessionEvent
  | LoopToSessionEvent;
