/**
 * The exit codes of the `rolebox` command, in one place: the commands return them, and
 * `rolebox --help` and the README list them from {@link EXIT_CODES}.
 */

/** Everything asked for was done (a server stopped by Ctrl-C or SIGTERM stopped cleanly). */
export const OK_EXIT_CODE = 0;

/**
 * The work failed: a loop ended in `error` or `interrupted`, a replay diverged, a record was
 * refused, or a package the command needs is not installed (`missing_dependency`).
 */
export const FAILURE_EXIT_CODE = 1;

/**
 * Exit code for a bad argument or bad input (a usage error): a port in use, and a `--store`
 * that is missing or cannot be opened as a store, in every command.
 */
export const USAGE_EXIT_CODE = 2;

/** Exit code when a save to an opened store fails while work runs: the work stopped there (SPEC §6). */
export const STORE_FAILED_EXIT_CODE = 3;

/** Ended by Ctrl-C (SIGINT, 128 + 2): a loop cancelled with stop-loop, or left at a second Ctrl-C. */
export const SIGINT_EXIT_CODE = 130;

/** Ended by SIGTERM (128 + 15): a loop left at once with everything saved. */
export const SIGTERM_EXIT_CODE = 143;

/** Every exit code with what it means, in order. */
export const EXIT_CODES: readonly (readonly [code: number, meaning: string])[] = [
  [OK_EXIT_CODE, 'success; a server stopped by Ctrl-C or SIGTERM'],
  [
    FAILURE_EXIT_CODE,
    'failure: a loop ended in error or interrupted, a replay diverged, …; missing_dependency',
  ],
  [
    USAGE_EXIT_CODE,
    'usage: a bad argument or bad input (the message says which), a port in use, a --store that is no store',
  ],
  [
    STORE_FAILED_EXIT_CODE,
    'the store could not be written (store_failed) while work ran; resume goes on later',
  ],
  [
    SIGINT_EXIT_CODE,
    'Ctrl-C (SIGINT): the loop was cancelled (stop-loop), or left at a second one',
  ],
  [SIGTERM_EXIT_CODE, 'SIGTERM, or stdout closed (`| head`): the loop was left, saved, for resume'],
];

/** The `Exit codes:` section of `rolebox --help`. */
export function exitCodesHelp(): string {
  const width = Math.max(...EXIT_CODES.map(([code]) => String(code).length));
  return [
    'Exit codes:',
    ...EXIT_CODES.map(([code, meaning]) => `  ${String(code).padEnd(width)}  ${meaning}`),
  ].join('\n');
}
