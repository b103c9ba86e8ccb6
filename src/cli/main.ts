import { existsSync, readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_INSPECTOR_PORT } from '../../inspector/server.js';
import { APPROVAL_TOKEN_ENV } from '../ai/mcp-approval-tools.js';
import { importOptional } from '../base/optional-import.js';
import { isRoleboxError } from '../errors.js';
import { DEFAULT_ENDPOINT_PORT } from '../restate/defaults.js';
import { DEFAULT_LIMITS } from '../system/limits.js';
import { CHART_FORMATS, CHART_MACHINES, runChartCommand } from './commands/chart.js';
import { DEMO_ROUND_SECONDS, runDemoCommand } from './commands/demo.js';
import { runInspectCommand } from './commands/inspect.js';
import { runLoopCommand } from './commands/loop.js';
import { runMcpCommand } from './commands/mcp.js';
import { runReplayCommand } from './commands/replay.js';
import { runResumeCommand } from './commands/resume.js';
import { runSendCommand } from './commands/send.js';
import { runShowCommand } from './commands/show.js';
import { runStatusCommand } from './commands/status.js';
import {
  exitCodesHelp,
  FAILURE_EXIT_CODE,
  STORE_FAILED_EXIT_CODE,
  USAGE_EXIT_CODE,
} from './exit-codes.js';
import {
  DEFAULT_HOST,
  DEFAULT_RESTATE_BASE_DIR,
  delayOption,
  jsonOption,
  portOption,
  roundTimeoutOption,
  runOptions,
  storeOption,
  tasksOption,
  wholeNumber,
} from './options.js';
import { formatMs, type Output, processOutput, stopOnClosedStdout } from './output.js';
import { sendCommandsHelp } from './send-commands.js';

/** Exit code for a bad argument or bad input (a usage error). */
export { USAGE_EXIT_CODE };

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
    .addHelpText('after', `\n${exitCodesHelp()}`)
    .exitOverride();

  runOptions(
    program
      .command('loop')
      .description(
        'Run a loop: |loop:N| <task> rounds of a shell command, printing its notes and what each round produced. Ctrl-C stops the loop; twice leaves it for `rolebox resume`.',
      )
      .argument(
        '<text>',
        'the loop command, e.g. "|loop:3| summarise the logs"; - reads it from stdin',
      )
      .requiredOption(
        '--worker <command>',
        'shell command that runs one round: prompt on stdin, result on stdout',
      )
      .option('--session <id>', 'id of the session the loop runs in (default: a new id, s_…)')
      .addOption(jsonOption('print one JSON object per line (notes, rounds, the result)')),
  ).action(async (text: string, options) => {
    exit.code = await runLoopCommand(text, options, output);
  });

  runOptions(
    program
      .command('resume')
      .description(
        'Restore the stored sessions, reconcile their loops with the worker tasks, and run them to the end.',
      )
      .option(
        '--worker <command>',
        'worker command for a loop whose own is not recorded (started by an older rolebox); each other loop runs the one it was started with',
      )
      .addOption(jsonOption('print one JSON object per line (notes, rounds, the results)')),
    {
      delay: `the one the loop was started with, else ${formatMs(DEFAULT_LIMITS.interRoundDelayMs)}`,
      roundTimeout: `the one the loop was started with, else ${formatMs(DEFAULT_LIMITS.roundTimeoutMs)}`,
    },
  ).action(async (options) => {
    exit.code = await runResumeCommand(options, output);
  });

  addStoreCommands(program, output, exit);

  program
    .command('inspect')
    .description(
      'Start the offline inspector: apps stream to it, a browser shows their live statecharts.',
    )
    .addOption(portOption('port to listen on (0 for any free one)', DEFAULT_INSPECTOR_PORT))
    .option('--host <host>', 'address to listen on', DEFAULT_HOST)
    .option(
      '--app-origin <origin...>',
      'browser origin allowed to stream to it, e.g. http://localhost:5173 (default: none; Node apps need none)',
    )
    .option(
      '--store <file>',
      'also list the sessions stored in this SQLite file and show them in the page, read-only (default: none)',
    )
    .addOption(jsonOption('print JSON lines of events ({"type":"listening",…}, …)'))
    .action(async (options) => {
      exit.code = await runInspectCommand(options, output);
    });

  program
    .command('replay')
    .description(
      'Replay a recorded run (.run.json) against the current machines; exits 1 on a divergence.',
    )
    .argument('<file>', 'the recorded run')
    .addOption(jsonOption('print the report as JSON'))
    .option(
      '--inspect',
      'also play the run in an inspector page (step, play, the divergence on the chart) until Ctrl-C',
    )
    .addOption(
      new Option(
        '--port <port>',
        `port of the --inspect page (0 for any free one) (default: ${DEFAULT_INSPECTOR_PORT})`,
      ).argParser(wholeNumber(0)),
    )
    .option('--host <host>', `address the --inspect page listens on (default: ${DEFAULT_HOST})`)
    .action(async (file: string, options) => {
      exit.code = await runReplayCommand(file, options, output);
    });

  program
    .command('demo')
    .description(
      'A showcase system with the inspector on: a three-round loop, an approval waiting for `answer`, a session in review.',
    )
    .addOption(
      portOption(
        'port of the inspector (a free one when taken; 0 for any)',
        DEFAULT_INSPECTOR_PORT,
      ),
    )
    .option(
      '--inspect <url>',
      'stream to an inspector already running at url (default: start one here)',
    )
    .addOption(
      new Option('--round-seconds <s>', 'how long the built-in worker takes per round')
        .argParser(wholeNumber(0))
        .default(DEMO_ROUND_SECONDS),
    )
    .addOption(jsonOption('print JSON lines of events ({"type":"listening",…}, …)'))
    .action(async (options) => {
      exit.code = await runDemoCommand(options, output);
    });

  addMcpCommand(program, output, exit);
  addRestateCommands(program, output, exit);
  return withExitCodesInEveryHelp(program);
}

