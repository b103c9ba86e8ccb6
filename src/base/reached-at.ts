/**
 * The time to answer a timer with when it fires: its due time or now, whichever is later.
 *
 * A timer firing is the clock saying the time has come. Node's `setTimeout` may fire while
 * `Date.now()` is still a millisecond short of the due time (and Restate may run a delayed
 * call on an endpoint whose clock is behind); answered with that earlier time, a guard that
 * is kept strict against stale answers (`at >= deadline`) would refuse it, and nothing would
 * ever arm the timer again. A late timer answers with the later time.
 */
export function reachedAt(due: number, now: number): number {
  return Math.max(due, now);
}
