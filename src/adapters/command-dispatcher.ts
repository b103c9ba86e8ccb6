import { type ChildProcess, spawn } from 'node:child_process';
import { type FSWatcher, readdirSync, readFileSync, watch } from 'node:fs';
import { link, mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type {
  DispatchedTask,
  Dispatcher,
  RoundInput,
  RoundOutput,
  RoundResult,
  TaskStatus,
} from '../ports/dispatcher.js';
import type { IdSource } from '../ports/ids.js';
import { nanoidIdSource } from './id-sources.js';
import { isAlive } from './process-alive.js';
import { realClock } from './real-clock.js';
import { WORKER_WRAPPER_SCRIPT } from './worker-wrapper.js';

/** Whether a pid runs (zombies count as dead); it lives in process-alive.ts, shared with the stores. */
export { isAlive };

/** The default of {@link CommandDispatcherOptions.stateDir}, relative to the working directory. */
export const DEFAULT_TASKS_DIR = '.rolebox/tasks';

/** The default of {@link CommandDispatcherOptions.maxOutputBytes}: 16 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** The largest {@link CommandDispatcherOptions.maxOutputBytes}: what is kept is read into one string. */
export const MAX_OUTPUT_BYTES_LIMIT = 256 * 1024 * 1024;

/**
 * A point of `dispatchRound` where a crash leaves different files behind: the task folder
 * without its key (`before-key`), the key without a wrapper (`before-spawn`), a wrapper
 * that may not have claimed the task yet, and no record of it (`after-spawn`).
 */
export type DispatchPoint = 'before-key' | 'before-spawn' | 'after-spawn';

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
  /**
   * The most bytes of a round's stdout, and of its stderr, kept on disk and read back
   * (default 16 MiB, at most 256 MiB). A longer output keeps its last bytes; the result's
   * `output` says how much there was.
   */
  readonly maxOutputBytes?: number;
  /**
   * Testing only: called at each {@link DispatchPoint} of `dispatchRound`. A test throws
   * there, or kills its process, to leave the files a crash at that point leaves.
   */
  readonly onDispatchPoint?: (point: DispatchPoint) => void;
}

const COMMAND_DISPATCHER_OPTION_NAMES = Object.keys({
  command: true,
  stateDir: true,
  cwd: true,
  env: true,
  clock: true,
  ids: true,
  killGraceMs: true,
  orphanCheckMs: true,
  maxOutputBytes: true,
  onDispatchPoint: true,
} satisfies Record<keyof CommandDispatcherOptions, true>);

/** Refuses an option of the wrong type before it fails later, deep in a spawn or a timer. */
function checkOptionTypes(options: CommandDispatcherOptions): void {
  const refuse = (name: string, what: string, value: unknown): never => {
    throw new RoleboxError(
      'invalid_argument',
      `CommandDispatcher ${name} must be ${what}, got ${describeValue(value)}`,
      { option: name },
    );
  };
  for (const name of ['stateDir', 'cwd'] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== 'string' || value === ''))
      refuse(name, 'a path', value);
  }
  const env = options.env;
  if (
    env !== undefined &&
    (typeof env !== 'object' ||
      env === null ||
      Array.isArray(env) ||
      Object.values(env).some((value) => typeof value !== 'string'))
  )
    refuse('env', 'an object of strings', env);
  for (const [name, min] of [
    ['killGraceMs', 0],
    ['orphanCheckMs', 1],
  ] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min))
      refuse(name, `a whole number of milliseconds of at least ${min}`, value);
  }
  for (const [name, methods] of [
    ['clock', ['now', 'setTimeout', 'clearTimeout']],
    ['ids', ['next']],
  ] as const) {
    const value = options[name] as unknown;
    if (
      value !== undefined &&
      (typeof value !== 'object' ||
        value === null ||
        methods.some((method) => typeof (value as Record<string, unknown>)[method] !== 'function'))
    )
      refuse(name, `an object with ${methods.join(', ')}`, value);
  }
  if (options.onDispatchPoint !== undefined && typeof options.onDispatchPoint !== 'function')
    refuse('onDispatchPoint', 'a function', options.onDispatchPoint);
}

