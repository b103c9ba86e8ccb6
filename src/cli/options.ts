import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_INSPECTOR_PORT } from '../../inspector/server.js';
import { DEFAULT_TASKS_DIR } from '../adapters/command-dispatcher.js';
import { DEFAULT_LIMITS } from '../system/limits.js';
import { formatMs } from './output.js';

/**
 * The options the `rolebox` commands share, each built in one place with its default
 * printed in `--help` from the constant the code uses.
 */

/** Where the CLI keeps its sessions unless `--store` says otherwise. */
export const DEFAULT_STORE = '.rolebox/state.db';

/** Where `rolebox restate dev` keeps the local server's state unless `--base-dir` says otherwise. */
export const DEFAULT_RESTATE_BASE_DIR = '.rolebox/restate';

/** The address the servers of the CLI listen on unless `--host` says otherwise: this machine only. */
export const DEFAULT_HOST = '127.0.0.1';

/** What `--inspect` without a URL starts: an inspector on this port, or a free one when taken. */
export const INSPECT_OPTION_PORT = DEFAULT_INSPECTOR_PORT;

/** Parses a whole number of at least `min` for an option, or explains what is wrong. */
export function wholeNumber(min: number): (text: string) => number {
  return (text: string): number => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isInteger(value) || value < min) {
      throw new InvalidArgumentError(
        `expected a whole number ≥ ${min}, got ${JSON.stringify(text)}.`,
      );
    }
    return value;
  };
}

/** `--store <file>`: the SQLite file of the sessions. */
export function storeOption(): Option {
  return new Option('--store <file>', 'SQLite file the sessions are saved in').default(
    DEFAULT_STORE,
  );
}

/** `--tasks <dir>`: where the command dispatcher keeps its worker tasks. */
export function tasksOption(
  description = 'directory the worker tasks are kept in (they outlive the process)',
): Option {
  return new Option('--tasks <dir>', description).default(DEFAULT_TASKS_DIR);
}

/**
 * `--delay <ms>`. No commander default: a command that was not given it lets the loop
 * (or the recorded run) decide, so `defaultText` says what that is.
 */
export function delayOption(defaultText = formatMs(DEFAULT_LIMITS.interRoundDelayMs)): Option {
  return new Option(
    '--delay <ms>',
    `pause between rounds, in milliseconds (default: ${defaultText})`,
  ).argParser(wholeNumber(0));
}

/** `--round-timeout <ms>`, like {@link delayOption}. */
export function roundTimeoutOption(defaultText = formatMs(DEFAULT_LIMITS.roundTimeoutMs)): Option {
  return new Option(
    '--round-timeout <ms>',
    `a round running longer than this many milliseconds fails the loop (default: ${defaultText})`,
  ).argParser(wholeNumber(1));
}

/** `--inspect [url]` of the commands that run loops. */
export function inspectOption(): Option {
  return new Option(
    '--inspect [url]',
    `stream to the inspector at url (ws://…), or without url start one here (port ${INSPECT_OPTION_PORT}, a free one when taken) and print its address (default: off)`,
  );
}

/** `--json`: output for programs (what it prints is in the README, "The rolebox command"). */
export function jsonOption(what: string): Option {
  return new Option('--json', what);
}

/** `--port <port>` with its default printed. */
export function portOption(description: string, defaultPort: number, min = 0): Option {
  return new Option('--port <port>', description).argParser(wholeNumber(min)).default(defaultPort);
}

/** Adds the options of the commands that run loops (`loop`, `resume`). */
export function runOptions(
  command: Command,
  defaults: { delay?: string; roundTimeout?: string } = {},
): Command {
  return command
    .addOption(storeOption())
    .addOption(tasksOption())
    .addOption(delayOption(defaults.delay))
    .addOption(roundTimeoutOption(defaults.roundTimeout))
    .addOption(inspectOption());
}
