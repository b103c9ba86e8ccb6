import type { ArtifactStatus } from './artifact.js';

/** The five phases of a runtime session (SPEC §4.1). */
export const RUNTIME_PHASES = ['idle', 'running', 'waiting_user', 'done', 'error'] as const;

/** One of the five runtime phases. */
export type RuntimePhase = (typeof RUNTIME_PHASES)[number];

/** The kinds of waiting reason, one sub-state of `waiting_user` each. */
export const WAITING_REASON_KINDS = [
  'skill_selection',
  'intake',
  'input',
  'approve_step',
  'review_artifact',
  'worker_questions',
  'revision',
] as const;

/** One of the waiting-reason kinds. */
export type WaitingReasonKind = (typeof WAITING_REASON_KINDS)[number];

/** A skill the user may choose. */
export interface SkillIndexEntry {
  readonly name: string;
  readonly description?: string;
}

/** Why the session waits for the user, with what the user needs to act (SPEC §4.1). */
export type WaitingReason =
  | { readonly kind: 'skill_selection'; readonly availableSkills: readonly SkillIndexEntry[] }
  | { readonly kind: 'intake'; readonly prompt: string }
  | { readonly kind: 'input'; readonly message?: string; readonly questions?: readonly string[] }
  | { readonly kind: 'approve_step'; readonly decisionId: string }
  | {
      readonly kind: 'review_artifact';
      readonly artifactId: string;
      readonly questions?: readonly string[];
      readonly assessment?: string;
    }
  | {
      readonly kind: 'worker_questions';
      readonly workerId: string;
      readonly questions: readonly string[];
    }
  | { readonly kind: 'revision'; readonly instruction?: string };

/** How a worker's artifact becomes a fact; `user_confirmed` is the default. */
export const ACCEPTANCE_MODES = [
  'user_confirmed',
  'no_confirmation',
  'programmatic_review',
] as const;

/** One of the {@link ACCEPTANCE_MODES}. */
export type AcceptanceMode = (typeof ACCEPTANCE_MODES)[number];

/** What the main agent decided to do next. */
export type MainAgentDecision =
  | {
      readonly id: string;
      readonly kind: 'ask_user';
      readonly message?: string;
      readonly questions?: readonly string[];
    }
  | { readonly id: string; readonly kind: 'review_blackboard'; readonly message?: string }
  | { readonly id: string; readonly kind: 'finish'; readonly summary?: string }
  | {
      readonly id: string;
      readonly kind: 'run_worker' | 'create_temp_worker';
      readonly workerId: string;
      readonly requiresApproval?: boolean;
      readonly instruction?: string;
    };

/** A worker paused on questions, to be resumed with the user's answer. */
export interface ResumeContext {
  readonly workerId: string;
  readonly questions: readonly string[];
}

/** The runtime events of SPEC §4.2, as the host sends them. */
export type RuntimeEvent =
  | {
      readonly type: 'session_started';
      readonly availableSkills: readonly SkillIndexEntry[];
      readonly initialSkill?: string;
      readonly intakePrompt?: string;
    }
  | { readonly type: 'skill_selected'; readonly skill: string }
  | { readonly type: 'user_submitted_input'; readonly text: string }
  | { readonly type: 'user_confirmed_intake' }
  | { readonly type: 'main_agent_decision_created'; readonly decision: MainAgentDecision }
  | { readonly type: 'user_approved_next_step'; readonly decisionId: string }
  | { readonly type: 'user_rejected_next_step'; readonly decisionId: string }
  | {
      readonly type: 'worker_started';
      readonly workerId: string;
      readonly acceptanceMode: AcceptanceMode;
    }
  | {
      readonly type: 'worker_needs_input';
      readonly workerId: string;
      readonly questions: readonly string[];
    }
  | {
      readonly type: 'worker_completed';
      readonly artifactId: string;
      readonly questions?: readonly string[];
      readonly assessment?: string;
    }
  | { readonly type: 'user_accepted_artifact'; readonly artifactId: string }
  | { readonly type: 'user_rejected_artifact'; readonly artifactId: string }
  | { readonly type: 'user_requested_revision'; readonly instruction: string }
  | { readonly type: 'programmatic_review_passed' }
  | { readonly type: 'programmatic_review_failed'; readonly reason: string }
  | { readonly type: 'flow_completed' }
  | { readonly type: 'runtime_failed'; readonly reason: string }
  /**
   * The wait for the user outlived `limits.waitUserTimeoutMs`: sent by the runtime when the
   * session's `waitExpiresAt` comes; taken only in `waiting_user` once that time has come.
   */
  | { readonly type: 'wait_expired' };

