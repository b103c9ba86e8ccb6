import { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import {
  ACCEPTANCE_MODES,
  type MainAgentDecision,
  type RuntimeEvent,
  type RuntimeEventType,
} from './runtime-types.js';

const nonEmpty = z.string().min(1);
const questions = z.array(nonEmpty);
const acceptanceMode = z.enum(ACCEPTANCE_MODES);
const skill = z.strictObject({ name: nonEmpty, description: z.string().optional() });
const decision = z.discriminatedUnion('kind', [
  z.strictObject({
    id: nonEmpty,
    kind: z.literal('ask_user'),
    message: z.string().optional(),
    questions: questions.optional(),
  }),
  z.strictObject({
    id: nonEmpty,
    kind: z.literal('review_blackboard'),
    message: z.string().optional(),
  }),
  z.strictObject({ id: nonEmpty, kind: z.literal('finish'), summary: z.string().optional() }),
  z.strictObject({
    id: nonEmpty,
    kind: z.enum(['run_worker', 'create_temp_worker']),
    workerId: nonEmpty,
    requiresApproval: z.boolean().optional(),
    instruction: z.string().optional(),
  }),
]);

/** The zod schema of every runtime event, by type (SPEC §4.2). */
export const RUNTIME_EVENT_SCHEMAS = {
  session_started: z.strictObject({
    type: z.literal('session_started'),
    availableSkills: z.array(skill),
    initialSkill: nonEmpty.optional(),
    intakePrompt: nonEmpty.optional(),
  }),
  skill_selected: z.strictObject({ type: z.literal('skill_selected'), skill: nonEmpty }),
  user_submitted_input: z.strictObject({
    type: z.literal('user_submitted_input'),
    text: z.string(),
  }),
  user_confirmed_intake: z.strictObject({ type: z.literal('user_confirmed_intake') }),
  main_agent_decision_created: z.strictObject({
    type: z.literal('main_agent_decision_created'),
    decision,
  }),
  user_approved_next_step: z.strictObject({
    type: z.literal('user_approved_next_step'),
    decisionId: nonEmpty,
  }),
  user_rejected_next_step: z.strictObject({
    type: z.literal('user_rejected_next_step'),
    decisionId: nonEmpty,
  }),
  worker_started: z.strictObject({
    type: z.literal('worker_started'),
    workerId: nonEmpty,
    acceptanceMode,
  }),
  worker_needs_input: z.strictObject({
    type: z.literal('worker_needs_input'),
    workerId: nonEmpty,
    questions: questions.min(1),
  }),
  worker_completed: z.strictObject({
    type: z.literal('worker_completed'),
    artifactId: nonEmpty,
    questions: questions.optional(),
    assessment: z.string().optional(),
  }),
  user_accepted_artifact: z.strictObject({
    type: z.literal('user_accepted_artifact'),
    artifactId: nonEmpty,
  }),
  user_rejected_artifact: z.strictObject({
    type: z.literal('user_rejected_artifact'),
    artifactId: nonEmpty,
  }),
  user_requested_revision: z.strictObject({
    type: z.literal('user_requested_revision'),
    instruction: z.string(),
  }),
  programmatic_review_passed: z.strictObject({ type: z.literal('programmatic_review_passed') }),
  programmatic_review_failed: z.strictObject({
    type: z.literal('programmatic_review_failed'),
    reason: nonEmpty,
  }),
  flow_completed: z.strictObject({ type: z.literal('flow_completed') }),
  runtime_failed: z.strictObject({ type: z.literal('runtime_failed'), reason: nonEmpty }),
  wait_expired: z.strictObject({ type: z.literal('wait_expired') }),
} as const satisfies Record<RuntimeEventType, z.ZodType>;

/** Every runtime event type, in table order. */
export const RUNTIME_EVENT_TYPES = Object.keys(RUNTIME_EVENT_SCHEMAS) as RuntimeEventType[];

/**
 * Validates a runtime event from untrusted input.
 * Throws: `invalid_event` naming the type, or the field and value that are wrong.
 */
export function parseRuntimeEvent(input: unknown): RuntimeEvent {
  const type =
    typeof input === 'object' && input !== null ? (input as { type?: unknown }).type : undefined;
  // Own keys only: `{ type: 'constructor' }` must not find Object.prototype.constructor.
  const schema =
    typeof type === 'string' && Object.hasOwn(RUNTIME_EVENT_SCHEMAS, type)
      ? RUNTIME_EVENT_SCHEMAS[type as RuntimeEventType]
      : undefined;
  if (!schema) {
    throw new RoleboxError(
      'invalid_event',
      `unknown runtime event type ${describeValue(type)}; expected one of ${RUNTIME_EVENT_TYPES.join(', ')}`,
      { type },
    );
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const field =
      issue.path.map(String).join('.') ||
      (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '(event)');
    let value: unknown = input;
    for (const key of issue.path)
      value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
    throw new RoleboxError(
      'invalid_event',
      `invalid ${type} event: ${field}: ${issue.message} (got ${describeValue(value)})`,
      {
        type,
        field,
      },
    );
  }
  return parsed.data as RuntimeEvent;
}

/** The zod schema of a {@link MainAgentDecision} (also used to check stored sessions). */
export const mainAgentDecisionSchema = decision;

/** The zod schema of a skill the user may choose (also used to check stored sessions). */
export const skillIndexEntrySchema = skill;
