import { type ChildProcess, spawn } from 'node:child_process';
import { type FSWatcher, readdirSync, readFileSync, watch } from 'node:fs';
import { mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeValue, RoleboxError } from '../errors.js';
import { type Clock, realClock } from './clock.js';
import type {
  DispatchedTask,
  Dispatcher,
  RoundInput,
  RoundResult,
  TaskStatus,
} from './dispatcher.js';
import { type IdSource, nanoidIdSource } from './ids.js';

/** Options of {@link CommandDispatcher}. */
export interface CommandDispatcherOptions {
  /** The shell command that runs one round: it reads the prompt on stdin and writes the round's text to stdout. */
  readonly command: string;
  /** Where task files are kept (default `.rolebox/tasks`). Tasks outlive the process through it. */
  readonly stateDir?: string;
  /** Working directory of the command (default: this process's). */
  readonly cwd?: string;
  /** Extra environment for the command. */
  readonly env?: Readonly<Record<string, string>>;
  /** Clock for timeouts and the kill grace period (default: real). */
  readonly clock?: Clock;
  /** Task ids (default: nanoid). */
  readonly ids?: IdSource;
  /** How long after SIGTERM a process group that is still alive gets SIGKILL (default 2 000 ms). */
  readonly killGraceMs?: number;
  /** How often a task started by another process is checked for a death without exit status (default 2 000 ms). */
  readonly orphanCheckMs?: number;
}

/** The files of one task, under `<stateDir>/<taskId>/`. */
interface TaskFiles {
  readonly dir: string;
  readonly meta: string;
  readonly prompt: string;
  readonly stdout: string;
  readonly stderr: string;
  readonly pid: string;
  readonly exit: string;
  readonly cancelled: string;
  readonly timedOut: string;
}

interface TaskMeta {
  readonly taskId: string;
  readonly key: string;
  readonly workerSessionId: string;
  readonly startedAt: number;
  readonly timeoutMs?: number;
}

// Runs the user's command ($1) with the prompt file as stdin and stdout/stderr into files,
// then records the exit status atomically. Nothing of the prompt ever enters a shell string.
const WRAPPER =
  'sh -c "$1" < "$2" > "$3" 2> "$4"; code=$?; printf %s "$code" > "$5.tmp" && mv "$5.tmp" "$5"';

/**
 * Runs each loop round as a shell command in its own process group.
 *
 * The prompt goes to the command's stdin, its stdout is the round's text, a non-zero exit
 * is an error. Everything about a task (pid, prompt, stdout, stderr, exit status, cancel
 * and timeout markers) is kept in files, so a restarted process answers `getTaskStatus`
 * for rounds that finished (or are still running) while it was down, and `unknown` only
 * for tasks it never heard of. Cancelling or timing out kills the whole process group.
 */
export class CommandDispatcher implements Dispatcher {
  readonly #command: string;
  readonly #stateDir: string;
  readonly #cwd: string | undefined;
  readonly #env: Readonly<Record<string, string>>;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #killGraceMs: number;
  readonly #orphanCheckMs: number;
  readonly #listeners = new Map<string, Set<(status: TaskStatus) => void>>();
  readonly #watchers = new Map<
    string,
    { watcher?: FSWatcher; timer: ReturnType<typeof setInterval> }
  >();
  /** Processes this instance spawned, by task id: resolves when the process has exited. */
  readonly #exits = new Map<string, { readonly exited: Promise<void>; done: boolean }>();
  readonly #timeouts = new Map<string, unknown>();
  readonly #children = new Map<string, ChildProcess>();

  /** Throws: `invalid_argument` for an empty command. */
  constructor(options: CommandDispatcherOptions) {
    if (typeof options?.command !== 'string' || options.command.trim() === '') {
      throw new RoleboxError(
        'invalid_argument',
        `CommandDispatcher needs a shell command, got ${describeValue(options?.command)}`,
      );
    }
    this.#command = options.command;
    this.#stateDir = options.stateDir ?? join('.rolebox', 'tasks');
    this.#cwd = options.cwd;
    this.#env = options.env ?? {};
    this.#clock = options.clock ?? realClock;
    this.#ids = options.ids ?? nanoidIdSource;
    this.#killGraceMs = options.killGraceMs ?? 2_000;
    this.#orphanCheckMs = options.orphanCheckMs ?? 2_000;
  }

