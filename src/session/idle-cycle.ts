import type { FunctionIdleOutcome } from '../function/machine-types.js';
import type { IdleReport } from './emitted.js';
import type { IdleCycle, SessionContext } from './machine-types.js';

/**
 * The context changes that start an idle cycle. The idle ends the turn: it is counted
 * first, so `turn_count(1)` holds at the first idle, and `user_approval()` is judged on
 * the turn that just ended, after which the user's message is forgotten.
 */
export function beginIdleCycle(
  context: Pick<SessionContext, 'turn' | 'idleCycle' | 'liveFunctions'>,
): {
  readonly turn: number;
  readonly userMessageInTurn: false;
  readonly idleCycle: number;
  readonly idle: IdleCycle;
} {
  const cycle = context.idleCycle + 1;
  return {
    turn: context.turn + 1,
    userMessageInTurn: false,
    idleCycle: cycle,
    idle: {
      cycle,
      awaiting: context.liveFunctions,
      continuing: [],
      completed: [],
      gated: [],
      blocked: [],
    },
  };
}

/** One function's answer to an idle cycle. */
export interface IdleAnswer {
  readonly function: string;
  readonly cycle: number;
  readonly outcome: FunctionIdleOutcome;
}

/**
 * The idle cycle with one more answer recorded, or undefined when the answer is not
 * awaited (no cycle, another cycle, or a function that answered already or was stopped).
 */
export function answerIdleCycle(idle: IdleCycle | null, answer: IdleAnswer): IdleCycle | undefined {
  if (!idle || idle.cycle !== answer.cycle || !idle.awaiting.includes(answer.function))
    return undefined;
  const { outcome } = answer;
  const name = answer.function;
  return {
    ...idle,
    awaiting: idle.awaiting.filter((other) => other !== name),
    continuing: outcome.kind === 'continue' ? [...idle.continuing, name] : idle.continuing,
    completed: outcome.kind === 'completed' ? [...idle.completed, name] : idle.completed,
    gated: outcome.kind === 'gated' ? [...idle.gated, name] : idle.gated,
    blocked:
      outcome.kind === 'blocked'
        ? [...idle.blocked, { function: name, reason: outcome.reason }]
        : idle.blocked,
  };
}

/** How an idle cycle ends once every function has answered. */
export interface IdleDecision {
  /** The session's continuations after this idle. */
  readonly continuations: number;
  /** The report for the host; when `continued`, `continuing` are the functions granted it. */
  readonly report: IdleReport;
}

/**
 * Settles an answered idle cycle: at most one continuation is granted, serving every
 * function that asked, unless the session has had `continuationsPerSession` already; then
 * each of them is blocked by the global cap instead.
 */
export function decideIdle(
  idle: IdleCycle,
  session: Pick<SessionContext, 'turn' | 'continuations'>,
  continuationsPerSession: number,
): IdleDecision {
  const asked = idle.continuing.length > 0;
  const capped = asked && session.continuations >= continuationsPerSession;
  const continued = asked && !capped;
  return {
    continuations: continued ? session.continuations + 1 : session.continuations,
    report: {
      turn: session.turn,
      continued,
      continuing: continued ? idle.continuing : [],
      completed: idle.completed,
      blocked: capped
        ? [
            ...idle.blocked,
            ...idle.continuing.map((name) => ({ function: name, reason: 'global_cap' as const })),
          ]
        : idle.blocked,
      gated: idle.gated,
    },
  };
}
