import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, hostname, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';

/** A restate-server started from node_modules on private ports (tests, `rolebox restate dev`). */
export interface LocalRestateServer {
  /** Where host code calls sessions: `http://127.0.0.1:<port>`. */
  readonly ingressUrl: string;
  /** The admin API (deployments, health). */
  readonly adminUrl: string;
  readonly pid: number;
  /** The server's data directory. */
  readonly baseDir: string;
  /**
   * The server's temporary folder (`<baseDir>/tmp`, its `TMPDIR`): its invokers' scratch
   * folders go there, not to the system's, and stop() removes it.
   */
  readonly tmpDir: string;
  /** The ports it listens on, to start it again on the same ones. */
  readonly ports: RestateServerPorts;
  /** Registers (or re-registers, forcing) an endpoint by its URL. Throws: `restate_failed`. */
  register(endpointUrl: string): Promise<void>;
  /**
   * Stops the server (SIGTERM, then SIGKILL after `graceMs`) and waits for it to exit. A base
   * dir it made itself (none was given) is removed then; `kill()` keeps it, as a crash would.
   */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILLs the server, as a crash would, and waits for it to exit. */
  kill(): Promise<void>;
}

/** The three ports of a server: ingress, admin, and the node's own. */
export interface RestateServerPorts {
  readonly ingress: number;
  readonly admin: number;
  readonly node: number;
}

/** Options of {@link startLocalRestateServer}. */
export interface LocalRestateServerOptions {
  /** Its data directory (default: a new temporary one). Start it again on the same one to keep its state. */
  readonly baseDir?: string;
  /** Fixed ports (default: free ones). */
  readonly ports?: RestateServerPorts;
  /** How long to wait for it to be healthy (default 60 s: a loaded machine is slow). */
  readonly startTimeoutMs?: number;
  /** Receives the server's log lines (default: dropped). */
  readonly onLog?: (line: string) => void;
  /** More environment for the server (its `RESTATE_*` configuration, say). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * The path of the restate-server binary that `@restatedev/restate-server` installed for
 * this platform, or undefined when there is none (the package is optional).
 */
export function restateServerBinary(): string | undefined {
  const require = createRequire(import.meta.url);
  try {
    return require.resolve(`@restatedev/restate-server-${platform()}-${arch()}/bin/restate-server`);
  } catch {
    return undefined;
  }
}

/**
 * Starts a restate-server on 127.0.0.1 and waits until its admin API is healthy.
 * Throws: `invalid_argument` for an unknown option or port name; `restate_failed` when the
 * binary is not installed, or the server exits or is not healthy in time (its last log
 * lines in the message).
 */
export async function startLocalRestateServer(
  options: LocalRestateServerOptions = {},
): Promise<LocalRestateServer> {
  checkOptionNames(
    options,
    Object.keys({
      baseDir: true,
      ports: true,
      startTimeoutMs: true,
      onLog: true,
      env: true,
    } satisfies Record<keyof LocalRestateServerOptions, true>),
    'startLocalRestateServer options',
  );
  if (options.ports !== undefined)
    checkOptionNames(
      options.ports,
      Object.keys({
        ingress: true,
        admin: true,
        node: true,
      } satisfies Record<keyof RestateServerPorts, true>),
      'startLocalRestateServer ports',
      'port',
    );
  // Free ports are only free when asked: another process may take one before the server
  // binds it. Ports the caller chose are the caller's; ports chosen here are chosen again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      const portTaken =
        error instanceof RoleboxError &&
        /address (already )?in use|AddrInUse|EADDRINUSE/i.test(error.message);
      if (options.ports !== undefined || !portTaken || attempt === 3) throw error;
    }
  }
}

