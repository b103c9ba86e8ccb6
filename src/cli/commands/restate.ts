import cluster from 'node:cluster';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { listenError } from '../../base/listen-error.js';
import { isRoleboxError, RoleboxError } from '../../errors.js';
import type { FunctionDefinition } from '../../function/definition.js';
import { loadFunctions } from '../../function/load.js';
import {
  freePort,
  type ListeningEndpoint,
  type LocalRestateServer,
  type RestateTarget,
  registerDeployment,
  SHELL_WORKER_NAME,
  serveRoleboxOnRestate,
  startLocalRestateServer,
} from '../../restate/index.js';
import { type ShellWorker, shellWorker } from '../../restate/shell-worker.js';
import { FAILURE_EXIT_CODE, OK_EXIT_CODE, USAGE_EXIT_CODE } from '../exit-codes.js';
import { type Output, untilInterrupted } from '../output.js';
import { RESTATE_DEV_FUNCTIONS } from '../restate-dev-functions.js';

/** Options of `rolebox restate serve`. */
export interface RestateServeOptions {
  readonly port: number;
  readonly host: string;
  readonly functions?: string;
  readonly worker?: string;
  readonly tasks: string;
  readonly workersService?: string;
  readonly eventSink?: string;
  readonly delay?: number;
  readonly roundTimeout?: number;
  readonly processes: number;
  readonly register?: string;
  readonly inspect?: string;
  /** JSON lines on stdout instead of text (the shapes are in the README). */
  readonly json?: boolean;
}

/** Options of `rolebox restate dev`: serve's, plus the local server's. */
export interface RestateDevOptions
  extends Omit<RestateServeOptions, 'processes' | 'register' | 'port'> {
  readonly baseDir: string;
  readonly port?: number;
  readonly ingressPort?: number;
  readonly adminPort?: number;
}

/** The ports of a dev setup, kept in its base dir so that starting it again finds it where it was. */
interface DevPorts {
  readonly endpoint: number;
  readonly ingress: number;
  readonly admin: number;
  readonly node: number;
}

/** The ports the dev setup under `baseDir` used before, or new ones (options win); written back. */
async function devPorts(options: RestateDevOptions, fresh = false): Promise<DevPorts> {
  const file = join(options.baseDir, 'rolebox-dev-ports.json');
  let kept: Partial<DevPorts> = {};
  if (existsSync(file) && !fresh) {
    try {
      kept = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevPorts>;
    } catch {
      kept = {};
    }
  }
  const port = async (given: number | undefined, before: unknown) =>
    given ?? (Number.isInteger(before) && (before as number) > 0 ? (before as number) : freePort());
  const ports: DevPorts = {
    endpoint: await port(options.port, kept.endpoint),
    ingress: await port(options.ingressPort, kept.ingress),
    admin: await port(options.adminPort, kept.admin),
    node: await port(undefined, kept.node),
  };
  mkdirSync(options.baseDir, { recursive: true });
  writeFileSync(file, `${JSON.stringify(ports, null, 2)}\n`);
  return ports;
}

/**
 * Listens on `host:port`; a port another process holds is `port_in_use` (exit 2), an
 * address this machine cannot use `invalid_argument`, instead of Node's bare error.
 */
async function listenOn(
  endpoint: ReturnType<typeof serveRoleboxOnRestate>,
  port: number,
  host: string,
): Promise<ListeningEndpoint> {
  try {
    return await endpoint.listen(port, host);
  } catch (error) {
    throw listenError(error, host, port);
  }
}

/**
 * The endpoint a command serves: the session object, and the shell worker when `--worker`
 * is given. `stop` kills the shell rounds this process runs and closes the endpoint: a
 * stopped endpoint leaves no worker command behind.
 */
async function endpointOf(
  options: Omit<RestateServeOptions, 'port' | 'host' | 'processes'>,
  defaultFunctions: readonly FunctionDefinition[] = [],
) {
  if (options.worker !== undefined && options.workersService !== undefined)
    throw new RoleboxError(
      'invalid_argument',
      'give --worker (a shell command run here) or --workers-service (a Restate service), not both',
    );
  const functions: readonly FunctionDefinition[] = options.functions
    ? await loadFunctions(options.functions)
    : defaultFunctions;
  const workers: RestateTarget | undefined = options.worker
    ? { service: SHELL_WORKER_NAME }
    : options.workersService
      ? { service: options.workersService }
      : undefined;
  const shell: ShellWorker | undefined = options.worker
    ? shellWorker({ command: options.worker, tasksDir: options.tasks })
    : undefined;
  const endpoint = serveRoleboxOnRestate({
    functions,
    limits: {
      ...(options.delay === undefined ? {} : { interRoundDelayMs: options.delay }),
      ...(options.roundTimeout === undefined ? {} : { roundTimeoutMs: options.roundTimeout }),
    },
    ...(workers ? { workers } : {}),
    ...(options.eventSink ? { eventSink: { service: options.eventSink } } : {}),
    ...(options.inspect ? { inspect: { url: options.inspect } } : {}),
    services: shell ? [shell.service] : [],
  });
  return {
    endpoint,
    /** Kills the shell rounds running here, then closes `listening`. */
    stop: async (listening: ListeningEndpoint) => {
      await shell?.stopRounds();
      await listening.close();
    },
  };
}

