import type { ContinuationBlock } from '../function/continuation.js';
import type {
  FunctionContext,
  FunctionPhase,
  FunctionToSessionEvent,
} from '../function/machine-types.js';
import type { LoopToSessionEvent } from '../loop/machine-types.js';
import type { LoopState } from '../loop/types.js';
import type { ArtifactRecord } from './artifact.js';
import type { SessionCommand } from './commands.js';

/** A function that is no longer live: its last state stays readable. */
export interface RetiredFunction {
  readonly phase: FunctionPhase;
  readonly reason: 'completed' | 'deactivated';
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

/** The context of a session actor: plain JSON. */
export interface SessionContext {
  readonly sessionId: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Turns completed (idle cycles). */
  readonly turn: number;
  /** The user sent a message since the last idle. */
  readonly userMessageInTurn: boolean;
  /** Live function names in activation order; their actors are children `fn:<id>:<name>`. */
  readonly liveFunctions: readonly string[];
  /** Completed or deactivated functions by name, with their last state. */
  readonly retiredFunctions: Readonly<Record<string, RetiredFunction>>;
  /** Continuations granted in this session. */
  readonly continuations: number;
  /** Number of idle cycles started. */
  readonly idleCycle: number;
  /** The idle cycle being answered, if any. */
  readonly idle: IdleCycle | null;
  readonly artifacts: readonly ArtifactRecord[];
  /** Sequence for artifact ids (`art-1`, `art-2`, …): deterministic, so replays match. */
  readonly nextArtifactSeq: number;
  /** The loop running in this session (child `loop:<id>`), if any. */
  readonly activeLoopId: string | null;
  /** The last loop that finished here, as it ended. */
  readonly lastLoop: LoopState | null;
}

/** What the system passes when it spawns a session. */
export interface SessionInput {
  readonly sessionId: string;
  readonly at: number;
}

/** Every event a session actor accepts. */
export type SessionEvent = SessionCommand | FunctionToSessionEvent | LoopToSessionEvent;
