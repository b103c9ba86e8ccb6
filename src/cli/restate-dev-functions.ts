import { defineFunction, type FunctionDefinition } from '../function/definition.js';

const answered = 'signal_observed(answer)';

/**
 * What `rolebox restate dev` serves when no `--functions` folder is given: the README's
 * `approval` function, so that its approval flow can be tried over curl right away.
 */
export const RESTATE_DEV_FUNCTIONS: readonly FunctionDefinition[] = [
  defineFunction({ name: 'approval', gate: answered, continue_until: answered }),
];