/**
 * `rolebox restate serve`: serves the rolebox endpoint until SIGINT/SIGTERM (then closes
 * and exits 0). With `--processes N` a primary process forks N endpoint processes sharing
 * the port (Restate spreads its connections over them) and replaces any that dies.
 * Returns the exit code.
 */
export async function runRestateServeCommand(
  options: RestateServeOptions,
  output: Output,
): Promise<number> {
  if (options.processes > 1 && cluster.isPrimary) return runPrimary(options, output);
  const { endpoint, stop } = await endpointOf(options);
  const listening = await listenOn(endpoint, options.port, options.host);
  // From here on a signal stops it cleanly, even one that comes before it says where it is.
  const interrupted = untilInterrupted();
  const { url } = listening;
  if (options.json)
    output.out(
      JSON.stringify({
        type: cluster.isWorker ? 'endpoint_process' : 'listening',
        url,
        pid: process.pid,
      }),
    );
  else output.out(`rolebox: serving sessions on ${url} (pid ${process.pid})`);
  if (cluster.isWorker) {
    // The primary is gone (killed, say): an orphan endpoint must not keep the port.
    process.on('disconnect', () => process.exit(FAILURE_EXIT_CODE));
    process.send?.({ listening: url });
  } else if (options.register) {
    await registerDeployment(options.register, url);
    registered(url, options.register, options, output);
  }
  await interrupted;
  await stop(listening);
  return OK_EXIT_CODE;
}

/** Says that `url` was registered with the Restate admin API at `admin`. */
function registered(url: string, admin: string, options: { json?: boolean }, output: Output) {
  output.out(
    options.json
      ? JSON.stringify({ type: 'registered', url, admin })
      : `rolebox: registered ${url} with ${admin}`,
  );
}

async function runPrimary(options: RestateServeOptions, output: Output): Promise<number> {
  let stopping = false;
  // A signal stops it whenever it comes, also while the endpoint processes start (a process
  // group's SIGTERM reaches them too: they are not replaced then).
  const interrupted = untilInterrupted().then(() => {
    stopping = true;
  });
  // Registered once every first process listens (a replacement later just joins in).
  let ready = 0;
  let failedToStart: (code: number) => void = () => {};
  const listening = new Promise<string | { code: number }>((resolve) => {
    failedToStart = (code) => resolve({ code });
    cluster.on('message', (_worker, message: { listening?: string }) => {
      if (message?.listening && ++ready === options.processes) resolve(message.listening);
    });
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    // A process that could not start for a reason a new one would meet too (a port in use,
    // bad input: it said why) is not replaced: the command stops with its code.
    if (ready < options.processes && code === USAGE_EXIT_CODE) {
      stopping = true;
      failedToStart(code);
      return;
    }
    output.err(
      `rolebox: endpoint process ${worker.process.pid} ended (${signal ?? code}); starting another`,
    );
    cluster.fork();
  });
  for (let i = 0; i < options.processes; i++) cluster.fork();
  const url = await Promise.race([listening, interrupted.then(() => ({ code: OK_EXIT_CODE }))]);
  if (typeof url !== 'string') {
    await stopWorkers();
    return url.code;
  }
  output.out(
    options.json
      ? JSON.stringify({
          type: 'listening',
          url,
          processes: options.processes,
          pid: process.pid,
        })
      : `rolebox: ${options.processes} endpoint processes share ${url} (primary pid ${process.pid})`,
  );
  if (options.register) {
    await registerDeployment(options.register, url);
    registered(url, options.register, options, output);
  }
  await interrupted;
  await stopWorkers();
  return OK_EXIT_CODE;
}

/** Stops the endpoint processes of this primary and waits until they are gone. */
async function stopWorkers(): Promise<void> {
  const workers = Object.values(cluster.workers ?? {});
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (!worker || worker.isDead()) return resolve();
          worker.once('exit', () => resolve());
          worker.kill('SIGTERM');
        }),
    ),
  );
}

/**
 * `rolebox restate dev`: starts a restate-server from node_modules (state under
 * `--base-dir`), serves the endpoint, registers it and prints the ingress URL with an
 * example call; Ctrl-C stops both. Returns the exit code.
 */
