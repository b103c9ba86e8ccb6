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

/** How a worker's artifact may become a fact: the user confirms it, nobody does, or a programmatic review. */
export const ACCEPTANCE_MODES = [
  'user_confirmed',
  'no_confirmation',
  'programmatic_review',
] as const;

/** How a worker's artifact becomes a fact. */
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
  | { readonly type: 'runtime_failed'; readonly reason: string };

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

/** What the session asks the host to do. The machine performs none of it. */
export type SessionEffect =
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
