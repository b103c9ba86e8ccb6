import { describe, expect, it } from 'vitest';
import { createRolebox, type HostEvent, MemorySnapshotStore } from '../src/index.js';
import type { TaskStatus } from '../src/ports/dispatcher.js';
import { ACTIVATION_HOLD_LIMIT_MS } from '../src/runtime/session-runtime.js';
import { ScriptedDispatcher, SimulatedClock, settle } from '../src/testing/index.js';

// A session activated for a wake-up is not passivated again before it has handled it
// (DESIGN §7): otherwise the LRU limit or the idle sweep passivates it while its task's
// status is being read, its wake-up fires again at once (the task has ended), and so on
// forever. A wake-up for nothing must not pin it live either.

/**
 * A scripted dispatcher whose status checks wait while the test holds them (as a real
 * dispatcher reads files), and which, like the command dispatcher, reports a task that has
 * already ended to a new subscriber through such a check.
 */
class SlowStatusDispatcher extends ScriptedDispatcher {
  holding = false;
  /** The next status check fails (the wake-up scheduler then wakes its session anyway). */
  failNext = false;
  readonly #held: (() => void)[] = [];

  override async getTaskStatus(taskId: string): Promise<TaskStatus> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('status unreadable');
    }
    if (this.holding) await new Promise<void>((resolve) => this.#held.push(resolve));
    return super.getTaskStatus(taskId);
  }

  override onTerminated(taskId: string, listener: (status: TaskStatus) => void): () => void {
    const status = this.tasks.find((task) => task.taskId === taskId)?.status;
    if (status === 'running' || status === 'pending') return super.onTerminated(taskId, listener);
    let active = true;
    void this.getTaskStatus(taskId).then((ended) => active && listener(ended));
    return () => {
      active = false;
    };
  }

  /** Answers every status check held so far, and the next ones at once. */
  release(): void {
    this.holding = false;
    for (const resolve of this.#held.splice(0)) resolve();
  }
}

const IDLE_MS = 1_000;

async function boot(options: { maxLiveSessions?: number } = {}) {
  const clock = new SimulatedClock(0);
  const dispatcher = new SlowStatusDispatcher();
  const rb = createRolebox({
    clock,
    dispatcher,
    store: new MemorySnapshotStore(),
    idleMs: IDLE_MS,
    saveDebounceMs: 0,
    ...(options.maxLiveSessions ? { maxLiveSessions: options.maxLiveSessions } : {}),
    limits: { interRoundDelayMs: 0 },
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const lifecycle = (sessionId: string) =>
    events.flatMap((event) =>
      event.type === 'session_activated' && event.sessionId === sessionId
        ? [`activated (${event.trigger})`]
        : event.type === 'session_passivated' && event.sessionId === sessionId
          ? [`passivated (${event.reason})`]
          : [],
    );
  /** How many times session `sessionId` was activated by a wake-up, and passivated. */
  const counts = (sessionId: string) => {
    const seen = lifecycle(sessionId);
    return {
      wokenUp: seen.filter((line) => line === 'activated (wake_up)').length,
      passivated: seen.filter((line) => line.startsWith('passivated')).length,
    };
  };
  const advance = async (ms: number, step = 100) => {
    for (let done = 0; done < ms; done += step) {
      clock.advance(step);
      await settle();
    }
  };
  return { rb, clock, dispatcher, lifecycle, counts, advance };
}

describe('a session activated for a wake-up is held live until it has handled it', () => {
  it('woken by its worker’s end: neither the LRU limit nor the idle sweep passivates it before its loop has the task’s status', async () => {
    const { rb, dispatcher, lifecycle, advance } = await boot({ maxLiveSessions: 1 });
    const a = await rb.openSession({ id: 'A' });
    a.startLoop('|loop:2| a');
    await settle();
    const b = await rb.openSession({ id: 'B' });
    b.startLoop('|loop:2| b');
    await settle();
    expect(rb.sessions()).toEqual(['B']);

    dispatcher.holding = true;
    dispatcher.complete(dispatcher.task(1).taskId, 'a1');
    await settle();
    expect(lifecycle('A')).toEqual(['passivated (lru)', 'activated (wake_up)']);
    // Another activation asks the LRU limit for room, and idle sweeps go by: A stays.
    await rb.openSession({ id: 'C' });
    await settle();
    await advance(3 * IDLE_MS);
    expect(rb.sessions()).toContain('A');
    expect(lifecycle('A')).toEqual(['passivated (lru)', 'activated (wake_up)']);

    dispatcher.release();
    await settle();
    // Handled: round 1 summarized, round 2 dispatched; A may go again, and does.
    expect(dispatcher.tasks.map((task) => task.key)).toEqual([
      expect.stringMatching(/:1$/),
      expect.stringMatching(/:1$/),
      expect.stringMatching(/:2$/),
    ]);
    await advance(2 * IDLE_MS);
    expect(rb.sessions()).not.toContain('A');
    expect(lifecycle('A')).toEqual([
      'passivated (lru)',
      'activated (wake_up)',
      expect.stringMatching(/^passivated/),
    ]);
    await rb.stop();
  });

  it('a wake-up for nothing (its task still running) does not pin the session: it goes at the next sweep', async () => {
    const { rb, dispatcher, lifecycle, counts, advance } = await boot();
    const a = await rb.openSession({ id: 'A' });
    a.startLoop('|loop:2| a');
    await settle();
    // The wake-up's status check fails: the session is woken, and its task is still running.
    dispatcher.failNext = true;
    await advance(IDLE_MS + 100);
    // In the order it happened, though the wake-up came before the claim was released.
    expect(lifecycle('A')).toEqual(['passivated (idle)', 'activated (wake_up)']);
    expect({ live: rb.sessions(), ...counts('A') }).toEqual({
      live: ['A'],
      wokenUp: 1,
      passivated: 1,
    });
    await advance(2 * IDLE_MS);
    expect({ live: rb.sessions(), ...counts('A') }).toEqual({
      live: [],
      wokenUp: 1,
      passivated: 2,
    });
    expect(dispatcher.task(1).status).toBe('running');
    await rb.stop();
  });

  it(`a status check that never answers holds it ${ACTIVATION_HOLD_LIMIT_MS} ms at most`, async () => {
    const { rb, dispatcher, counts, advance } = await boot();
    const a = await rb.openSession({ id: 'A' });
    a.startLoop('|loop:2| a');
    await settle();
    // Woken for nothing (its status check failed), and the loop's own check never answers.
    dispatcher.failNext = true;
    dispatcher.holding = true;
    await advance(IDLE_MS + 100);
    expect({ live: rb.sessions(), ...counts('A') }).toEqual({
      live: ['A'],
      wokenUp: 1,
      passivated: 1,
    });
    await advance(ACTIVATION_HOLD_LIMIT_MS - 2 * IDLE_MS, 1_000);
    expect(rb.sessions()).toEqual(['A']);
    await advance(3 * IDLE_MS, 1_000);
    expect({ live: rb.sessions(), ...counts('A') }).toEqual({
      live: [],
      wokenUp: 1,
      passivated: 2,
    });
    dispatcher.release();
    await rb.stop();
  });
});
