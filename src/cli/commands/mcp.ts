import {
  APPROVAL_TOKEN_ENV,
  APPROVAL_TOOL_NAMES,
  checkApprovalToken,
} from '../../ai/mcp-approval-tools.js';
import { loadMcpSdk, type McpSdkLoader, serveMcpOverStdio } from '../../ai/mcp-server.js';
import { checkRequiredApprovals } from '../../ai/mcp-tool-approval.js';
import { ROLEBOX_TOOL_NAMES, type RoleboxToolName } from '../../ai/tools.js';
import { describeValue, RoleboxError } from '../../errors.js';
import type { FunctionDefinition } from '../../function/definition.js';
import { loadFunctions } from '../../function/load.js';
import type { RoundInput } from '../../ports/dispatcher.js';
import { createRolebox, type Rolebox } from '../../rolebox/rolebox.js';
import { resolveInspect } from '../inspector-option.js';
import { loopRunIn } from '../loop-runs.js';
import { LoopWorkerDispatcher } from '../loop-worker-dispatcher.js';
import type { Output } from '../output.js';
import { openStoreFile } from '../store-file.js';

/** Options of `rolebox mcp`. */
export interface McpOptions {
  /** The SQLite file sessions are saved in; `false` (`--no-store`) keeps them in memory. */
  readonly store: string | false;
  readonly functions?: string;
  readonly activate?: readonly string[];
  readonly worker?: string;
  readonly tasks: string;
  readonly delay?: number;
  readonly roundTimeout?: number;
  readonly inspect?: string | boolean;
  /** Tools the host must approve call by call (`--require-approval`, repeatable). */
  readonly requireApproval?: readonly string[];
  /** Offers approve_request, reject_request and extend_request, with the token in {@link APPROVAL_TOKEN_ENV}. */
  readonly approvalTools?: boolean;
}

/** What `rolebox mcp` reads and writes besides its options; tests pass their own. */
export interface McpIo {
  readonly loadSdk?: McpSdkLoader;
  readonly stdin?: NodeJS.ReadableStream;
  readonly stdout?: NodeJS.WritableStream;
  /** Resolves when the command must stop (default: SIGINT or SIGTERM). */
  readonly interrupted?: Promise<void>;
  /** The environment the approval token is read from (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * `rolebox mcp`: serves rolebox's tools and session resources to an MCP client over stdio
 * until the client closes stdin (or SIGINT/SIGTERM). Only protocol frames go to stdout:
 * everything the command says goes to stderr. Returns the exit code.
 * Throws: `missing_dependency` without @modelcontextprotocol/sdk; `unknown_function` for an
 * `--activate` name with no definition; `invalid_argument` for a `--require-approval` tool
 * that is not offered, or `--approval-tools` without a token in `ROLEBOX_APPROVAL_TOKEN`.
 */
export async function runMcpCommand(
  options: McpOptions,
  output: Output,
  version: string,
  io: McpIo = {},
): Promise<number> {
  const sdk = await loadMcpSdk(io.loadSdk);
  // Whatever logs with console.log (a function's author, a library) must not corrupt stdout.
  if (io.stdout === undefined) routeConsoleToStderr();
  const functions: FunctionDefinition[] = options.functions
    ? await loadFunctions(options.functions)
    : [];
  const activate = options.activate ?? [];
  for (const name of activate) {
    if (!functions.some((definition) => definition.name === name))
      throw new RoleboxError(
        'unknown_function',
        `--activate ${describeValue(name)}: no function of that name${options.functions ? ` in ${options.functions}` : ' (give --functions <dir>)'}`,
        { name },
      );
  }
  // Without a worker no loop can run: the loop tools are not offered at all.
  const tools: readonly RoleboxToolName[] = options.worker
    ? ROLEBOX_TOOL_NAMES
    : ROLEBOX_TOOL_NAMES.filter((name) => name !== 'start_loop' && name !== 'stop_loop');
  // Fail closed, before anything is opened: a typo must not leave a tool unguarded.
  const requireApproval = checkRequiredApprovals(options.requireApproval ?? [], tools);
  const approvalToken = options.approvalTools
    ? checkApprovalToken((io.env ?? process.env)[APPROVAL_TOKEN_ENV])
    : undefined;
  const inspect = await resolveInspect(options.inspect, output);
  const store = options.store === false ? undefined : openStoreFile(options.store);
  // A stored loop another command started (`rolebox loop`), woken here, runs the worker it
  // was started with; the loops of this server's sessions run --worker.
  let dispatcher: LoopWorkerDispatcher | undefined;
  const worker = options.worker;
  if (worker) {
    dispatcher = new LoopWorkerDispatcher({
      stateDir: options.tasks,
      workerOf: (input) => workerFor(rb, input, worker),
    });
    dispatcher.check(worker);
  }
  const rb: Rolebox = createRolebox({
    functions,
    ...(store ? { store, saveDebounceMs: 0 } : {}),
    ...(dispatcher ? { dispatcher } : {}),
    limits: {
      ...(options.delay === undefined ? {} : { interRoundDelayMs: options.delay }),
      ...(options.roundTimeout === undefined ? {} : { roundTimeoutMs: options.roundTimeout }),
    },
    ...(inspect ? { inspect: { url: inspect.url } } : {}),
  });
  const signalled = onInterrupt();
  try {
    await rb.start();
    const served = await serveMcpOverStdio({
      rolebox: rb,
      activate,
      tools,
      version,
      sdk,
      log: (line) => output.err(line),
      requireApproval,
      ...(approvalToken === undefined ? {} : { approvalToken }),
      ...(store ? { store } : {}),
      ...(io.stdin ? { stdin: io.stdin } : {}),
      ...(io.stdout ? { stdout: io.stdout } : {}),
    });
    output.err(
      `rolebox mcp: serving tools ${tools.join(', ')}${approvalToken ? `, ${APPROVAL_TOOL_NAMES.join(', ')}` : ''} on stdio; sessions ${store ? `in ${options.store}` : 'in memory'}${activate.length > 0 ? `, activating ${activate.join(', ')}` : ''}${requireApproval.length > 0 ? `; the host approves each call of ${requireApproval.join(', ')}` : ''}`,
    );
    await Promise.race([served.closed, io.interrupted ?? signalled.interrupted]);
    await served.close();
    return 0;
  } finally {
    signalled.off();
    await rb.stop();
    await store?.close();
    await inspect?.server?.stop();
  }
}

/**
 * The worker of a loop: the one its session records for it (see loop-runs.ts), else
 * `fallback` (this server's loops record none). When the session cannot be read, its error
 * refuses the round with the real cause: better no round than one run by another loop's
 * worker.
 */
function workerFor(rb: Rolebox, input: RoundInput, fallback: string): string {
  const { slots } = rb.session(input.originSessionId).view();
  return loopRunIn(slots, input.loopId)?.worker ?? fallback;
}

/** Resolves `interrupted` on the first SIGINT or SIGTERM; `off()` stops listening. */
function onInterrupt(): { readonly interrupted: Promise<void>; off(): void } {
  let done = () => {};
  const interrupted = new Promise<void>((resolve) => {
    done = resolve;
  });
  process.once('SIGINT', done);
  process.once('SIGTERM', done);
  return {
    interrupted,
    off: () => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
    },
  };
}

function routeConsoleToStderr(): void {
  const toStderr = (...args: unknown[]) => console.error(...args);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
}
