import { existsSync, readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { importOptional } from '../base/optional-import.js';
import { isRoleboxError } from '../errors.js';
import { runDemoCommand } from './commands/demo.js';
import { runInspectCommand } from './commands/inspect.js';
import { runLoopCommand, STORE_FAILED_EXIT_CODE } from './commands/loop.js';
import { runMcpCommand } from './commands/mcp.js';
import { runReplayCommand } from './commands/replay.js';
import { runResumeCommand } from './commands/resume.js';
import { runStatusCommand } from './commands/status.js';
import { type Output, processOutput } from './output.js';

/** Exit code for a bad argument or bad input (a usage error). */
export const USAGE_EXIT_CODE = 2;

const DEFAULT_STORE = '.rolebox/state.db';
const DEFAULT_TASKS = '.rolebox/tasks';

/** Parses a whole number of at least `min` for an option, or explains what is wrong. */
function wholeNumber(min: number) {
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

/** The version in rolebox's package.json (found from here, in the sources or in dist/). */
function packageVersion(): string {
  for (let dir = new URL('.', import.meta.url); dir.pathname !== '/'; dir = new URL('..', dir)) {
    const file = new URL('package.json', dir);
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'rolebox' && pkg.version) return pkg.version;
    }
  }
  return 'unknown';
}

function runOptions(command: Command): Command {
  return command
    .option('--store <file>', 'SQLite file the sessions are saved in', DEFAULT_STORE)
    .option(
      '--tasks <dir>',
      'directory the worker tasks are kept in (they outlive the process)',
      DEFAULT_TASKS,
    )
    .option('--delay <ms>', 'pause between rounds', wholeNumber(0))
    .option('--round-timeout <ms>', 'a round running longer than this is an error', wholeNumber(1))
    .option(
      '--inspect [url]',
      'stream to the inspector at url (ws://…), or start one here and print its address',
    );
}

/**
 * Builds the `rolebox` program. Each action stores its exit code in `exit.code`.
 * Expects: `output` to write to; the process streams in the real command.
 */