async function startOnce(options: LocalRestateServerOptions): Promise<LocalRestateServer> {
  const binary = restateServerBinary();
  if (!binary)
    throw new RoleboxError(
      'restate_failed',
      `no restate-server binary for ${platform()}-${arch()}: install @restatedev/restate-server (npm install -D @restatedev/restate-server@1.7)`,
    );
  // A base dir of its own is temporary: stop() removes it (a given one is the caller's).
  const ownsBaseDir = options.baseDir === undefined;
  const baseDir = options.baseDir ?? mkdtempSync(join(tmpdir(), 'rolebox-restate-'));
  const ports = options.ports ?? {
    ingress: await freePort(),
    admin: await freePort(),
    node: await freePort(),
  };
  // The server makes a scratch folder per invoker in its TMPDIR and leaves them behind:
  // they go inside the base dir, so nothing is left in the system's temporary folder.
  const tmpDir = join(baseDir, TMP_FOLDER);
  const nodeName = nodeNameFor(baseDir);
  mkdirSync(tmpDir, { recursive: true });
  const child: ChildProcess = spawn(binary, ['--base-dir', baseDir, '--listen-mode', 'tcp'], {
    env: {
      ...process.env,
      TMPDIR: tmpDir,
      ...(nodeName === undefined ? {} : { RESTATE_NODE_NAME: nodeName }),
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ports.ingress}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${ports.admin}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${ports.node}`,
      RESTATE_LOG_FORMAT: 'compact',
      RESTATE_LOG_DISABLE_ANSI_CODES: 'true',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  const onLine = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      tail.push(line);
      if (tail.length > 20) tail.shift();
      options.onLog?.(line);
    }
  };
  child.stdout?.on('data', onLine);
  child.stderr?.on('data', onLine);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const adminUrl = `http://127.0.0.1:${ports.admin}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new RoleboxError(
        'restate_failed',
        `restate-server exited (${child.exitCode ?? child.signalCode}) before it was healthy:\n${tail.join('\n')}`,
      );
    if (await healthy(adminUrl)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new RoleboxError(
        'restate_failed',
        `restate-server was not healthy within ${options.startTimeoutMs ?? 60_000} ms:\n${tail.join('\n')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const end = async (signal: NodeJS.Signals, graceMs: number) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    ingressUrl: `http://127.0.0.1:${ports.ingress}`,
    adminUrl,
    pid: child.pid as number,
    baseDir,
    tmpDir,
    ports,
    register: (endpointUrl) => registerDeployment(adminUrl, endpointUrl),
    stop: async (graceMs = 10_000) => {
      await end('SIGTERM', graceMs);
      rmSync(ownsBaseDir ? baseDir : tmpDir, { recursive: true, force: true });
    },
    kill: () => end('SIGKILL', 0),
  };
}

/** The server's temporary folder, inside its base dir. */
const TMP_FOLDER = '.tmp';

/**
 * The node name to start the server with. Restate reads every folder in its base dir as a
 * node's data and, with no node name given, refuses one holding another node's folder —
 * the temporary folder looks like one. So the name is given: the node already there (the
 * one restate would have resumed), else the host's name (restate's own default), unless
 * the environment names it or the folder holds several nodes (left to restate to refuse).
 */
function nodeNameFor(baseDir: string): string | undefined {
  if (process.env.RESTATE_NODE_NAME !== undefined) return undefined;
  const nodes = existsSync(baseDir)
    ? readdirSync(baseDir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && entry.name !== TMP_FOLDER)
        .map((entry) => entry.name)
    : [];
  if (nodes.length > 1) return undefined;
  return nodes[0] ?? hostname();
}

/**
 * Registers an endpoint with a Restate server's admin API (forcing, so that a changed
 * endpoint at the same URL replaces the old one). Throws: `restate_failed`.
 */
export async function registerDeployment(adminUrl: string, endpointUrl: string): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`${adminUrl.replace(/\/$/, '')}/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: endpointUrl, force: true }),
    });
  } catch (error) {
    throw new RoleboxError(
      'restate_failed',
      `the Restate admin API ${describeValue(adminUrl)} cannot be reached (${(error as Error).message})`,
    );
  }
  if (!response.ok)
    throw new RoleboxError(
      'restate_failed',
      `registering ${endpointUrl} with ${adminUrl} failed with HTTP ${response.status}: ${(await response.text()).slice(0, 500)}`,
    );
}

async function healthy(adminUrl: string): Promise<boolean> {
  try {
    return (await fetch(`${adminUrl}/health`)).ok;
  } catch {
    return false;
  }
}

/** A port nobody listens on now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
