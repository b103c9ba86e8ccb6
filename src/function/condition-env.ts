import type { ConditionEnv } from '../condition/types.js';
import type { FunctionDefinition } from './definition.js';
import type { FunctionContext } from './machine-types.js';
import type { SessionFacts } from './session-facts.js';

/**
 * The environment a function's conditions are decided in: its own state plus the session
 * facts (`facts` overrides the ones in context, for events that bring newer facts);
 * `deciding: 'gate'` while its gate is decided (approval requests count there, SPEC §9).
 */
export function functionConditionEnv(
  context: FunctionContext,
  definition: FunctionDefinition,
  facts: SessionFacts = context.facts,
  deciding?: 'gate',
): ConditionEnv {
  return {
    kv: context.kv,
    evidenceObserved: context.evidenceObserved,
    toolsObserved: context.toolsObserved,
    requiresEvidence: definition.requiresEvidence,
    artifacts: facts.artifacts,
    currentTurn: facts.turn,
    activatedAtTurn: context.activatedAtTurn,
    userMessageInTurn: facts.userMessageInTurn,
    ...(deciding === undefined ? {} : { deciding }),
  };
}