export function buildProgram(output: Output, exit: { code: number }): Command {
  const program = new Command('rolebox')
    .description('Run, watch, resume and replay rolebox loops and sessions.')
    .version(packageVersion())
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (text) => output.out(text.trimEnd()),
      writeErr: (text) => output.err(text.trimEnd()),
      // One prefix for every complaint, commander's and ours.
      outputError: (text, write) => write(text.replace(/^error: /, 'rolebox: ')),
    })
    .exitOverride();

  runOptions(
    program
      .command('loop')
      .description(
        'Run a loop: |loop:N| <task> rounds of a shell command, printing its notes. Ctrl-C stops the loop; twice leaves it for `rolebox resume`.',
      )
      .argument('<text>', 'the loop command, e.g. "|loop:3| summarise the logs"')
      .requiredOption(
        '--worker <command>',
        'shell command that runs one round: prompt on stdin, result on stdout',
      )
      .option('--session <id>', 'id of the session the loop runs in'),
  ).action(async (text: string, options) => {
    exit.code = await runLoopCommand(text, options, output);
  });

  runOptions(
    program
      .command('resume')
      .description(
        'Restore the stored sessions, reconcile their loops with the worker tasks, and run them to the end.',
      )
      .option('--worker <command>', 'worker command (default: the one the loop was started with)'),
  ).action(async (options) => {
    exit.code = await runResumeCommand(options, output);
  });

  program
    .command('status')
    .description(
      'List the stored sessions with their phases, functions and loops, without running anything.',
    )
    .option('--store <file>', 'SQLite file the sessions are saved in', DEFAULT_STORE)
    .option('--json', 'print JSON for machines instead of a table')
    .action(async (options) => {
      exit.code = await runStatusCommand(options, output);
    });

  program
    .command('inspect')
    .description(
      'Start the offline inspector: apps stream to it, a browser shows their live statecharts.',
    )
    .option('--port <port>', 'port to listen on (0 for any free one)', wholeNumber(0), 7070)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--app-origin <origin...>',
      'browser origin allowed to stream to it (e.g. http://localhost:5173); Node apps need none',
    )
    .action(async (options) => {
      exit.code = await runInspectCommand(options, output);
    });

  program
    .command('replay')
    .description(
      'Replay a recorded run (.run.json) against the current machines; exits 1 on a divergence.',
    )
    .argument('<file>', 'the recorded run')
    .action(async (file: string) => {
      exit.code = await runReplayCommand(file, output);
    });

  program
    .command('demo')
    .description(
      'A showcase system with the inspector on: a three-round loop, an approval waiting for `answer`, a session in review.',
    )
    .option(
      '--port <port>',
      'port of the inspector (a free one when taken; 0 for any)',
      wholeNumber(0),
      7070,
    )
    .option(
      '--inspect <url>',
      'stream to an inspector already running at url instead of starting one',
    )
    .addOption(
      new Option('--round-seconds <s>', 'how long the built-in worker takes per round')
        .argParser(wholeNumber(0))
        .default(3),
    )
    .action(async (options) => {
      exit.code = await runDemoCommand(options, output);
    });

  program
    .command('mcp')
    .description(
      "Serve rolebox's tools (signal, start_loop, stop_loop, session_view, send_event) and session resources to an MCP client over stdio.",
    )
    .option('--functions <dir>', 'folder of function definitions (markdown with frontmatter)')
    .option('--activate <name...>', 'functions activated in every session a tool call opens')
    .option('--store <file>', 'SQLite file the sessions are saved in', DEFAULT_STORE)
    .option('--no-store', 'keep the sessions in memory only')
    .option(
      '--worker <command>',
      'shell command that runs one loop round (prompt on stdin, result on stdout); without it no loop tools',
    )
    .option('--tasks <dir>', 'directory the worker tasks are kept in', DEFAULT_TASKS)
    .option('--delay <ms>', 'pause between rounds', wholeNumber(0))
    .option('--round-timeout <ms>', 'a round running longer than this is an error', wholeNumber(1))
    .option(
      '--inspect [url]',
      'stream to the inspector at url (ws://…), or start one here and print its address on stderr',
    )
    .action(async (options) => {
      exit.code = await runMcpCommand(options, output, packageVersion());
    });

  // Loaded when used: @restatedev/restate-sdk is an optional peer dependency.
  const restateCommands = () =>
    importOptional(
      () => import('./commands/restate.js'),
      '@restatedev/restate-sdk',
      'npm install @restatedev/restate-sdk@~1.12.0 @restatedev/restate-server@~1.7.12',
      'rolebox restate',
    );
  const restate = program
    .command('restate')
    .description(
      'Serve rolebox sessions as Restate virtual objects (see README, "Running on Restate").',
    );
  const endpointOptions = (command: Command) =>
    command
      .option('--host <host>', 'address the endpoint listens on', '127.0.0.1')
      .option('--functions <dir>', 'folder of function definitions (markdown with frontmatter)')
      .option(
        '--worker <command>',
        'shell command that runs one loop round (prompt on stdin, result on stdout), served here',
      )
      .option('--tasks <dir>', 'where the shell worker keeps its tasks', DEFAULT_TASKS)
      .option('--workers-service <name>', 'a Restate service of yours that runs the rounds instead')
      .option('--event-sink <service>', "a Restate service that receives every step's host events")
      .option('--delay <ms>', 'pause between rounds', wholeNumber(0))
      .option(
        '--round-timeout <ms>',
        'a round running longer than this is an error',
        wholeNumber(1),
      );
  endpointOptions(
    restate
      .command('serve')
      .description(
        'Serve the rolebox endpoint (register it with your Restate server); SIGTERM stops it.',
      )
      .option('--port <port>', 'port to listen on (0 for any free one)', wholeNumber(0), 9080)
      .option(
        '--processes <n>',
        'endpoint processes sharing the port (a dead one is replaced)',
        wholeNumber(1),
        1,
      )
      .option('--register <admin-url>', 'register the endpoint with this Restate admin API'),
  ).action(async (options) => {
    exit.code = await (await restateCommands()).runRestateServeCommand(options, output);
  });
  endpointOptions(
    restate
      .command('dev')
      .description(
        'Start a local restate-server from node_modules, serve and register the endpoint, print the ingress URL.',
      )
      .option(
        '--port <port>',
        'port of the endpoint (default: the one used last time, else a free one)',
        wholeNumber(1),
      )
      .option(
        '--base-dir <dir>',
        'where the server keeps its state (and the ports it used)',
        '.rolebox/restate',
      )
      .option('--ingress-port <port>', 'ingress port (default: as --port)', wholeNumber(1))
      .option('--admin-port <port>', 'admin port (default: as --port)', wholeNumber(1)),
  ).action(async (options) => {
    exit.code = await (await restateCommands()).runRestateDevCommand(options, output);
  });

  return program;
}

/**
 * Runs the `rolebox` command line. Returns the exit code: 0 on success, 2 for a bad
 * argument or bad input (the message says which), 3 when the store cannot be written,
 * otherwise what the command reports.
 */
export async function main(
  argv: readonly string[],
  output: Output = processOutput,
): Promise<number> {
  const exit = { code: 0 };
  try {
    await buildProgram(output, exit).parseAsync([...argv], { from: 'user' });
    return exit.code;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are "errors" to commander; they were printed and are fine.
      return error.exitCode === 0 ? 0 : USAGE_EXIT_CODE;
    }
    if (isRoleboxError(error)) {
      output.err(`rolebox: ${error.message} [${error.code}]`);
      // A store that cannot be written is not the user's typo: it has its own exit code.
      if (error.code === 'store_failed') return STORE_FAILED_EXIT_CODE;
      // Nor is a package that is not installed.
      return error.code === 'missing_dependency' ? 1 : USAGE_EXIT_CODE;
    }
    output.err(
      `rolebox: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return 1;
  }
}
