// `--help` as a user reads it: every default with its value, the values the code uses, and
// the exit codes. The help texts are built in this process (commander's own rendering);
// one real `rolebox --help` checks the launcher prints the same.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_INSPECTOR_PORT } from '../inspector/server.js';
import { DEFAULT_TASKS_DIR } from '../src/adapters/command-dispatcher.js';
import { EXIT_CODES, STORE_FAILED_EXIT_CODE } from '../src/cli/exit-codes.js';
import { buildProgram } from '../src/cli/main.js';
import { DEFAULT_STORE } from '../src/cli/options.js';
import { formatMs } from '../src/cli/output.js';
import { DEFAULT_ENDPOINT_PORT } from '../src/restate/defaults.js';
import { DEFAULT_LIMITS } from '../src/system/limits.js';
import { runCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const program = buildProgram({ out: () => {}, err: () => {} }, { code: 0 });

/** The program and every command under it, depth first. */
function commandsOf(command: Command): Command[] {
  return [command, ...command.commands.flatMap(commandsOf)];
}

/** `rolebox restate serve`: the name a user types. */
function nameOf(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/** A command's help with its wrapped lines joined: one space for any run of white space. */
function helpOf(command: Command): string {
  return command.helpInformation().replace(/\s+/g, ' ');
}

/** The help text of the command a user types, e.g. `loop` or `restate dev`. */
function help(name: string): string {
  const command = commandsOf(program).find((each) => nameOf(each) === `rolebox ${name}`);
  if (!command) throw new Error(`no command ${name}`);
  return helpOf(command);
}

describe('rolebox --help of every command', () => {
  const commands = commandsOf(program);

  it('covers the commands a user runs', () => {
    expect(commands.map(nameOf)).toEqual(
      expect.arrayContaining([
        'rolebox loop',
        'rolebox resume',
        'rolebox status',
        'rolebox show',
        'rolebox send',
        'rolebox chart',
        'rolebox inspect',
        'rolebox replay',
        'rolebox demo',
        'rolebox restate serve',
        'rolebox restate dev',
      ]),
    );
  });

  it('no option says "default" without its value', () => {
    for (const command of commands) {
      const text = helpOf(command);
      const values = [...text.matchAll(/\(default: ([^)]*)\)/g)].map((match) => match[1]?.trim());
      for (const value of values)
        expect(value, `${nameOf(command)}: (default: ${value})`).not.toMatch(
          /^(|default|undefined|null|"")$/,
        );
      // Every mention of a default is one of those "(default: value)".
      expect(text.replace(/\(default: [^)]*\)/g, ''), nameOf(command)).not.toMatch(/default/i);
    }
  });

  it('every option with a default in the code prints it', () => {
    for (const command of commands)
      for (const option of command.options) {
        if (option.defaultValue === undefined) continue;
        expect(helpOf(command), `${nameOf(command)} ${option.flags}`).toContain(
          `(default: ${JSON.stringify(option.defaultValue)})`,
        );
      }
  });

  it('prints the values the code uses: limits, store, tasks, ports', () => {
    const timeout = `(default: ${formatMs(DEFAULT_LIMITS.roundTimeoutMs)})`;
    const delay = `(default: ${formatMs(DEFAULT_LIMITS.interRoundDelayMs)})`;
    // As a person reads them, not milliseconds to count.
    expect(timeout).toBe('(default: 15 min)');
    expect(delay).toBe('(default: 2 s)');
    for (const name of ['loop', 'restate serve', 'restate dev']) {
      expect(help(name), name).toContain(`--round-timeout <ms> a round running longer`);
      expect(help(name), name).toContain(timeout);
      expect(help(name), name).toContain(delay);
      expect(help(name), name).toContain(`(default: "${DEFAULT_TASKS_DIR}")`);
    }
    expect(help('resume')).toContain('(default: the one the loop was started with, else 15 min)');
    expect(help('resume')).toContain('(default: the one the loop was started with, else 2 s)');
    for (const name of ['loop', 'resume', 'status', 'show', 'chart'])
      expect(help(name), name).toContain(`(default: "${DEFAULT_STORE}")`);
    expect(help('inspect')).toContain(`(default: ${DEFAULT_INSPECTOR_PORT})`);
    expect(help('demo')).toContain(`(default: ${DEFAULT_INSPECTOR_PORT})`);
    expect(help('loop')).toContain(`port ${DEFAULT_INSPECTOR_PORT}, a free one when taken`);
    expect(help('restate serve')).toContain(`(default: ${DEFAULT_ENDPOINT_PORT})`);
  });

  it('offers --json on every command that does something', () => {
    for (const name of [
      'loop',
      'resume',
      'status',
      'show',
      'chart',
      'inspect',
      'replay',
      'demo',
      'restate serve',
      'restate dev',
    ])
      expect(help(name), name).toContain('--json');
  });
});

describe('rolebox --help lists the exit codes', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-cli-help-'));
  });
  afterAll(async () => {
    await killTracked();
    await rm(dir, { recursive: true, force: true });
  });

  it('0, 1, 2, 130, 143 and the store-failure code, each with its meaning', async () => {
    const result = await runCli(['--help'], { cwd: dir });
    expect(result.code).toBe(0);
    const section = result.stdout.slice(result.stdout.indexOf('Exit codes:'));
    const listed = [...section.matchAll(/^ {2}(\d+) +\S.*$/gm)].map((match) => Number(match[1]));
    expect(listed).toEqual([0, 1, 2, STORE_FAILED_EXIT_CODE, 130, 143]);
    expect(listed).toEqual(EXIT_CODES.map(([code]) => code));
    expect(section).toMatch(/^ {2}3 +the store could not be written \(store_failed\)/m);
    expect(section).toMatch(/^ {2}143 +SIGTERM/m);
  });

  it("every command's --help ends with the same exit codes", () => {
    const printed: string[] = [];
    const capturing = buildProgram(
      { out: (text) => printed.push(text), err: () => {} },
      { code: 0 },
    );
    for (const command of commandsOf(capturing)) {
      printed.length = 0;
      command.outputHelp();
      const text = printed.join('\n');
      const section = text.slice(text.indexOf('Exit codes:'));
      const listed = [...section.matchAll(/^ {2}(\d+) +\S.*$/gm)].map((match) => Number(match[1]));
      expect(text, nameOf(command)).toContain('Exit codes:');
      expect(listed, nameOf(command)).toEqual(EXIT_CODES.map(([code]) => code));
    }
  });

  it('the README lists the same exit codes in its table', async () => {
    const readme = await readFile(join(import.meta.dirname, '..', 'README.md'), 'utf8');
    const start = readme.indexOf('| exit code | meaning');
    const table = readme.slice(start, readme.indexOf('\n\n', start));
    const rows = [...table.matchAll(/^ *\| (\d+) +\| \S/gm)].map((match) => Number(match[1]));
    expect(rows).toEqual(EXIT_CODES.map(([code]) => code));
  });
});
