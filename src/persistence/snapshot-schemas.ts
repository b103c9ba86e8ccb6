import { z } from 'zod';
import { CONTINUATION_BLOCKS } from '../function/continuation.js';
import { FUNCTION_PHASES } from '../function/machine-types.js';
import { LOOP_OUTCOMES } from '../loop/machine-types.js';
import { LOOP_MODES, LOOP_PHASES, ROUND_STATUSES } from '../loop/types.js';
import { ARTIFACT_STATUSES } from '../session/artifact-lifecycle.js';
import { RETIREMENT_REASONS } from '../session/machine-types.js';
import {
  mainAgentDecisionSchema,
  RUNTIME_EVENT_SCHEMAS,
  skillIndexEntrySchema,
} from '../session/runtime-event-schema.js';
import { ACCEPTANCE_MODES, PENDING_EFFECT_STATUSES } from '../session/runtime-types.js';
import { APPROVAL_STATUSES, REQUESTS_KEY } from '../signal/approval-requests.js';
import { ON_TIMEOUT_ACTIONS } from '../signal/approval-timeout.js';
import { PAUSING_PRIORITY } from '../signal/catalogue.js';

// The zod shapes of what a stored session record holds, field by field, so that a record is
// checked whole before XState sees it (SPEC §6). They accept unknown extra fields (harmless,
// and what an older reader sees of a newer optional field) but every field the machines read
// must be there with the right type.

const count = z.number().int().min(0);
const time = z.number();
/**
 * A plain object (any keys, any values). Checked as such, not as `z.record()`: a record
 * schema parses every key and value into a copy, and the check keeps the stored value, so
 * for a session's context or a child's snapshot (checked again by their own schema) the
 * copy was a third of the check's time.
 */
export const plainObjectSchema = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { message: 'expected an object' },
);
const json = plainObjectSchema;
const text = z.string();
const nonEmpty = z.string().min(1);

/** The facts a session passes its functions. */
const sessionFactsSchema = z.object({
  turn: count,
  userMessageInTurn: z.boolean(),
  artifacts: z.array(text),
});

/** One approval request in a function's ledger (ApprovalRequest, SPEC §9). */
const approvalRequestSchema = z.object({
  id: nonEmpty,
  function: nonEmpty,
  type: z.enum(PAUSING_PRIORITY),
  payload: z.unknown(),
  openedAt: time,
  version: count,
  status: z.enum(APPROVAL_STATUSES),
  answeredAt: time.optional(),
  answeredBy: text.optional(),
  note: text.optional(),
  seenVersion: count.optional(),
  expiresAt: time.optional(),
  onTimeout: z.enum(ON_TIMEOUT_ACTIONS).optional(),
  hostOnly: z.literal(true).optional(),
  answeredByHost: z.literal(true).optional(),
  extendedAt: time.optional(),
  extendedBy: text.optional(),
});
const approvalRequestsSchema = z.array(approvalRequestSchema);

/**
 * A function's kv: any JSON object, whose approval requests, when it has any, are well
 * formed (gates are decided over them: a tampered list must not restore).
 */
const functionKvSchema = json.refine(
  (kv) =>
    !Object.hasOwn(kv, REQUESTS_KEY) || approvalRequestsSchema.safeParse(kv[REQUESTS_KEY]).success,
  { message: `${REQUESTS_KEY} must be a list of approval requests` },
);

/** A function actor's context (FunctionContext). */
export const functionContextSchema = z.object({
  sessionId: nonEmpty,
  name: nonEmpty,
  kv: functionKvSchema,
  evidenceObserved: z.record(z.string(), z.boolean()),
  toolsObserved: z.array(text),
  activatedAtTurn: count,
  activatedAt: time,
  updatedAt: time,
  facts: sessionFactsSchema,
  continuations: count,
  cooldownUntilTurn: z.number().int(),
  transitionsHeld: z.array(z.boolean()),
  version: count,
});