export async function runRestateDevCommand(
  options: RestateDevOptions,
  output: Output,
): Promise<number> {
  const { endpoint, stop } = await endpointOf(options, RESTATE_DEV_FUNCTIONS);
  // The same ports every time: the server's registered deployment (the endpoint's URL) and
  // the host's ingress URL stay right when the setup is started again. Ports chosen anew
  // may be taken before they are bound: those are chosen again.
  const firstStart = !existsSync(join(options.baseDir, 'rolebox-dev-ports.json'));
  const chosen =
    options.port === undefined &&
    options.ingressPort === undefined &&
    options.adminPort === undefined;
  (options.json ? output.err : output.out)('rolebox: starting restate-server…');
  for (let attempt = 1; ; attempt++) {
    const ports = await devPorts(options, attempt > 1);
    let listening: ListeningEndpoint | undefined;
    try {
      listening = await listenOn(endpoint, ports.endpoint, options.host);
      // A server killed just now lets go of its ports only once all its threads are gone.
      if (await stopLeftoverServer(options.baseDir, output))
        await untilPortsFree([ports.ingress, ports.admin, ports.node]);
      const server = await startLocalRestateServer({
        baseDir: options.baseDir,
        ports: { ingress: ports.ingress, admin: ports.admin, node: ports.node },
      });
      writeFileSync(serverPidFile(options.baseDir), `${server.pid}\n`);
      try {
        await server.register(listening.url);
      } catch (error) {
        await server.stop();
        throw error;
      }
      return await serveDev(listening, stop, server, options, output);
    } catch (error) {
      await listening?.close();
      const taken =
        isRoleboxError(error, 'port_in_use') ||
        /address (already )?in use|EADDRINUSE/i.test((error as Error).message);
      if (!(taken && firstStart && chosen && attempt < 3)) throw error;
    }
  }
}

/** Where `dev` notes the pid of the server it started, to find it if `dev` itself is killed. */
const serverPidFile = (baseDir: string) => join(baseDir, 'restate-server.pid');

/**
 * Stops a restate-server an earlier `dev` on this base dir left running (that `dev` was
 * killed before it could stop it): it holds the base dir and the ports.
 */
async function stopLeftoverServer(baseDir: string, output: Output): Promise<boolean> {
  const file = serverPidFile(baseDir);
  if (!existsSync(file)) return false;
  const pid = Number(readFileSync(file, 'utf8').trim());
  let command = '';
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return false;
  }
  if (!command.includes('restate-server') || !command.includes(baseDir)) return false;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return false;
  }
  output.err(`rolebox: stopped the restate-server (pid ${pid}) an earlier dev left running`);
  return true;
}

/** Waits (up to 10 s) until nothing listens on these ports of 127.0.0.1. */
async function untilPortsFree(ports: readonly number[]): Promise<void> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
  for (let i = 0; i < 200; i++) {
    if ((await Promise.all(ports.map(free))).every(Boolean)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function serveDev(
  listening: ListeningEndpoint,
  stop: (listening: ListeningEndpoint) => Promise<void>,
  server: LocalRestateServer,
  options: RestateDevOptions,
  output: Output,
): Promise<number> {
  if (options.json) {
    output.out(
      JSON.stringify({
        type: 'listening',
        url: listening.url,
        admin: server.adminUrl,
        ingress: server.ingressUrl,
        baseDir: options.baseDir,
      }),
    );
  } else {
    output.out(`rolebox: endpoint ${listening.url}, registered with ${server.adminUrl}`);
    output.out(`ingress: ${server.ingressUrl}`);
    output.out(
      options.functions === undefined
        ? `functions: ${RESTATE_DEV_FUNCTIONS.map((fn) => fn.name).join(', ')} (built in: the README's example; --functions <dir> serves yours)`
        : `functions: from ${options.functions}`,
    );
    const call = (handler: string, body: string) =>
      `curl -X POST ${server.ingressUrl}/rolebox-session/s1/${handler} -H 'content-type: application/json' -d '${body}'`;
    output.out(`try:   ${call('open', '[]')}`);
    if (options.functions === undefined) {
      output.out(`       ${call('activate', '["approval"]')}`);
      output.out(`       ${call('tool', '["|signal| type=need_approval"]')}`);
    }
    output.out(
      `host:  createRestateRolebox({ ingressUrl: '${server.ingressUrl}' })  (from 'rolebox/restate')`,
    );
    output.out(`state: ${join(options.baseDir)} (Ctrl-C stops; start again to go on)`);
  }
  await untilInterrupted();
  await stop(listening);
  await server.stop();
  return OK_EXIT_CODE;
}
