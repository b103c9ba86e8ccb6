/**
 * The commands of `rolebox send`, derived from the command table (src/rolebox/command-table.ts):
 * one per row, named as the method (`idle`, `startLoop`) or, for the artifacts handle's
 * rows, `artifacts.<method>`. Their list, their help and the reading of their arguments
 * come from the rows, so a new row is a new `send` command with nothing written here.
 */
import type { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import {
  ARTIFACT_COMMAND_ROWS,
  type CommandRow,
  type CommandRows,
  SESSION_COMMAND_ROWS,
} from '../rolebox/command-table.js';

/** One command `rolebox send` reaches: the handle it calls, its method, and its row. */
export interface SendCommand {
  /** The name a user types. */
  readonly name: string;
  /** Which handle the method is on: the session's, or its `artifacts`. */
  readonly surface: 'session' | 'artifacts';
  readonly method: string;
  readonly row: CommandRow;
}

/** The handles' tables, with the prefix their commands are typed with. */
const SURFACES = [
  { surface: 'session', prefix: '', rows: SESSION_COMMAND_ROWS },
  { surface: 'artifacts', prefix: 'artifacts.', rows: ARTIFACT_COMMAND_ROWS },
] as const satisfies readonly {
  surface: SendCommand['surface'];
  prefix: string;
  rows: CommandRows;
}[];

/** Every command of `rolebox send`, by the name a user types, in the table's order. */
export const SEND_COMMANDS: ReadonlyMap<string, SendCommand> = new Map(
  SURFACES.flatMap(({ surface, prefix, rows }) =>
    Object.entries(rows as CommandRows).map(([method, row]): [string, SendCommand] => [
      `${prefix}${method}`,
      { name: `${prefix}${method}`, surface, method, row },
    ]),
  ),
);

/**
 * The command a user typed.
 * Throws: `invalid_argument` naming it and listing the commands there are.
 */
export function sendCommand(name: string): SendCommand {
  const command = SEND_COMMANDS.get(name);
  if (command) return command;
  throw new RoleboxError(
    'invalid_argument',
    `unknown command ${describeValue(name)}; the commands are: ${[...SEND_COMMANDS.keys()].join(', ')}`,
    { command: name },
  );
}

/** The schemas of a row's arguments, one per parameter. */
function argumentSchemas(row: CommandRow): readonly z.ZodType[] {
  return (row.arguments as unknown as z.ZodTuple).def.items as readonly z.ZodType[];
}

/**
 * Whether a tuple may end before this item: zod's own mark of an optional item (one that
 * merely accepts undefined, like `z.unknown()`, must still be given).
 */
function isOptional(schema: z.ZodType | undefined): boolean {
  return schema?._zod.optin === 'optional';
}

/** `startLoop <text> [options]`: a command with its parameters, optional ones in brackets. */
export function sendUsage(command: SendCommand): string {
  const schemas = argumentSchemas(command.row);
  const parameters = command.row.parameters.map((parameter, index) =>
    isOptional(schemas[index]) ? `[${parameter}]` : `<${parameter}>`,
  );
  return [command.name, ...parameters].join(' ');
}

/** The `Commands:` section of `rolebox send --help`: each row's usage and whether it reads. */
export function sendCommandsHelp(): string {
  const usages = [...SEND_COMMANDS.values()].map((command) => ({
    usage: sendUsage(command),
    kind: command.row.kind === 'read' ? 'read: changes nothing' : 'command',
  }));
  const width = Math.max(...usages.map(({ usage }) => usage.length));
  return [
    'Commands (one per row of the command table):',
    ...usages.map(({ usage, kind }) => `  ${usage.padEnd(width)}  ${kind}`),
  ].join('\n');
}

/**
 * One argument as typed: its JSON value, or the text itself where the parameter takes a
 * string and the JSON value would not do (`message hello`, `message 42`: both strings).
 */
function argumentValue(text: string, schema: z.ZodType | undefined): unknown {
  let parsed: { value: unknown } | undefined;
  try {
    parsed = { value: JSON.parse(text) };
  } catch {
    parsed = undefined;
  }
  if (parsed && (!schema || schema.safeParse(parsed.value).success)) return parsed.value;
  if (!parsed || schema?.safeParse(text).success) return text;
  return parsed.value;
}

/**
 * Reads the arguments typed after a command, one per parameter of its row, and checks
 * them with the row's schema (the method checks them again, with its own codes).
 * Returns: the arguments to call the method with.
 * Throws: `invalid_argument` naming the command, the parameter and the value, for too
 * many arguments, a missing one, or one the schema refuses.
 */
export function readSendArguments(command: SendCommand, texts: readonly string[]): unknown[] {
  const { row } = command;
  const schemas = argumentSchemas(row);
  const usage = sendUsage(command);
  if (texts.length > schemas.length)
    throw new RoleboxError(
      'invalid_argument',
      `send ${command.name} takes ${schemas.length} argument(s) (${usage}), got ${texts.length}: ${describeValue(texts[schemas.length])} is one too many`,
      { command: command.name },
    );
  const values = texts.map((text, index) => argumentValue(text, schemas[index]));
  const result = row.arguments.safeParse(values);
  if (result.success) return values;
  const issue = result.error.issues[0];
  const [index, ...path] = issue?.path ?? [];
  // An issue of the whole tuple (too few items) is about the first argument not given.
  const position = typeof index === 'number' ? index : values.length;
  const parameter = row.parameters[position] ?? `argument ${position + 1}`;
  const value = values[position];
  const where = [parameter, ...path.map(String)].join('.');
  throw new RoleboxError(
    'invalid_argument',
    value === undefined && path.length === 0
      ? `send ${command.name}: ${parameter} is missing (${usage})`
      : `send ${command.name}: ${where} ${describeValue(value)} is refused: ${issue?.message ?? 'invalid'}`,
    { command: command.name, argument: parameter },
  );
}