/**
 * Ends every command's --help with the exit codes, as the README says (not only the
 * program's): a user reads `rolebox loop --help`, not `rolebox --help`.
 */
function withExitCodesInEveryHelp(program: Command): Command {
  const subcommandsOf = (command: Command): Command[] =>
    command.commands.flatMap((sub) => [sub, ...subcommandsOf(sub)]);
  for (const command of subcommandsOf(program))
    command.addHelpText('after', `\n${exitCodesHelp()}`);
  return program;
}

/** Adds `rolebox mcp`: rolebox's tools and session resources over stdio. */
function addMcpCommand(program: Command, output: Output, exit: { code: number }): void {
  program
    .command('mcp')
    .description(
      "Serve rolebox's tools (signal, start_loop, stop_loop, session_view, send_event) and session resources to an MCP client over stdio.",
    )
    .option('--functions <dir>', 'folder of function definitions (markdown with frontmatter)')
    .option('--activate <name...>', 'functions activated in every session a tool call opens')
    .addOption(storeOption())
    .option('--no-store', 'keep the sessions in memory only')
    .option(
      '--worker <command>',
      'shell command that runs one loop round (prompt on stdin, result on stdout); without it no loop tools',
    )
    .addOption(tasksOption())
    .addOption(delayOption())
    .addOption(roundTimeoutOption())
    .option(
      '--inspect [url]',
      'stream to the inspector at url (ws://…), or start one here and print its address on stderr (default: off)',
    )
    .option(
      '--require-approval <tool>',
      'a tool the host must approve call by call (repeatable); an unknown or unoffered tool is an error',
      (tool: string, previous: string[] = []) => [...previous, tool],
    )
    .option(
      '--approval-tools',
      `offer the host's approve_request, reject_request and extend_request tools, each call carrying the token in $${APPROVAL_TOKEN_ENV}`,
    )
    .action(async (options) => {
      exit.code = await runMcpCommand(options, output, packageVersion());
    });
}

