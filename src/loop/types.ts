import type { RoundOutput } from '../ports/dispatcher.js';

/** How a loop's rounds relate: `inherit` seeds each round with the previous summary, `fresh` does not. */
export const LOOP_MODES = ['inherit', 'fresh'] as const;

/** One of `LOOP_MODES`. */
export type LoopMode = (typeof LOOP_MODES)[number];

/** Where a round stands in its loop's record. */
export const ROUND_STATUSES = ['running', 'completed', 'error', 'cancelled'] as const;

/** One of {@link ROUND_STATUSES}. */
export type RoundStatus = (typeof ROUND_STATUSES)[number];

/** The nine phases of a loop (SPEC §3.3). */
export const LOOP_PHASES = [
  'activating',
  'dispatching',
  'awaiting_worker',
  'summarizing',
  'finalizing',
  'complete',
  'cancelled',
  'interrupted',
  'error',
] as const;

/** One of the nine loop phases. */
export type LoopPhase = (typeof LOOP_PHASES)[number];

/** Phases a loop never leaves. */
export const TERMINAL_LOOP_PHASES: ReadonlySet<LoopPhase> = new Set([
  'complete',
  'cancelled',
  'interrupted',
  'error',
]);

/** Phases in which the origin session is doing the loop's work (a stop-loop message waits). */
export const ORIGIN_OWNED_LOOP_PHASES: ReadonlySet<LoopPhase> = new Set([
  'activating',
  'summarizing',
  'finalizing',
]);

/** True for complete, cancelled, interrupted and error. */
export function isTerminalLoopPhase(phase: LoopPhase): boolean {
  return TERMINAL_LOOP_PHASES.has(phase);
}

/** The record of one round. */
export interface RoundRecord {
  /** 1-based. */
  readonly round: number;
  readonly workerTaskId: string;
  readonly workerSessionId: string;
  readonly startedAt: number;
  readonly completedAt?: number;
  /** How long the round ran: the worker's own run when the dispatcher measured it. */
  readonly durationMs?: number;
  /** True when the round was started by a process that stopped before it ended (a restart). */
  readonly acrossRestart?: boolean;
  readonly status: RoundStatus;
  /** How much the worker wrote and how much of it was kept, when the dispatcher says (a capped, truncated output shows here). */
  readonly output?: RoundOutput;
}

/** The whole state of a loop (SPEC §3.3): plain JSON, what is persisted and shown. */
export interface LoopState {
  readonly schemaVersion: number;
  readonly id: string;
  readonly originSessionId: string;
  /** The agent that runs each round. */
  readonly agent: string;
  readonly basePrompt: string;
  readonly mode: LoopMode;
  /** Rounds to run (after clamping). */
  readonly total: number;
  /** Rounds asked for (before clamping). */
  readonly requested: number;
  /** The round in progress, 1-based. */
  readonly current: number;
  readonly clamped: boolean;
  readonly parentLoopId?: string;
  readonly phase: LoopPhase;
  readonly activeWorkerTaskId?: string;
  readonly activeWorkerSessionId?: string;
  readonly lastSummary?: string;
  readonly cancelRequested: boolean;
  readonly errorReason?: string;
  /** SHA-256 of the normalised base prompt. */
  readonly promptFingerprint: string;
  readonly startedAt: number;
  readonly updatedAt: number;
  readonly roundStartedAt?: number;
  /** When the round in flight times out. */
  readonly roundDeadlineAt?: number;
  /** When the next round is dispatched (during the inter-round delay). */
  readonly nextDispatchAt?: number;
  readonly rounds: readonly RoundRecord[];
}