/** The type names of {@link RuntimeEvent}. */
export type RuntimeEventType = RuntimeEvent['type'];

/** A runtime event as the session machine receives it: stamped with the clock time. */
export type TimedRuntimeEvent = RuntimeEvent & { readonly at: number };

/** User actions: each resets the tool-loop burst counter (SPEC §4.3). */
export const HARD_USER_EVENTS: ReadonlySet<RuntimeEventType> = new Set([
  'skill_selected',
  'user_submitted_input',
  'user_confirmed_intake',
  'user_approved_next_step',
  'user_rejected_next_step',
  'user_accepted_artifact',
  'user_rejected_artifact',
  'user_requested_revision',
]);

/**
 * What the session asks the host to do, without its id: what the machine decides. The
 * machine performs none of it; it numbers it and records it in its outbox.
 */
export type SessionEffectBody =
  | { readonly type: 'invoke_main_agent'; readonly reason: string; readonly instruction?: string }
  | {
      readonly type: 'run_worker';
      readonly workerId: string;
      readonly decisionId: string;
      readonly instruction?: string;
    }
  | { readonly type: 'resume_worker'; readonly workerId: string; readonly answer: string }
  | { readonly type: 'run_programmatic_review'; readonly artifactId: string }
  | { readonly type: 'emit_message'; readonly message: string };

/**
 * What the session asks the host to do, with its stable id `<sessionId>:e<n>` (n counts the
 * session's effects from 1). The machine performs none of it: it records it as pending in
 * its context (`view().pendingEffects`) until the event that answers it settles it.
 */
export type SessionEffect = SessionEffectBody & { readonly id: string };

/** The type names of {@link SessionEffect}. */
export type SessionEffectType = SessionEffect['type'];

/** Every {@link SessionEffectType}, in the order of SPEC §4.2's table. */
export const SESSION_EFFECT_TYPES = [
  'invoke_main_agent',
  'run_worker',
  'resume_worker',
  'run_programmatic_review',
  'emit_message',
] as const satisfies readonly SessionEffectType[];

/**
 * Where a pending effect stands: `pending` (to run, or to be answered by the host),
 * `running` (its handler was started), `failed` (its handler failed on its last attempt).
 */
export const PENDING_EFFECT_STATUSES = ['pending', 'running', 'failed'] as const;

/** One of {@link PENDING_EFFECT_STATUSES}. */
export type PendingEffectStatus = (typeof PENDING_EFFECT_STATUSES)[number];

/** An effect in the session's outbox, not settled yet: plain JSON, saved with the session. */
export interface PendingEffect {
  readonly id: string;
  readonly effect: SessionEffect;
  readonly status: PendingEffectStatus;
  /** Handler attempts started so far (0 while none has run). */
  readonly attempts: number;
  /** Why the last attempt failed, if one did. */
  readonly lastError?: string;
  /** Clock time of the next attempt, while a failed attempt waits to be retried. */
  readonly nextAttemptAt?: number;
  /**
   * The events its handler returned, recorded (and saved) before they are applied: a
   * restart applies them without calling the handler again.
   */
  readonly result?: readonly RuntimeEvent[];
}

/** One entry of the session history: an applied runtime event and when. */
export interface HistoryEntry {
  readonly at: number;
  readonly event: RuntimeEvent;
}

/** What a status change of an artifact looks like, for the record. */
export interface ArtifactStatusChange {
  readonly artifactId: string;
  readonly from: ArtifactStatus;
  readonly to: ArtifactStatus;
}