/** One round of a loop (RoundRecord). */
const roundRecordSchema = z.object({
  round: z.number().int().min(1),
  workerTaskId: nonEmpty,
  workerSessionId: nonEmpty,
  startedAt: time,
  completedAt: time.optional(),
  durationMs: z.number().min(0).optional(),
  acrossRestart: z.boolean().optional(),
  status: z.enum(ROUND_STATUSES),
  output: z
    .object({
      bytes: z.number().int().min(0),
      keptBytes: z.number().int().min(0),
      truncated: z.boolean(),
    })
    .optional(),
});

/** The fields a loop's state and a loop actor's context share (LoopState without phase). */
const loopFields = {
  schemaVersion: z.number().int().min(1),
  id: nonEmpty,
  originSessionId: nonEmpty,
  agent: nonEmpty,
  basePrompt: text,
  mode: z.enum(LOOP_MODES),
  total: z.number().int().min(1),
  requested: z.number().int().min(1),
  current: z.number().int().min(1),
  clamped: z.boolean(),
  parentLoopId: nonEmpty.optional(),
  activeWorkerTaskId: nonEmpty.optional(),
  activeWorkerSessionId: nonEmpty.optional(),
  lastSummary: text.optional(),
  cancelRequested: z.boolean(),
  errorReason: text.optional(),
  promptFingerprint: z.string().regex(/^[0-9a-f]{64}$/),
  startedAt: time,
  updatedAt: time,
  roundStartedAt: time.optional(),
  roundDeadlineAt: time.optional(),
  nextDispatchAt: time.optional(),
  rounds: z.array(roundRecordSchema),
};

/** A loop actor's context (LoopContext). */
export const loopContextSchema = z.object({
  ...loopFields,
  finalizeAs: z.enum(LOOP_OUTCOMES).optional(),
  cancelWorkerTaskId: nonEmpty.optional(),
  stopNowRequested: z.boolean(),
});

/** A finished loop as a session remembers it (`lastLoop`, a LoopState). */
export const loopStateSchema = z.object({ ...loopFields, phase: z.enum(LOOP_PHASES) });

const questions = z.array(text);

/** Why a session waits (WaitingReason). */
const waitingReasonSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('skill_selection'), availableSkills: z.array(skillIndexEntrySchema) }),
  z.object({ kind: z.literal('intake'), prompt: text }),
  z.object({ kind: z.literal('input'), message: text.optional(), questions: questions.optional() }),
  z.object({ kind: z.literal('approve_step'), decisionId: nonEmpty }),
  z.object({
    kind: z.literal('review_artifact'),
    artifactId: nonEmpty,
    questions: questions.optional(),
    assessment: text.optional(),
  }),
  z.object({ kind: z.literal('worker_questions'), workerId: nonEmpty, questions }),
  z.object({ kind: z.literal('revision'), instruction: text.optional() }),
]);

const continuationBlockSchema = z.enum(CONTINUATION_BLOCKS);

/** An idle cycle being answered (IdleCycle). */
const idleCycleSchema = z.object({
  cycle: z.number().int().min(1),
  awaiting: z.array(nonEmpty),
  continuing: z.array(nonEmpty),
  completed: z.array(nonEmpty),
  gated: z.array(nonEmpty),
  blocked: z.array(z.object({ function: nonEmpty, reason: continuationBlockSchema })),
});

/** A function that is no longer live (RetiredFunction). */
const retiredFunctionSchema = z.object({
  phase: z.enum(FUNCTION_PHASES),
  reason: z.enum(RETIREMENT_REASONS),
  at: time,
  context: functionContextSchema,
});

const [firstEvent, ...otherEvents] = Object.values(RUNTIME_EVENT_SCHEMAS);

/** One applied runtime event in the history (HistoryEntry). */
const historyEntrySchema = z.object({
  at: time,
  event: z.discriminatedUnion('type', [
    firstEvent as (typeof RUNTIME_EVENT_SCHEMAS)['session_started'],
    ...otherEvents,
  ]),
});

const runtimeEventSchema = z.discriminatedUnion('type', [
  firstEvent as (typeof RUNTIME_EVENT_SCHEMAS)['session_started'],
  ...otherEvents,
]);

