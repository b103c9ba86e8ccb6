/**
 * Named points where a test can have a process killed with SIGKILL, to prove that a kill
 * there loses nothing and repeats nothing (SPEC §6).
 *
 * `ROLEBOX_CRASH_AT=<point>[:<n>]` kills the process the n-th time (default: the first) it
 * reaches `<point>`. Unset, it does nothing. For tests only; never set it in production.
 * The points are listed where they are reached: the `rolebox` command's (src/cli/crash-points.ts)
 * and the effect runner's (`effect-saved`: an effect's step saved, before its handler runs;
 * `effect-running`: its handler called, not returned; `effect-result-saved`: its result
 * recorded and saved, not applied; src/runtime/session-effect-runner.ts), the deadline
 * timers' (`request-expired`: an approval request's expiry applied, not saved;
 * src/rolebox/rolebox.ts), and a tool held for approval's (`tool-approved`: its request
 * approved and saved, the tool not run; `tool-ran`: the tool run, its output not recorded;
 * src/ai/require-approval.ts).
 */
export function crashPoint(point: string): void {
  const wanted = crashAt();
  if (wanted === undefined || wanted === '') return;
  const [name, nth = '1'] = wanted.split(':');
  if (name !== point) return;
  const seen = (reached.get(point) ?? 0) + 1;
  reached.set(point, seen);
  const proc = globalThis as unknown as {
    process: { pid: number; kill(pid: number, signal: string): void };
  };
  if (seen === Number(nth)) proc.process.kill(proc.process.pid, 'SIGKILL');
}

const reached = new Map<string, number>();

/** `ROLEBOX_CRASH_AT`, read once: a process is started with it (reading `process.env` is a call into C++ each time, on the effect runner's path). */
let wanted: { readonly value: string | undefined } | undefined;

function crashAt(): string | undefined {
  wanted ??= {
    value: (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env
      ?.ROLEBOX_CRASH_AT,
  };
  return wanted.value;
}
