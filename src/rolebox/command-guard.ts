import type { z } from 'zod';
import { detachArgument } from '../base/detach-argument.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { CommandRow } from './command-table.js';

/** The names of the methods of `T` (what a handle's command table lists). */
export type CommandNames<T> = {
  [K in keyof T]: T[K] extends (...args: never[]) => unknown ? K : never;
}[keyof T] &
  string;

/**
 * A handle's command table (src/rolebox/command-table.ts): a row for every public method,
 * whose parameter names the guard's errors name. Typed so that a method missing from it
 * fails to compile, and checked when the guard is installed so that a method without a row,
 * or a row without a method, fails at load.
 */
export type CommandTable<T> = {
  readonly [K in CommandNames<T>]: CommandRow & {
    /** What the schema parses, the method takes: a row that drifts from its method fails to compile. */
    readonly arguments: z.ZodType<ParametersOf<T[K]>>;
  };
};

/** The parameters of a method (none for anything else). */
type ParametersOf<F> = F extends (...args: infer A) => unknown ? A : [];

/**
 * Installs the one guard every command of a handle goes through (issue 22): each public
 * method on `prototype` is replaced by a wrapper that
 *
 * 1. reads every argument once ({@link detachArgument}); one that throws when read (a
 *    Proxy, a getter, a revoked proxy, a `toJSON`) is `invalid_argument` naming the
 *    method and the parameter, and the method gets the copies, never the caller's objects;
 * 2. runs `requireTarget` on the handle: it throws (`unknown_session`,
 *    `session_owned_elsewhere`, `stopped`, …) unless the session the handle names is live
 *    in this rolebox, so no command of a closed, unknown or foreign session reaches an actor;
 * 3. runs the method.
 *
 * Both happen before the method does anything, so a refused call changes nothing. A method
 * added to the class later is guarded as well (the prototype is walked, not listed).
 *
 * Expects: `surface` names the handle in messages (`session`, `session.artifacts`).
 * Throws: a plain `Error` at load when a method has no row in `table`, or a row no method.
 */
export function guardCommands<T extends object>(
  prototype: T,
  surface: string,
  table: CommandTable<T>,
  requireTarget: (target: T) => void,
): void {
  const rows: Readonly<Record<string, CommandRow>> = table;
  for (const name of Object.keys(rows))
    if (typeof Object.getOwnPropertyDescriptor(prototype, name)?.value !== 'function')
      throw new Error(
        `rolebox internal error: the command table's row ${surface}.${name} has no method`,
      );
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
    if (name === 'constructor' || typeof descriptor?.value !== 'function') continue;
    const names = Object.hasOwn(rows, name) ? rows[name]?.parameters : undefined;
    if (names === undefined)
      throw new Error(`rolebox internal error: ${surface}.${name} has no row in its command table`);
    const method = descriptor.value as (this: T, ...args: unknown[]) => unknown;
    const command = `${surface}.${name}`;
    const guarded = {
      [name](this: T, ...args: unknown[]): unknown {
        const read = args.map((arg, index) =>
          readArgument(arg, command, names[index] ?? `argument ${index + 1}`),
        );
        requireTarget(this);
        return method.apply(this, read);
      },
    }[name] as (...args: unknown[]) => unknown;
    Object.defineProperty(prototype, name, { ...descriptor, value: guarded });
  }
}

/** One argument read through {@link detachArgument}. Throws: `invalid_argument` naming it. */
function readArgument(value: unknown, command: string, parameter: string): unknown {
  try {
    return detachArgument(value);
  } catch (error) {
    throw new RoleboxError(
      'invalid_argument',
      `${command}: ${parameter} cannot be read (${whatWasThrown(error)}); pass plain data (objects, arrays, strings, numbers), not a Proxy or an object whose getters throw`,
      { command, argument: parameter },
    );
  }
}

/** What reading an argument threw, said without reading it in a way that may throw again. */
function whatWasThrown(error: unknown): string {
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
  } catch {
    // A thrown Proxy: instanceof runs its getPrototypeOf trap.
  }
  return `threw ${describeValue(error)}`;
}
