import { ARTIFACT_NAME_PATTERN, ARTIFACT_NAME_RULE } from '../base/input-limits.js';
import { ownValue } from '../base/own-keys.js';
import { answerHolds } from '../signal/approval-requests.js';
import { isSignalType, SIGNAL_TYPES } from '../signal/catalogue.js';
import { hasSignal } from '../signal/ledger.js';
import type { NamedCondition } from './types.js';

/** The built-in named conditions of SPEC §2.2. */
export const BUILTIN_CONDITIONS: Readonly<Record<string, NamedCondition>> = {
  signal_observed: {
    description:
      'the ledger holds the signal type; for answer in a gate, once a request was opened: every request is answered (SPEC §9)',
    argument: 'required',
    validateArg: (arg) =>
      isSignalType(arg) ? undefined : `expected a signal type (${SIGNAL_TYPES.join(', ')})`,
    // In a gate, an answer approves the requests made before it, never one made after
    // (SPEC §9); everywhere else, and for every other type, the seeds' level semantics.
    evaluate: (arg, env) =>
      arg === 'answer' && env.deciding === 'gate'
        ? answerHolds(env.kv)
        : hasSignal(env.kv, arg as string),
  },
  artifact_exists: {
    description: 'the session has an artifact with this name',
    argument: 'required',
    validateArg: (arg) =>
      ARTIFACT_NAME_PATTERN.test(arg) ? undefined : `an artifact name is ${ARTIFACT_NAME_RULE}`,
    evaluate: (arg, env) => env.artifacts.includes(arg as string),
  },
  tool_observed: {
    description: 'the host reported this tool since activation',
    argument: 'required',
    evaluate: (arg, env) => env.toolsObserved.includes(arg as string),
  },
  evidence_met: {
    description: 'every requires_evidence tag has been observed',
    argument: 'none',
    evaluate: (_arg, env) =>
      env.requiresEvidence.every((tag) => ownValue(env.evidenceObserved, tag) === true),
  },
  evidence_observed: {
    description: 'this evidence tag has been observed (e.g. paused)',
    argument: 'required',
    evaluate: (arg, env) => ownValue(env.evidenceObserved, arg as string) === true,
  },
  user_approval: {
    description: 'the user sent a message in the current turn',
    argument: 'none',
    evaluate: (_arg, env) => env.userMessageInTurn,
  },
  turn_count: {
    description: 'at least n turns completed since activation',
    argument: 'required',
    validateArg: (arg) => (/^\d+$/.test(arg) ? undefined : 'expected a whole number of turns'),
    evaluate: (arg, env) => env.currentTurn - env.activatedAtTurn >= Number(arg),
  },
  state_eq: {
    description: 'String(kv[key]) equals value',
    argument: 'required',
    validateArg: (arg) => (/^[^=]+=/.test(arg) ? undefined : 'expected key=value'),
    evaluate: (arg, env) => {
      const at = (arg as string).indexOf('=');
      const key = (arg as string).slice(0, at).trim();
      const value = (arg as string).slice(at + 1).trim();
      // A missing key never equals anything, not even the text "undefined".
      return Object.hasOwn(env.kv, key) && String(env.kv[key]) === value;
    },
  },
};
