import { describe, expect, it } from 'vitest';
import { createRolebox, type HostEvent, MemorySnapshotStore } from '../src/index.js';
import type { Clock, TimerHandle } from '../src/ports/clock.js';
import { ScriptedDispatcher, SimulatedClock, settle } from '../src/testing/index.js';

// A deadline is reached when its time has come on the clock that armed it, whatever the
// timer's rounding. Node's setTimeout fires up to a millisecond before Date.now() reaches
// the due time, and late under load: these clocks do the same, deterministically.

/** A simulated clock whose timers fire `skewMs` off their due time (negative: early). */
class SkewedClock implements Clock {
  readonly inner = new SimulatedClock(1_000_000);
  constructor(readonly skewMs: number) {}
  now(): number {
    return this.inner.now();
  }
  setTimeout(callback: () => void, delayMs: number): TimerHandle {
    return this.inner.setTimeout(callback, delayMs + this.skewMs);
  }
  clearTimeout(handle: TimerHandle): void {
    this.inner.clearTimeout(handle);
  }
}

const DELAY_MS = 1_000;
const ROUND_TIMEOUT_MS = 5_000;

/** A rolebox on `clock` running one 3-round loop; the dispatcher ends rounds when `answer` says. */
async function oneLoop(clock: SkewedClock, dispatcher: ScriptedDispatcher, store = false) {
  const rb = createRolebox({
    clock,
    dispatcher,
    limits: { interRoundDelayMs: DELAY_MS, roundTimeoutMs: ROUND_TIMEOUT_MS },
    ...(store ? { store: new MemorySnapshotStore(), idleMs: 200, saveDebounceMs: 0 } : {}),
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  expect(session.startLoop('|loop:3| step').ok).toBe(true);
  await settle();
  /** Moves the clock in 10 ms steps (each step's answers settled), up to `ms`. */
  const run = async (ms: number) => {
    for (let done = 0; done < ms; done += 10) {
      clock.inner.advance(10);
      await settle();
    }
  };
  const finished = () =>
    events.flatMap((event) => (event.type === 'loop_finished' ? [event.phase] : []));
  return { rb, run, finished, events };
}

describe.each([
  ['1 ms early', -1],
  ['37 ms late', 37],
])('timers that fire %s', (_name, skewMs) => {
  it.each([
    ['live', false],
    ['passivated while it waits', true],
  ])('the inter-round delay is taken and the loop finishes (%s)', async (_mode, store) => {
    const clock = new SkewedClock(skewMs);
    const dispatcher = new ScriptedDispatcher((input) => `round ${input.round}`);
    const { rb, run, finished, events } = await oneLoop(clock, dispatcher, store);
    const started = clock.now();
    await run(3 * DELAY_MS);
    expect(finished()).toEqual(['complete']);
    expect(events.some((event) => event.type === 'session_passivated')).toBe(store);
    expect(dispatcher.tasks.map((task) => task.input.round)).toEqual([1, 2, 3]);
    // The delay is never cut short: round n+1 starts a full delay after round n.
    expect(clock.now() - started).toBeGreaterThanOrEqual(2 * DELAY_MS);
    await rb.stop();
  });

  it.each([
    ['live', false],
    ['passivated while it waits', true],
  ])('a worker that never ends is timed out and cancelled (%s)', async (_mode, store) => {
    const clock = new SkewedClock(skewMs);
    const dispatcher = new ScriptedDispatcher(); // the worker never ends
    const { rb, run, finished, events } = await oneLoop(clock, dispatcher, store);
    await run(ROUND_TIMEOUT_MS - 20);
    expect(events.some((event) => event.type === 'session_passivated')).toBe(store);
    expect(finished()).toEqual([]);
    await run(200);
    expect(finished()).toEqual(['error']);
    expect(dispatcher.cancelled).toEqual([dispatcher.task(1).taskId]);
    const loop = rb.session('S').view().loop;
    expect(loop?.errorReason).toBe('round timeout');
    // Timed out at its deadline, never before it.
    expect(loop?.rounds[0]?.completedAt).toBeGreaterThanOrEqual(loop?.roundDeadlineAt as number);
    await rb.stop();
  });
});