/** The files of one task, under `<stateDir>/<taskId>/`. */
interface TaskFiles {
  readonly dir: string;
  readonly meta: string;
  readonly prompt: string;
  /** The task's id, linked to `keys/<key>` to claim the key. */
  readonly key: string;
  /** The pid of the wrapper the dispatcher spawned (written after the spawn: a hint). */
  readonly spawned: string;
  /** The pid of the wrapper that claimed the task (written by that wrapper). */
  readonly pid: string;
  readonly stdout: TailFiles;
  readonly stderr: TailFiles;
  readonly exit: string;
  readonly cancelled: string;
  readonly timedOut: string;
}

/** The two segments of a kept output tail and the count of bytes rotated out (see worker-wrapper.ts). */
interface TailFiles {
  readonly previous: string;
  readonly current: string;
  readonly rotated: string;
}

interface TaskMeta {
  readonly taskId: string;
  readonly key: string;
  readonly workerSessionId: string;
  readonly startedAt: number;
  readonly timeoutMs?: number;
  readonly maxOutputBytes?: number;
}

/**
 * Runs each loop round as a shell command in its own process group.
 *
 * The prompt goes to the command's stdin, its stdout is the round's text, a non-zero exit
 * is an error. Everything about a task (pid, prompt, stdout, stderr, exit status, cancel
 * and timeout markers) is kept in files, so a restarted process answers `getTaskStatus`
 * for rounds that finished (or are still running) while it was down, and `unknown` only
 * for tasks it never heard of.
 *
 * Each task is run by a small Node wrapper (this Node binary, `node -e`) that claims the
 * task atomically before it runs the command, so a task key runs its command at most once
 * whatever process dies where; re-dispatching a key whose wrapper never claimed it starts
 * a wrapper again. A task is `pending` until its wrapper has claimed it. The wrapper keeps
 * the last `maxOutputBytes` of stdout and of stderr; the result's `output` says how many
 * bytes there were.
 *
 * Cancelling or timing out kills the whole process group (SIGTERM, SIGKILL after
 * `killGraceMs`) and, on Linux, every other process whose environment holds
 * `ROLEBOX_TASK_ID=<taskId>`: descendants that left the group (`setsid`, a daemon) die
 * too. A process that clears or replaces its environment escapes that; elsewhere than
 * Linux only the group is killed.
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
  readonly #maxOutputBytes: number;
  readonly #onDispatchPoint: ((point: DispatchPoint) => void) | undefined;
  readonly #listeners = new Map<string, Set<(status: TaskStatus) => void>>();
  readonly #watchers = new Map<
    string,
    { watcher?: FSWatcher; timer: ReturnType<typeof setInterval> }
  >();
  /** Wrappers this instance spawned, by task id: resolves when the process has exited. */
  readonly #exits = new Map<string, { readonly exited: Promise<void>; done: boolean }>();
  readonly #timeouts = new Map<string, unknown>();
  readonly #children = new Map<string, ChildProcess>();

  /**
   * Throws: `invalid_argument` for an unknown option name (with the one likely meant and the
   * known ones), an empty command, an option of the wrong type, or a `maxOutputBytes` that
   * is not a whole number from 1 to 256 MiB.
   */
  constructor(options: CommandDispatcherOptions) {
    checkOptionNames(options, COMMAND_DISPATCHER_OPTION_NAMES, 'CommandDispatcher options');
    checkOptionTypes(options);
    if (typeof options.command !== 'string' || options.command.trim() === '') {
      throw new RoleboxError(
        'invalid_argument',
        `CommandDispatcher needs a shell command, got ${describeValue(options?.command)}`,
      );
    }
    const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (
      !Number.isSafeInteger(maxOutputBytes) ||
      maxOutputBytes < 1 ||
      maxOutputBytes > MAX_OUTPUT_BYTES_LIMIT
    ) {
      throw new RoleboxError(
        'invalid_argument',
        `CommandDispatcher maxOutputBytes must be a whole number of bytes from 1 to ${MAX_OUTPUT_BYTES_LIMIT}, got ${describeValue(options.maxOutputBytes)}`,
        { maxOutputBytes: options.maxOutputBytes },
      );
    }
    this.#command = options.command;
    // Absolute: the wrapper runs in the command's working directory.
    this.#stateDir = resolve(options.stateDir ?? DEFAULT_TASKS_DIR);
    this.#cwd = options.cwd;
    this.#env = options.env ?? {};
    this.#clock = options.clock ?? realClock;
    this.#ids = options.ids ?? nanoidIdSource;
    this.#killGraceMs = options.killGraceMs ?? 2_000;
    this.#orphanCheckMs = options.orphanCheckMs ?? 2_000;
    this.#maxOutputBytes = maxOutputBytes;
    this.#onDispatchPoint = options.onDispatchPoint;
  }

  async dispatchRound(input: RoundInput, key: string): Promise<DispatchedTask> {
    await mkdir(join(this.#stateDir, 'keys'), { recursive: true });
    const keyFile = join(this.#stateDir, 'keys', encodeURIComponent(key));
    const existingId = await readOptional(keyFile);
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
      maxOutputBytes: this.#maxOutputBytes,
    };
    await writeFile(files.meta, JSON.stringify(meta));
    await writeFile(files.prompt, input.prompt);
    this.#onDispatchPoint?.('before-key');
    // Claim the key atomically, content included: link() of a complete file fails if the
    // key exists. If another call got there first, use its task.
    await writeFile(files.key, taskId);
    try {
      await link(files.key, keyFile);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      await rm(files.dir, { recursive: true, force: true });
      return this.#adopt(((await readOptional(keyFile)) ?? '').trim(), input);
    }
    this.#onDispatchPoint?.('before-spawn');
    await this.#spawn(taskId, input, this.#maxOutputBytes);
    return { taskId, workerSessionId: taskId };
  }

  async getTaskStatus(taskId: string): Promise<TaskStatus> {
    const files = this.#files(taskId);
    if (!(await exists(files.meta))) return 'unknown';
    if (await exists(files.cancelled)) return 'cancelled';
    const exited = await this.#exitStatus(files);
    if (exited) return exited;
    const pid = await readPid(files.pid);
    if (pid === undefined) {
      // Not claimed yet. Pending while a wrapper may still claim it; a wrapper that died
      // without claiming ran nothing, unless it claimed just before dying: look again.
      const spawned = await readPid(files.spawned);
      if (spawned === undefined || isAlive(spawned)) return 'pending';
      if ((await readPid(files.pid)) === undefined)
        return (await this.#exitStatus(files)) ?? 'error';
      return this.getTaskStatus(taskId);
    }
    if (isAlive(pid)) return 'running';
    // The wrapper writes its exit file before it dies: read again, in case it did so just
    // after the first read.
    const spawnedHere = this.#exits.get(taskId);
    if (spawnedHere && !spawnedHere.done) await spawnedHere.exited;
    const status = await this.#exitStatus(files);
    if (status) return status;
    // The wrapper was killed. Its command may live on in the group: the task is over only
    // when the whole group is gone, and then it is an error.
    return isGroupAlive(pid) ? 'running' : 'error';
  }

  async #exitStatus(files: TaskFiles): Promise<'completed' | 'error' | undefined> {
    const exit = await readOptional(files.exit);
    if (exit === undefined) return undefined;
    return exit.trim() === '0' && !(await exists(files.timedOut)) ? 'completed' : 'error';
  }

  /**
   * The result of a finished task: the tail of its stdout (at most `maxOutputBytes`) and,
   * in `output`, how many bytes there were. Stdout or stderr that cannot be read (anything
   * but a missing file) makes the result an error that names the file and the cause.
   */
  async getRoundResult(taskId: string): Promise<RoundResult> {
    const files = this.#files(taskId);
    const status = await this.getTaskStatus(taskId);
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
    const maxBytes = await this.#maxOutputBytesOf(files);
    let text: string;
    let output: RoundOutput;
    try {
      const tail = await readTail(files.stdout, maxBytes);
      text = tail.text.replace(/\s+$/, '');
      output = tail.output;
    } catch (error) {
      const failure = describeReadFailure(error);
      const reason =
        status === 'completed' ? failure : `${await this.#errorReason(files, status)}; ${failure}`;
      return { text: '', hadError: true, errorReason: reason };
    }
    const timing = await this.#timing(taskId, files);
    if (status === 'completed') return { text, hadError: false, output, ...timing };
    return {
      text,
      hadError: true,
      errorReason: await this.#errorReason(files, status),
      output,
      ...timing,
    };
  }

  /**
   * How long the task's command ran, from the wrapper's claim (its pid file) to its exit
   * file, by their times on disk: right even when the result is read long after, by another
   * process. And whether an earlier process started it (the round spanned a restart).
   */
  async #timing(
    taskId: string,
    files: TaskFiles,
  ): Promise<{ ranMs?: number; acrossRestart?: true }> {
    const acrossRestart = this.#exits.has(taskId) ? {} : { acrossRestart: true as const };
    try {
      const [claimed, exited] = await Promise.all([stat(files.pid), stat(files.exit)]);
      const ranMs = Math.round(exited.mtimeMs - claimed.mtimeMs);
      return ranMs >= 0 ? { ranMs, ...acrossRestart } : acrossRestart;
    } catch {
      // No claim or no exit file (a killed wrapper): the loop keeps the time it observed.
      return acrossRestart;
    }
  }

  /**
   * The file a task's stdout is written to (the newest part, when a long output was
   * rotated into `stdout.prev`), for a person to read the whole of it.
   * Throws: `invalid_argument` for a string that is not a task id.
   */
  outputFile(taskId: string): string {
    return this.#files(taskId).stdout.current;
  }

  async cancelRound(taskId: string): Promise<void> {
    const files = this.#files(taskId);
    const status = await this.getTaskStatus(taskId);
    if (status !== 'running' && status !== 'pending') return;
    // Written before the pid is read: a wrapper that claims the task after this read
    // finds the marker and does not run the command.
    await writeFile(files.cancelled, String(this.#clock.now()));
    await this.#killTask(taskId);
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
    const tail = (name: 'stdout' | 'stderr'): TailFiles => ({
      previous: join(dir, `${name}.prev`),
      current: join(dir, name),
      rotated: join(dir, `${name}.rotated`),
    });
    return {
      dir,
      meta: join(dir, 'meta.json'),
      prompt: join(dir, 'prompt'),
      key: join(dir, 'key'),
      spawned: join(dir, 'spawned'),
      pid: join(dir, 'pid'),
      stdout: tail('stdout'),
      stderr: tail('stderr'),
      exit: join(dir, 'exit'),
      cancelled: join(dir, 'cancelled'),
      timedOut: join(dir, 'timed-out'),
    };
  }

  async #readMeta(files: TaskFiles): Promise<Partial<TaskMeta>> {
    return JSON.parse((await readOptional(files.meta)) ?? '{}') as Partial<TaskMeta>;
  }

  /** The cap the task was started with (an earlier process may have had another). */
  async #maxOutputBytesOf(files: TaskFiles): Promise<number> {
    const recorded = (await this.#readMeta(files)).maxOutputBytes;
    return Number.isSafeInteger(recorded) && (recorded as number) > 0
      ? (recorded as number)
      : this.#maxOutputBytes;
  }

  /**
   * A task claimed by an earlier call (maybe by an earlier process): start a wrapper when
   * none has claimed it and none may still do so. Two wrappers for one task are harmless:
   * only the one that claims it runs the command.
   */
  async #adopt(taskId: string, input: RoundInput): Promise<DispatchedTask> {
    const files = this.#files(taskId);
    const meta = await this.#readMeta(files);
    const spawned = await readPid(files.spawned);
    if (
      !this.#exits.has(taskId) &&
      (spawned === undefined || !isAlive(spawned)) &&
      (await readPid(files.pid)) === undefined &&
      !(await exists(files.exit))
    )
      await this.#spawn(taskId, input, await this.#maxOutputBytesOf(files));
    return { taskId, workerSessionId: meta.workerSessionId ?? taskId };
  }

  async #spawn(taskId: string, input: RoundInput, maxOutputBytes: number): Promise<void> {
    const files = this.#files(taskId);
    // Variables that configure Node (NODE_OPTIONS, NODE_EXTRA_CA_CERTS, …) are meant for
    // the command: handed over renamed, they cost the wrapper nothing (see worker-wrapper.ts).
    const env: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries({ ...process.env, ...this.#env }))
      env[name.startsWith('NODE_') ? `ROLEBOX_WRAPPED_${name}` : name] = value;
    const child = spawn(
      process.execPath,
      ['-e', WORKER_WRAPPER_SCRIPT, files.dir, this.#command, String(maxOutputBytes)],
      {
        detached: true,
        stdio: 'ignore',
        ...(this.#cwd ? { cwd: this.#cwd } : {}),
        env: {
          ...env,
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
    this.#onDispatchPoint?.('after-spawn');
    if (child.pid === undefined) {
      await writeFile(files.stderr.current, `could not start ${process.execPath}`);
      await writeFile(files.exit, '127');
    } else {
      await writeAtomically(files.spawned, String(child.pid));
    }
    if (input.timeoutMs !== undefined) {
      const handle = this.#clock.setTimeout(() => {
        this.#timeouts.delete(taskId);
        void this.#timeOut(taskId, input.timeoutMs as number);
      }, input.timeoutMs);
      this.#timeouts.set(taskId, handle);
    }
    void exited.then(async () => {
      this.#children.delete(taskId);
      const status = await this.getTaskStatus(taskId).catch(() => 'error' as const);
      if (status === 'running' || status === 'pending') {
        // Another wrapper claimed the task (one started by a process that died before it
        // recorded it), or this one was killed and its command lives on: watch the task
        // like one of another process. The timeout stays armed.
        this.#exits.delete(taskId);
        if ((this.#listeners.get(taskId)?.size ?? 0) > 0) this.#watchAdopted(taskId);
        return;
      }
      const timer = this.#timeouts.get(taskId);
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      this.#timeouts.delete(taskId);
      this.#notify(taskId, status);
    });
  }

  async #timeOut(taskId: string, timeoutMs: number): Promise<void> {
    const files = this.#files(taskId);
    const status = await this.getTaskStatus(taskId);
    if (status !== 'running' && status !== 'pending') return;
    await writeFile(files.timedOut, String(timeoutMs));
    await this.#killTask(taskId);
  }

  /**
   * SIGTERM to the task's process group and to every process marked with the task's id
   * (see {@link taskProcesses}), SIGKILL to whatever is left after the grace period;
   * resolves when all of them are gone (not just the wrapper: its children may ignore
   * SIGTERM).
   */
  async #killTask(taskId: string): Promise<void> {
    const files = this.#files(taskId);
    // A wrapper of this instance that has not claimed the task yet leads its own group.
    const pgid = (await readPid(files.pid)) ?? this.#children.get(taskId)?.pid;
    signalTask(pgid, taskId, 'SIGTERM');
    let graceTimer: unknown;
    const grace = new Promise<'grace'>((resolve) => {
      graceTimer = this.#clock.setTimeout(() => resolve('grace'), this.#killGraceMs);
    });
    const killing: { signal?: NodeJS.Signals } = {};
    const gone = waitForTaskDeath(pgid, taskId, killing);
    const first = await Promise.race([gone.then(() => 'gone' as const), grace]);
    this.#clock.clearTimeout(graceTimer);
    if (first === 'grace') {
      // From now on every check also kills what it finds, so a process forked after the
      // first SIGKILL cannot keep the task alive.
      killing.signal = 'SIGKILL';
      signalTask(pgid, taskId, 'SIGKILL');
      await gone;
    }
    await this.#exits.get(taskId)?.exited;
  }

  async #errorReason(files: TaskFiles, status: TaskStatus): Promise<string> {
    if (status === 'cancelled') return 'cancelled';
    const timedOut = await readOptional(files.timedOut);
    if (timedOut !== undefined) return `timed out after ${timedOut}ms`;
    const exit = await readOptional(files.exit);
    if (exit === undefined) return 'worker process died without an exit status';
    let lastLine: string;
    try {
      lastLine =
        (await readTail(files.stderr, STDERR_TAIL_BYTES)).text.trim().split('\n').at(-1) ?? '';
    } catch (error) {
      return `exit code ${exit.trim()} (${describeReadFailure(error)})`;
    }
    if (lastLine.length > REASON_LINE_CHARS) lastLine = `…${lastLine.slice(-REASON_LINE_CHARS)}`;
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

/** How much of the end of stderr is read for the error reason's last line. */
const STDERR_TAIL_BYTES = 64 * 1024;
/** The most characters of stderr's last line in an error reason (it is persisted with the loop). */
const REASON_LINE_CHARS = 1_000;

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException)?.code === 'ENOENT';

/** The file's text, or undefined when it does not exist; any other failure is thrown. */
async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw error;
  }
}

let temporaryFiles = 0;

async function writeAtomically(path: string, text: string): Promise<void> {
  // Unique per call: two dispatchers of one process may write the same file at once.
  const temporary = `${path}.${process.pid}-${++temporaryFiles}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, path);
}

async function readPid(path: string): Promise<number | undefined> {
  const text = await readOptional(path);
  const pid = text === undefined ? Number.NaN : Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** A failed read of worker output, named for an error reason: the file and the cause. */
class OutputReadError extends Error {
  constructor(path: string, cause: unknown) {
    super(`could not read worker output ${path}: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
  }
}

function describeReadFailure(error: unknown): string {
  return error instanceof OutputReadError
    ? error.message
    : `could not read worker output: ${(error as Error)?.message ?? String(error)}`;
}

/** The last `maxBytes` bytes of a file (all of it when shorter), and its size; nothing when missing. */
async function readFileTail(
  path: string,
  maxBytes: number,
): Promise<{ bytes: Buffer; size: number } | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw new OutputReadError(path, error);
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, maxBytes);
    const bytes = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await handle.read(bytes, read, length - read, size - length + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return { bytes: bytes.subarray(0, read), size };
  } catch (error) {
    throw new OutputReadError(path, error);
  } finally {
    await handle.close();
  }
}

