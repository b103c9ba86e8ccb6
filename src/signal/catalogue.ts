/** The eight agent signal types, in catalogue order. */
export const SIGNAL_TYPES = [
  'answer',
  'need_approval',
  'blocked',
  'need_clarification',
  'handoff',
  'progress',
  'revise_needed',
  'escalate',
] as const;

/** One of the eight agent signal types. */
export type SignalType = (typeof SIGNAL_TYPES)[number];

/**
 * What each signal type means, for the agent that emits it (the tool descriptions of
 * `rolebox/ai` are built from this and {@link SIGNAL_CATEGORY_OF}).
 */
export const SIGNAL_MEANINGS = {
  answer: 'the task is done and this is the final answer',
  need_approval: 'a human must approve before the work goes on',
  blocked: 'the work cannot go on until something outside is ready',
  need_clarification: 'the user must clarify the request or give more input',
  handoff: 'hand the work over to another agent (name it in payload.target)',
  progress: 'a progress report; changes nothing',
  revise_needed: 'the output must be revised before it can be used',
  escalate: 'a problem the agent cannot handle; a higher authority must take it',
} as const satisfies Record<SignalType, string>;

/** The four signal categories, by decreasing effect on a function FSM. */
export const SIGNAL_CATEGORIES = ['terminating', 'pausing', 'handoff', 'info'] as const;

/** How a signal affects the functions that record it. */
export type SignalCategory = (typeof SIGNAL_CATEGORIES)[number];

/** The category of every signal type. */
export const SIGNAL_CATEGORY_OF = {
  answer: 'terminating',
  revise_needed: 'terminating',
  escalate: 'terminating',
  need_approval: 'pausing',
  blocked: 'pausing',
  need_clarification: 'pausing',
  handoff: 'handoff',
  progress: 'info',
} as const satisfies Record<SignalType, SignalCategory>;

/** Terminating signals from most to least severe: escalate > revise_needed > answer. */
export const TERMINATING_SEVERITY = [
  'escalate',
  'revise_needed',
  'answer',
] as const satisfies readonly SignalType[];

/**
 * Pausing ("human in the loop") signals from highest to lowest priority:
 * need_approval > blocked > need_clarification.
 */
export const PAUSING_PRIORITY = [
  'need_approval',
  'blocked',
  'need_clarification',
] as const satisfies readonly SignalType[];

/** True when `value` is one of the eight signal types. */
export function isSignalType(value: unknown): value is SignalType {
  return typeof value === 'string' && (SIGNAL_TYPES as readonly string[]).includes(value);
}

/** The category of a signal type. */
export function signalCategory(type: SignalType): SignalCategory {
  return SIGNAL_CATEGORY_OF[type];
}

/** True for answer, revise_needed and escalate. */
export function isTerminatingSignal(type: SignalType): boolean {
  return SIGNAL_CATEGORY_OF[type] === 'terminating';
}

/** True for need_approval, blocked and need_clarification. */
export function isPausingSignal(type: SignalType): boolean {
  return SIGNAL_CATEGORY_OF[type] === 'pausing';
}

/**
 * The most severe terminating signal among `types`, or undefined when none terminates.
 *
 * Use when: several terminating signals were seen and one outcome must be reported.
 */
export function mostSevereTerminating(types: Iterable<SignalType>): SignalType | undefined {
  const seen = new Set(types);
  return TERMINATING_SEVERITY.find((type) => seen.has(type));
}

/**
 * The highest-priority pausing signal among `types`, or undefined when none pauses.
 *
 * Use when: deciding which human-in-the-loop request to show first.
 */
export function highestPriorityPausing(types: Iterable<SignalType>): SignalType | undefined {
  const seen = new Set(types);
  return PAUSING_PRIORITY.find((type) => seen.has(type));
}