  async dispatchRound(input: RoundInput, key: string): Promise<DispatchedTask> {
    await mkdir(join(this.#stateDir, 'keys'), { recursive: true });
    const keyFile = join(this.#stateDir, 'keys', encodeURIComponent(key));
    const existingId = await readText(keyFile);
    if (existingId !== undefined) return this.#adopt(existingId.trim(), input);

    const taskId = this.#ids.next('t_');
    const files = this.#files(taskId);
    await mkdir(files.dir, { recursive: true });
    const meta: TaskMeta = {
      taskId,
      key,
      workerSessionId: taskId,
      startedAt: this.#clock.now(),
      ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
    };
    await writeFile(files.meta, JSON.stringify(meta));
    await writeFile(files.prompt, input.prompt);
    // Claim the key atomically: if another call got there first, use its task.
    try {
      const handle = await open(keyFile, 'wx');
      await handle.writeFile(taskId);
      await handle.close();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      await rm(files.dir, { recursive: true, force: true });
      return this.#adopt(((await readText(keyFile)) ?? '').trim(), input);
    }
    await this.#spawn(taskId, input);
    return { taskId, workerSessionId: taskId };
  }

  async getTaskStatus(taskId: string): Promise<TaskStatus> {
    const files = this.#files(taskId);
    if (!(await exists(files.meta))) return 'unknown';
    if (await exists(files.cancelled)) return 'cancelled';
    const exited = await this.#exitStatus(files);
    if (exited) return exited;
    const pid = await readPid(files.pid);
    if (pid === undefined) return 'pending';
    if (isAlive(pid)) return 'running';
    // The wrapper writes its exit file before it dies: read again, in case it did so just
    // after the first read. Only a process that died without one (killed) is an error.
    const spawnedHere = this.#exits.get(taskId);
    if (spawnedHere && !spawnedHere.done) await spawnedHere.exited;
    return (await this.#exitStatus(files)) ?? 'error';
  }

  async #exitStatus(files: TaskFiles): Promise<'completed' | 'error' | undefined> {
    const exit = await readText(files.exit);
    if (exit === undefined) return undefined;
    return exit.trim() === '0' && !(await exists(files.timedOut)) ? 'completed' : 'error';
  }

  async getRoundResult(taskId: string): Promise<RoundResult> {
    const files = this.#files(taskId);
    const status = await this.getTaskStatus(taskId);
    const text = ((await readText(files.stdout)) ?? '').replace(/\s+$/, '');
    if (status === 'completed') return { text, hadError: false };
    if (status === 'unknown')
      throw new RoleboxError('invalid_argument', `unknown worker task ${describeValue(taskId)}`, {
        taskId,
      });
    if (status === 'running' || status === 'pending') {
      throw new RoleboxError(
        'invalid_argument',
        `worker task ${taskId} has not finished (${status})`,
        { taskId },
      );
    }
    return { text, hadError: true, errorReason: await this.#errorReason(files, status) };
  }

  async cancelRound(taskId: string): Promise<void> {
    const files = this.#files(taskId);
    const status = await this.getTaskStatus(taskId);
    if (status !== 'running' && status !== 'pending') return;
    await writeFile(files.cancelled, String(this.#clock.now()));
    await this.#killGroup(taskId);
    this.#notify(taskId, 'cancelled');
  }

  onTerminated(taskId: string, listener: (status: TaskStatus) => void): () => void {
    const set = this.#listeners.get(taskId) ?? new Set();
    set.add(listener);
    this.#listeners.set(taskId, set);
    if (!this.#exits.has(taskId)) this.#watchAdopted(taskId);
    // A task that has already ended is reported to this listener too.
    void this.getTaskStatus(taskId).then((status) => {
      if (set.has(listener) && status !== 'running' && status !== 'pending') listener(status);
    });
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#unwatch(taskId);
    };
  }

  /**
   * Lets this process exit without waiting for its workers: stops every watcher and timer
   * and unreferences running children (they keep running; a later process can adopt them).
   */
  close(): void {
    for (const child of this.#children.values()) child.unref();
    for (const taskId of [...this.#watchers.keys()]) this.#unwatch(taskId);
    for (const handle of this.#timeouts.values()) this.#clock.clearTimeout(handle);
    this.#timeouts.clear();
  }

  #files(taskId: string): TaskFiles {
    if (!/^[A-Za-z0-9_-]+$/.test(taskId)) {
      throw new RoleboxError('invalid_argument', `not a task id: ${describeValue(taskId)}`, {
        taskId,
      });
    }
    const dir = join(this.#stateDir, taskId);
    return {
      dir,
      meta: join(dir, 'meta.json'),
      prompt: join(dir, 'prompt'),
      stdout: join(dir, 'stdout'),
      stderr: join(dir, 'stderr'),
      pid: join(dir, 'pid'),
      exit: join(dir, 'exit'),
      cancelled: join(dir, 'cancelled'),
      timedOut: join(dir, 'timed-out'),
    };
  }

  /** A task claimed by an earlier call (maybe by an earlier process): start it if it never started. */
  async #adopt(taskId: string, input: RoundInput): Promise<DispatchedTask> {
    const files = this.#files(taskId);
    const meta = JSON.parse((await readText(files.meta)) ?? '{}') as Partial<TaskMeta>;
    if ((await readPid(files.pid)) === undefined && !(await exists(files.exit)))
      await this.#spawn(taskId, input);
    return { taskId, workerSessionId: meta.workerSessionId ?? taskId };
  }

  async #spawn(taskId: string, input: RoundInput): Promise<void> {
    const files = this.#files(taskId);
    const child = spawn(
      '/bin/sh',
      [
        '-c',
        WRAPPER,
        'rolebox-worker',
        this.#command,
        files.prompt,
        files.stdout,
        files.stderr,
        files.exit,
      ],
      {
        detached: true,
        stdio: 'ignore',
        ...(this.#cwd ? { cwd: this.#cwd } : {}),
        env: {
          ...process.env,
          ...this.#env,
          ROLEBOX_LOOP_ID: input.loopId,
          ROLEBOX_ROUND: String(input.round),
          ROLEBOX_TASK_ID: taskId,
          ROLEBOX_ORIGIN_SESSION: input.originSessionId,
          ROLEBOX_AGENT: input.agent,
        },
      },
    );
    const entry: { exited: Promise<void>; done: boolean } = {
      exited: Promise.resolve(),
      done: false,
    };
    entry.exited = new Promise<void>((resolve) => {
      const finish = () => {
        entry.done = true;
        resolve();
      };
      child.once('exit', finish);
      child.once('error', finish);
    });
    this.#exits.set(taskId, entry);
    const exited = entry.exited;
    // Detached: the task survives this process. Referenced until close(), so a host that
    // waits for a round is kept alive by it.
    this.#children.set(taskId, child);
    void exited.then(() => this.#children.delete(taskId));
    if (child.pid === undefined) {
      await writeFile(files.stderr, 'could not start /bin/sh');
      await writeFile(files.exit, '127');
    } else {
      await writeFile(files.pid, String(child.pid));
    }
    if (input.timeoutMs !== undefined) {
      const handle = this.#clock.setTimeout(() => {
        this.#timeouts.delete(taskId);
        void this.#timeOut(taskId, input.timeoutMs as number);
      }, input.timeoutMs);
      this.#timeouts.set(taskId, handle);
    }
    void exited.then(async () => {
      const timer = this.#timeouts.get(taskId);
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      this.#timeouts.delete(taskId);
      this.#notify(taskId, await this.getTaskStatus(taskId));
    });
  }

  async #timeOut(taskId: string, timeoutMs: number): Promise<void> {
    const files = this.#files(taskId);
    const status = await this.getTaskStatus(taskId);
    if (status !== 'running' && status !== 'pending') return;
    await writeFile(files.timedOut, String(timeoutMs));
    await this.#killGroup(taskId);
  }

  /**
   * SIGTERM to the whole group, SIGKILL after the grace period; resolves when every process
   * of the group is gone (not just the wrapper: its children may ignore SIGTERM).
   */
  async #killGroup(taskId: string): Promise<void> {
    const pgid = await readPid(this.#files(taskId).pid);
    if (pgid === undefined) return;
    signalGroup(pgid, 'SIGTERM');
    let graceTimer: unknown;
    const grace = new Promise<'grace'>((resolve) => {
      graceTimer = this.#clock.setTimeout(() => resolve('grace'), this.#killGraceMs);
    });
    const gone = waitForGroupDeath(pgid);
    const first = await Promise.race([gone.then(() => 'gone' as const), grace]);
    this.#clock.clearTimeout(graceTimer);
    if (first === 'grace') {
      signalGroup(pgid, 'SIGKILL');
      await gone;
    }
    await this.#exits.get(taskId)?.exited;
  }

  async #errorReason(files: TaskFiles, status: TaskStatus): Promise<string> {
    if (status === 'cancelled') return 'cancelled';
    const timedOut = await readText(files.timedOut);
    if (timedOut !== undefined) return `timed out after ${timedOut}ms`;
    const exit = await readText(files.exit);
    if (exit === undefined) return 'worker process died without an exit status';
    const lastLine = ((await readText(files.stderr)) ?? '').trim().split('\n').at(-1) ?? '';
    return `exit code ${exit.trim()}${lastLine ? `: ${lastLine}` : ''}`;
  }

  /** Watches a task started by another process: its exit file, and whether it died without one. */
  #watchAdopted(taskId: string): void {
    if (this.#watchers.has(taskId)) return;
    const check = async () => {
      const status = await this.getTaskStatus(taskId);
      if (status !== 'running' && status !== 'pending') this.#notify(taskId, status);
    };
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(this.#files(taskId).dir, () => void check());
      watcher.on('error', () => {});
    } catch {
      watcher = undefined;
    }
    const timer = setInterval(() => void check(), this.#orphanCheckMs);
    timer.unref();
    this.#watchers.set(taskId, { ...(watcher ? { watcher } : {}), timer });
    void check();
  }

  #unwatch(taskId: string): void {
    const entry = this.#watchers.get(taskId);
    if (!entry) return;
    entry.watcher?.close();
    clearInterval(entry.timer);
    this.#watchers.delete(taskId);
  }

  #notify(taskId: string, status: TaskStatus): void {
    if (status === 'running' || status === 'pending') return;
    for (const listener of [...(this.#listeners.get(taskId) ?? [])]) listener(status);
    this.#unwatch(taskId);
  }
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function readPid(path: string): Promise<number | undefined> {
  const text = await readText(path);
  const pid = text === undefined ? Number.NaN : Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * True while the process runs. A zombie counts as dead: an orphaned worker whose group was
 * killed is reparented to PID 1, which in containers often never reaps it.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may contain spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (not Linux): the signal check is all there is
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * True while any live process belongs to process group `pgid`. On Linux the members are
 * read from /proc, so zombies do not count; elsewhere `kill(-pgid, 0)` decides.
 */
export function isGroupAlive(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After "pid (comm) ": state, ppid, pgrp, …
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
    } catch {
      // The process ended while we looked.
    }
  }
  return false;
}

/** Resolves once no live process is left in the group (checked every 20 ms: no event exists for it). */
function waitForGroupDeath(pgid: number): Promise<void> {
  return new Promise((resolve) => {
    if (!isGroupAlive(pgid)) return resolve();
    const timer = setInterval(() => {
      if (isGroupAlive(pgid)) return;
      clearInterval(timer);
      resolve();
    }, 20);
  });
}
