import { ownValue } from '../base/own-keys.js';
import type { FunctionContext } from '../function/machine-types.js';
import { functionPhaseOf } from '../function/phase.js';
import type { IdleCycle, RetiredFunction, SessionContext } from './machine-types.js';

/** What a session keeps of its function children: their live and retired records. */
type FunctionRecords = Pick<SessionContext, 'liveFunctions' | 'retiredFunctions'>;

/** A function actor's last snapshot, as plain data: its state value and its context. */
export interface FunctionSnapshotData {
  readonly value: unknown;
  readonly context: FunctionContext;
}

/** What activating some functions does: which actors to spawn, and the records after. */
export interface ActivationPlan extends FunctionRecords {
  /** The functions to spawn, in the order asked; empty when nothing changes. */
  readonly spawn: readonly string[];
}

/**
 * Plans the activation of `names` (each already known to the catalog): a function that is
 * live already is left alone, asked twice it is spawned once, and a retired one comes back
 * (its retired record is dropped).
 */
export function planActivation(context: FunctionRecords, names: readonly string[]): ActivationPlan {
  const spawn: string[] = [];
  let live = context.liveFunctions;
  const retired = { ...context.retiredFunctions };
  for (const name of names) {
    if (live.includes(name)) continue;
    spawn.push(name);
    live = [...live, name];
    delete retired[name];
  }
  return spawn.length === 0
    ? { spawn, liveFunctions: context.liveFunctions, retiredFunctions: context.retiredFunctions }
    : { spawn, liveFunctions: live, retiredFunctions: retired };
}

/** What deactivating some functions does: which actors to stop, and the session after. */
export interface DeactivationPlan extends FunctionRecords {
  /** The live functions to stop, in the order asked; empty when nothing changes. */
  readonly stop: readonly string[];
  /** The idle cycle without the stopped functions (they will never answer it). */
  readonly idle: IdleCycle | null;
  /** True when the stopped functions were the last the idle cycle waited for: settle it now. */
  readonly settle: boolean;
}

/**
 * Plans the deactivation of `names`: each live one is stopped and retired with its last
 * state (`lastStates`, by name; a function whose actor is gone is stopped without a
 * record); names that are not live are ignored.
 */
export function planDeactivation(
  context: FunctionRecords & Pick<SessionContext, 'idle'>,
  names: readonly string[],
  lastStates: Readonly<Record<string, FunctionSnapshotData>>,
  at: number,
): DeactivationPlan {
  const stop: string[] = [];
  let live = context.liveFunctions;
  const retired: Record<string, RetiredFunction> = { ...context.retiredFunctions };
  for (const name of names) {
    if (!live.includes(name)) continue;
    const last = ownValue(lastStates, name);
    if (last)
      retired[name] = {
        phase: functionPhaseOf(last.value),
        reason: 'deactivated',
        at,
        context: last.context,
      };
    stop.push(name);
    live = live.filter((other) => other !== name);
  }
  if (stop.length === 0) {
    return {
      stop,
      liveFunctions: context.liveFunctions,
      retiredFunctions: context.retiredFunctions,
      idle: context.idle,
      settle: false,
    };
  }
  const before = context.idle;
  const idle = before
    ? { ...before, awaiting: before.awaiting.filter((name) => live.includes(name)) }
    : null;
  return {
    stop,
    liveFunctions: live,
    retiredFunctions: retired,
    idle,
    settle:
      idle !== null && before !== null && idle.awaiting.length === 0 && before.awaiting.length > 0,
  };
}
