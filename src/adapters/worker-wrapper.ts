import type * as ChildProcessModule from 'node:child_process';
import type * as FsModule from 'node:fs';
import type * as OsModule from 'node:os';

/** The Node modules the wrapper uses, handed in because it runs as a standalone script. */
interface WrapperModules {
  readonly fs: typeof FsModule;
  readonly childProcess: typeof ChildProcessModule;
  readonly os: typeof OsModule;
}

/**
 * The first process of every worker task (the leader of its process group). It runs as
 * `node -e`, so it may use nothing but its arguments: no imports, no outer names.
 *
 * Arguments: the task folder, the shell command, the most bytes of stdout (and of stderr)
 * to keep. In order, it
 * 1. claims the task and publishes its pid in one atomic step (`link()` of a file holding
 *    the pid to `pid` fails when `pid` exists): of two wrappers started for one task (a
 *    process that re-adopts a task whose first wrapper had not claimed yet) exactly one
 *    runs the command; the other leaves without touching anything;
 * 2. leaves without running the command when the task was cancelled, timed out or failed
 *    to start before the claim (the canceller found no pid to kill);
 * 3. runs the command with the prompt file as stdin and keeps the tail of its stdout and
 *    stderr in two segments each (`stdout.prev` + `stdout`), never more than the cap on
 *    disk; `<name>.rotated` counts the bytes rotated out, so the total is that count plus
 *    the current segment's size;
 * 4. writes the exit status atomically (128 + signal number when the shell was killed).
 */
function workerWrapper(
  { fs, childProcess, os }: WrapperModules,
  [dir, command, maxOutputBytes]: readonly string[],
): void {
  const cap = Number(maxOutputBytes);
  const path = (name: string) => `${dir}/${name}`;
  const writeAtomically = (name: string, text: string) => {
    const temporary = path(`${name}.${process.pid}.tmp`);
    fs.writeFileSync(temporary, text);
    fs.renameSync(temporary, path(name));
  };

  const claim = path(`pid.${process.pid}.tmp`);
  fs.writeFileSync(claim, String(process.pid));
  try {
    fs.linkSync(claim, path('pid'));
  } catch (error) {
    fs.unlinkSync(claim);
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  fs.unlinkSync(claim);
  if (['cancelled', 'timed-out', 'exit'].some((name) => fs.existsSync(path(name)))) return;

  const keepTail = (name: string) => {
    // A cap of 1 byte cannot be split in two: then the one segment is simply restarted.
    const segment = cap >= 2 ? Math.floor(cap / 2) : cap;
    let fd = fs.openSync(path(name), 'w');
    let inSegment = 0;
    let rotated = 0;
    return (chunk: Buffer) => {
      let offset = 0;
      while (offset < chunk.length) {
        if (inSegment === segment) {
          fs.closeSync(fd);
          if (cap >= 2) fs.renameSync(path(name), path(`${name}.prev`));
          fd = fs.openSync(path(name), 'w');
          rotated += inSegment;
          inSegment = 0;
          writeAtomically(`${name}.rotated`, String(rotated));
        }
        const written = fs.writeSync(
          fd,
          chunk,
          offset,
          Math.min(segment - inSegment, chunk.length - offset),
        );
        offset += written;
        inSegment += written;
      }
    };
  };

  // The dispatcher hands the variables that configure Node (NODE_OPTIONS,
  // NODE_EXTRA_CA_CERTS, …) over renamed, so that they reach the command as they were but
  // do not slow down or break this wrapper.
  const env: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(process.env))
    env[name.startsWith('ROLEBOX_WRAPPED_NODE_') ? name.slice('ROLEBOX_WRAPPED_'.length) : name] =
      value;

  const stdout = keepTail('stdout');
  const stderr = keepTail('stderr');
  let finished = false;
  const finish = (code: number) => {
    if (finished) return;
    finished = true;
    writeAtomically('exit', String(code));
    // A background process may still hold the pipes open: it must not keep this alive.
    process.exit(0);
  };
  const exitCode = (code: number | null, signal: NodeJS.Signals | null) =>
    code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0);

  const prompt = fs.openSync(path('prompt'), 'r');
  const child = childProcess.spawn('/bin/sh', ['-c', command as string], {
    stdio: [prompt, 'pipe', 'pipe'],
    env,
  });
  fs.closeSync(prompt);
  child.stdout?.on('data', stdout);
  child.stderr?.on('data', stderr);
  child.on('error', (error) => {
    stderr(Buffer.from(`could not start /bin/sh: ${error.message}\n`));
    finish(127);
  });
  // Output still in the pipes arrives before 'close'. A background process that keeps
  // them open would delay 'close' for ever, so after 'exit' it gets a second at most.
  child.on('exit', (code, signal) => {
    setTimeout(() => finish(exitCode(code, signal)), 1_000);
  });
  child.on('close', (code, signal) => finish(exitCode(code, signal)));
}

/**
 * The worker wrapper as a `node -e` script; its arguments follow it on the command line
 * (task folder, command, most output bytes to keep). `__name` is defined because loaders
 * such as tsx insert calls to it into the source of named inner functions.
 */
export const WORKER_WRAPPER_SCRIPT = `var __name = (target) => target;
(${workerWrapper.toString()})({ fs: require('node:fs'), childProcess: require('node:child_process'), os: require('node:os') }, process.argv.slice(1));`;