/**
 * The kept tail of a task's stdout or stderr (both segments, at most `maxBytes`) as text,
 * and how many bytes the command wrote in all. A tail that starts inside a UTF-8
 * character starts at the next one instead. Throws {@link OutputReadError}.
 */
async function readTail(
  files: TailFiles,
  maxBytes: number,
): Promise<{ text: string; output: RoundOutput }> {
  const current = await readFileTail(files.current, maxBytes);
  const currentBytes = current?.bytes ?? Buffer.alloc(0);
  const previous =
    currentBytes.length < maxBytes
      ? await readFileTail(files.previous, maxBytes - currentBytes.length)
      : undefined;
  let rotated = 0;
  try {
    rotated = Number((await readOptional(files.rotated)) ?? '0') || 0;
  } catch (error) {
    throw new OutputReadError(files.rotated, error);
  }
  let kept = previous ? Buffer.concat([previous.bytes, currentBytes]) : currentBytes;
  const keptBytes = kept.length;
  // The wrapper counts what it rotated out; what is on disk beyond what was read (a file
  // larger than the cap, e.g. from an older rolebox) was cut off too.
  const bytes = Math.max(
    rotated + (current?.size ?? 0),
    (previous?.size ?? 0) + (current?.size ?? 0),
  );
  const truncated = bytes > keptBytes;
  if (truncated) {
    let start = 0;
    while (start < Math.min(3, kept.length) && ((kept[start] as number) & 0xc0) === 0x80) start++;
    kept = kept.subarray(start);
  }
  return { text: kept.toString('utf8'), output: { bytes, keptBytes, truncated } };
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

/** Signals the task's process group and every live process marked with its id. */
function signalTask(pgid: number | undefined, taskId: string, signal: NodeJS.Signals): void {
  if (pgid !== undefined) signalGroup(pgid, signal);
  for (const pid of taskProcesses(taskId, pgid) ?? []) signalProcess(pid, signal);
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
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

/**
 * The live processes of a task (zombies excluded, this process never): the members of
 * group `pgid` and every process whose environment holds `ROLEBOX_TASK_ID=<taskId>`,
 * read from /proc/<pid>/environ. Every worker and its descendants inherit that variable,
 * so this finds those that left the group with `setsid`. Undefined where there is no
 * /proc (not Linux).
 */
export function taskProcesses(taskId: string, pgid?: number): number[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const marker = Buffer.from(`ROLEBOX_TASK_ID=${taskId}`);
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      if (pgid !== undefined && Number(fields[2]) === pgid) {
        found.push(Number(entry));
        continue;
      }
      if (hasEnvironmentEntry(readFileSync(`/proc/${entry}/environ`), marker))
        found.push(Number(entry));
    } catch {
      // Ended while we looked, or not ours to read.
    }
  }
  return found;
}