/** Adds the commands on the stored sessions: status, show, send, chart. */
function addStoreCommands(program: Command, output: Output, exit: { code: number }): void {
  program
    .command('status')
    .description(
      'List the stored sessions with their phases, functions and loops, without running anything.',
    )
    .addOption(storeOption())
    .addOption(jsonOption('print JSON (an array of sessions) instead of a table'))
    .action(async (options) => {
      exit.code = await runStatusCommand(options, output);
    });

  program
    .command('show')
    .description(
      'Show one stored session: its phase and functions, its loop, and every round with what the worker produced.',
    )
    .argument('<session>', 'the session id (see `rolebox status`)')
    .addOption(storeOption())
    .addOption(tasksOption('directory the worker tasks are kept in, read for their output'))
    .addOption(jsonOption('print JSON (the session, its loop, its rounds with their output)'))
    .action(async (sessionId: string, options) => {
      exit.code = await runShowCommand(sessionId, options, output);
    });

  program
    .command('send')
    .description(
      'Run one command or read of the command table on a stored session, print what it answered once it is saved, and exit.',
    )
    .argument('<session>', 'the session id (see `rolebox status`)')
    .argument('<command>', 'a command below, e.g. idle, message, view, artifacts.list')
    .argument(
      '[args...]',
      'its arguments, one per parameter, each JSON (\'{"type":"answer"}\') or, where it takes a string, plain text',
    )
    .addOption(storeOption())
    .option(
      '--functions <dir>',
      "folder of function definitions (markdown with frontmatter): the session's functions",
    )
    .option(
      '--worker <command>',
      'shell command that runs the rounds of a loop this command starts (recorded for `rolebox resume`)',
    )
    .addOption(tasksOption())
    .addOption(jsonOption('print one JSON object: {"session","command","result"}'))
    .addHelpText('after', `\n${sendCommandsHelp()}`)
    .action(async (sessionId: string, command: string, args: string[], options) => {
      exit.code = await runSendCommand(sessionId, command, args, options, output);
    });

  program
    .command('chart')
    .description(
      "Draw a machine's statechart, or a stored session's with its current state highlighted, as Mermaid text or SVG.",
    )
    .argument(
      '<machine|session>',
      `a machine (${CHART_MACHINES.join(', ')}) or a session id (see \`rolebox status\`)`,
    )
    .option('--format <format>', `what to write: ${CHART_FORMATS.join(' or ')}`, 'mermaid')
    .addOption(storeOption())
    .option('--out <file>', 'write the chart to this file (default: stdout)')
    .addOption(jsonOption('print JSON ({"machine","session","format","active","text" or "out"})'))
    .action(async (target: string, options) => {
      exit.code = await runChartCommand(target, options, output);
    });
}

/** Adds `restate serve` and `restate dev`, loading the Restate SDK only when one runs. */
function addRestateCommands(program: Command, output: Output, exit: { code: number }): void {
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
  const endpointOptions = (command: Command, functionsDefault = 'none') =>
    command
      .option('--host <host>', 'address the endpoint listens on', DEFAULT_HOST)
      .option(
        '--functions <dir>',
        `folder of function definitions, markdown with frontmatter (default: ${functionsDefault})`,
      )
      .option(
        '--worker <command>',
        'shell command that runs one loop round (prompt on stdin, result on stdout), served here',
      )
      .addOption(tasksOption('where the shell worker keeps its tasks'))
      .option('--workers-service <name>', 'a Restate service of yours that runs the rounds instead')
      .option('--event-sink <service>', "a Restate service that receives every step's host events")
      .addOption(delayOption())
      .addOption(roundTimeoutOption())
      .addOption(jsonOption('print JSON lines of events ({"type":"listening",…}, …)'));
  endpointOptions(
    restate
      .command('serve')
      .description(
        'Serve the rolebox endpoint (register it with your Restate server); SIGTERM stops it.',
      )
      .addOption(portOption('port to listen on (0 for any free one)', DEFAULT_ENDPOINT_PORT))
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
        DEFAULT_RESTATE_BASE_DIR,
      )
      .option(
        '--ingress-port <port>',
        'ingress port (default: the one used last time, else a free one)',
        wholeNumber(1),
      )
      .option(
        '--admin-port <port>',
        'admin port (default: the one used last time, else a free one)',
        wholeNumber(1),
      ),
    "the README's approval function",
  ).action(async (options) => {
    exit.code = await (await restateCommands()).runRestateDevCommand(options, output);
  });
}

/**
 * Runs the `rolebox` command line. Returns the exit code (the table is in exit-codes.ts): 0 on
 * success, 2 for a bad argument or bad input (the message says which; a `--store` that is
 * no store included), 3 when a save fails while work runs, 1 for `missing_dependency`,
 * otherwise what the command reports.
 */
export async function main(
  argv: readonly string[],
  output: Output = processOutput,
): Promise<number> {
  const exit = { code: 0 };
  if (output === processOutput) stopOnClosedStdout();
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
      // A save that failed while work ran is not the user's typo: it has its own exit code
      // (a --store that cannot be opened is refused as invalid_argument, exit 2).
      if (error.code === 'store_failed') return STORE_FAILED_EXIT_CODE;
      // Nor is a package that is not installed.
      return error.code === 'missing_dependency' ? 1 : USAGE_EXIT_CODE;
    }
    output.err(
      `rolebox: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return FAILURE_EXIT_CODE;
  }
}
