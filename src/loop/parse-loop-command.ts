import { parseToolCallText } from '../base/tool-call.js';
import { describeValue, RoleboxError } from '../errors.js';
import { DEFAULT_ITERATIONS, MAX_ITERATIONS_HARD_CAP } from './constants.js';
import type { LoopMode } from './types.js';

/** A parsed `|loop|` command. */
export interface LoopCommand {
  /** Rounds to run, after clamping to the cap. */
  readonly iterations: number;
  /** Rounds asked for. */
  readonly requested: number;
  /** True when `requested` was above the cap. */
  readonly clamped: boolean;
  readonly mode: LoopMode;
  /** The task, i.e. the base prompt of every round. */
  readonly task: string;
}

// Maps, not object literals: `|loop:2,constructor| x` must not find Object.prototype.constructor.
const MODE_ALIASES: ReadonlyMap<string, LoopMode> = new Map([
  ['inherit', 'inherit'],
  ['on', 'inherit'],
  ['true', 'inherit'],
  ['fresh', 'fresh'],
  ['no-inherit', 'fresh'],
  ['off', 'fresh'],
  ['false', 'fresh'],
]);

const NAMES: ReadonlyMap<string, 'iterations' | 'mode'> = new Map([
  ['iterations', 'iterations'],
  ['_0', 'iterations'],
  ['mode', 'mode'],
  ['_1', 'mode'],
]);

/**
 * Parses `|loop:N| task`, `|loop:N,mode| task`, `|loop:N,mode=fresh| task`,
 * `|loop:iterations=N,mode=inherit| task` or `|loop| task` (SPEC §3.1).
 *
 * Expects: the agent's text. `maxIterations` is the cap (default 50).
 * Returns: the command; iterations above the cap are clamped with `clamped: true`.
 * Throws: `malformed_loop_text` naming the text and what is wrong with it.
 */
export function parseLoopCommand(
  text: string,
  limits: { readonly defaultIterations?: number; readonly maxIterations?: number } = {},
): LoopCommand {
  const fail = (why: string): never => {
    throw new RoleboxError(
      'malformed_loop_text',
      `cannot parse loop command ${describeValue(text)}: ${why}`,
      { text },
    );
  };
  let call: ReturnType<typeof parseToolCallText>;
  try {
    call = parseToolCallText(text);
  } catch {
    return fail('expected "|loop:N| task"');
  }
  if (call.name !== 'loop') fail(`expected a "|loop|" call, not "|${call.name}|"`);
  if (call.args === '') fail('the loop needs a task after the closing "|"');

  const values: { iterations?: string; mode?: string } = {};
  const parts =
    call.params === undefined || call.params === ''
      ? []
      : call.params.split(',').map((part) => part.trim());
  parts.forEach((part, position) => {
    if (part === '') fail('an empty parameter');
    const eq = part.indexOf('=');
    let key: 'iterations' | 'mode';
    let value: string;
    if (eq === -1) {
      if (position > 1)
        fail(`too many parameters (${describeValue(part)}); expected at most iterations and mode`);
      key = position === 0 ? 'iterations' : 'mode';
      value = part;
    } else {
      const name = part.slice(0, eq).trim();
      const known = NAMES.get(name);
      if (!known) fail(`unknown parameter ${describeValue(name)}; expected iterations or mode`);
      key = known as 'iterations' | 'mode';
      value = part.slice(eq + 1).trim();
    }
    if (values[key] !== undefined) fail(`${key} given twice`);
    values[key] = value;
  });

  const defaultIterations = limits.defaultIterations ?? DEFAULT_ITERATIONS;
  const maxIterations = limits.maxIterations ?? MAX_ITERATIONS_HARD_CAP;
  let requested = defaultIterations;
  if (values.iterations !== undefined) {
    if (!/^\d+$/.test(values.iterations))
      fail(`iterations must be a whole number, got ${describeValue(values.iterations)}`);
    requested = Number(values.iterations);
    if (requested < 1) fail(`iterations must be at least 1, got ${requested}`);
    // Clamped below, but the count asked for is kept in context, which must be JSON.
    if (!Number.isSafeInteger(requested))
      fail(
        `iterations must be at most ${Number.MAX_SAFE_INTEGER}, got ${describeValue(values.iterations)}`,
      );
  }
  let mode: LoopMode = 'inherit';
  if (values.mode !== undefined) {
    const resolved = MODE_ALIASES.get(values.mode.toLowerCase());
    if (!resolved)
      fail(
        `mode must be inherit (on, true) or fresh (no-inherit, off, false), got ${describeValue(values.mode)}`,
      );
    mode = resolved as LoopMode;
  }
  const clamped = requested > maxIterations;
  return {
    iterations: clamped ? maxIterations : requested,
    requested,
    clamped,
    mode,
    task: call.args,
  };
}