/** True when the NUL-separated environment block holds exactly the entry `marker`. */
function hasEnvironmentEntry(environ: Buffer, marker: Buffer): boolean {
  for (let at = environ.indexOf(marker); at !== -1; at = environ.indexOf(marker, at + 1)) {
    const end = at + marker.length;
    if ((at === 0 || environ[at - 1] === 0) && (end === environ.length || environ[end] === 0))
      return true;
  }
  return false;
}

/**
 * Resolves once no live process of the task is left: none in group `pgid` and, on Linux,
 * none marked with the task's id. Checked every 20 ms (no event exists for it); while
 * `killing.signal` is set, each check sends it to whatever it finds.
 */
function waitForTaskDeath(
  pgid: number | undefined,
  taskId: string,
  killing: { readonly signal?: NodeJS.Signals },
): Promise<void> {
  const alive = () => {
    const found = taskProcesses(taskId, pgid);
    if (found === undefined) return pgid !== undefined && isGroupAlive(pgid);
    if (killing.signal) for (const pid of found) signalProcess(pid, killing.signal);
    return found.length > 0;
  };
  return new Promise((resolve) => {
    if (!alive()) return resolve();
    const timer = setInterval(() => {
      if (alive()) return;
      clearInterval(timer);
      resolve();
    }, 20);
  });
}
