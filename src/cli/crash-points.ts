/**
 * Named points where a test can have the `rolebox` command killed with SIGKILL, to prove
 * that a kill there loses nothing and repeats nothing (SPEC §6).
 *
 * `ROLEBOX_CRASH_AT=<point>[:<n>]` kills the process the n-th time (default: the first) it
 * reaches `<point>`. The points: `ack` (right after `» session …, loop …`), `note` (right
 * after a progress note is printed), `round` (right after `» round n/N running`), `send-saved` (`rolebox send`: its
 * command stored, its answer not yet printed), and the command dispatcher's `before-key`, `before-spawn`, `after-spawn` (a worker being started).
 * Unset, it does nothing. For tests only; never set it in production.
 */
export function crashPoint(point: string): void {
  const wanted = process.env.ROLEBOX_CRASH_AT;
  if (wanted === undefined || wanted === '') return;
  const [name, nth = '1'] = wanted.split(':');
  if (name !== point) return;
  const seen = (reached.get(point) ?? 0) + 1;
  reached.set(point, seen);
  if (seen === Number(nth)) process.kill(process.pid, 'SIGKILL');
}

const reached = new Map<string, number>();