/** An effect the session emitted (SessionEffect), with its id. */
const sessionEffectSchema = z.discriminatedUnion('type', [
  z.object({
    id: nonEmpty,
    type: z.literal('invoke_main_agent'),
    reason: text,
    instruction: text.optional(),
  }),
  z.object({
    id: nonEmpty,
    type: z.literal('run_worker'),
    workerId: nonEmpty,
    decisionId: nonEmpty,
    instruction: text.optional(),
  }),
  z.object({ id: nonEmpty, type: z.literal('resume_worker'), workerId: nonEmpty, answer: text }),
  z.object({ id: nonEmpty, type: z.literal('run_programmatic_review'), artifactId: nonEmpty }),
  z.object({ id: nonEmpty, type: z.literal('emit_message'), message: text }),
]);

/** An effect in the outbox (PendingEffect). */
const pendingEffectSchema = z.object({
  id: nonEmpty,
  effect: sessionEffectSchema,
  status: z.enum(PENDING_EFFECT_STATUSES),
  attempts: count,
  lastError: text.optional(),
  nextAttemptAt: time.optional(),
  result: z.array(runtimeEventSchema).optional(),
});

/** A session actor's context (SessionContext). */
export const sessionContextSchema = z.object({
  sessionId: nonEmpty,
  createdAt: time,
  updatedAt: time,
  turn: count,
  userMessageInTurn: z.boolean(),
  liveFunctions: z.array(nonEmpty),
  retiredFunctions: z.record(z.string(), retiredFunctionSchema),
  continuations: count,
  idleCycle: count,
  idle: idleCycleSchema.nullable(),
  activeLoopId: nonEmpty.nullable(),
  lastLoop: loopStateSchema.nullable(),
  waitingReason: waitingReasonSchema.nullable(),
  waitExpiresAt: time.nullable(),
  currentWorkerId: nonEmpty.nullable(),
  acceptanceMode: z.enum(ACCEPTANCE_MODES),
  resumeContext: z.object({ workerId: nonEmpty, questions }).nullable(),
  pendingDecision: mainAgentDecisionSchema.nullable(),
  reviewArtifactId: nonEmpty.nullable(),
  slots: json,
  availableSkills: z.array(skillIndexEntrySchema),
  skill: nonEmpty.nullable(),
  intakePrompt: text.nullable(),
  toolLoopBurstCount: count,
  errorReason: text.nullable(),
  history: z.array(historyEntrySchema),
  effectNonce: nonEmpty.nullable(),
  effectCount: count,
  pendingEffects: z.array(pendingEffectSchema),
});

/** One artifact version (ArtifactRecord). */
const artifactRecordSchema = z.object({
  id: nonEmpty,
  name: nonEmpty,
  workerId: nonEmpty.optional(),
  status: z.enum(ARTIFACT_STATUSES),
  summary: text.optional(),
  content: text.optional(),
  createdAt: time,
  updatedAt: time,
});

/** The persisted snapshot of a session's artifact store (@xstate/store). */
export const artifactStoreSnapshotSchema = z.object({
  status: z.literal('active'),
  context: z.object({ nextSeq: z.number().int().min(1), artifacts: z.array(artifactRecordSchema) }),
});

/** A persisted child entry, as XState writes it into its parent's `children`. */
export const persistedChildSchema = z.object({
  src: nonEmpty,
  snapshot: json,
  systemId: nonEmpty.optional(),
});

/** A persisted state-machine snapshot: status, state value, context, children. */
export const persistedMachineSchema = z.object({
  status: z.enum(['active', 'done', 'error', 'stopped']),
  value: z.union([z.string(), json]),
  context: json,
  children: z.record(z.string(), persistedChildSchema),
});

/** One loop's entry in the system's loop registry (LoopRegistration). */
const loopRegistrationSchema = z.object({
  originSessionId: nonEmpty,
  parentLoopId: nonEmpty.optional(),
  rootLoopId: nonEmpty,
  fingerprint: z.string().regex(/^[0-9a-f]{64}$/),
  workerSessionIds: z.array(nonEmpty),
  finished: z.boolean(),
});

/** The system record's snapshot: the loop registry. */
export const systemRecordSchema = z.object({
  context: z.object({
    loopRegistry: z.object({ loops: z.record(z.string(), loopRegistrationSchema) }),
  }),
});
