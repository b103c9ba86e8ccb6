import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import type { TimedRuntimeEvent } from '../machines/index.js';
import {
  createRolebox,
  defineFunction,
  type HostEvent,
  MemorySnapshotStore,
  type RoleboxLimits,
} from '../src/index.js';
import { decodeEnvelope } from '../src/persistence/envelope.js';
import { comparableSnapshot } from '../src/persistence/journal.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { sendModelEvent, sessionModelPaths } from './support/session-model.js';

// Sessions as virtual actors (DESIGN §7): a session with no command for `idleMs`, or beyond
// `maxLiveSessions`, is passivated (saved, stopped, dropped from memory) and activated
// again by a command, an open, or its wake-up (a deadline, its worker's end). Everything
// runs on the simulated clock; a passivated session must behave exactly as a live one.

const IDLE_MS = 1_000;
const approval = defineFunction({
  name: 'approval',
  gate: 'signal_observed(answer)',
  continue_until: 'signal_observed(answer)',
});

/** A store and a dispatcher that outlive the roleboxes ("processes") started on them. */
function world(answer?: ConstructorParameters<typeof ScriptedDispatcher>[0]) {
  return { store: new MemorySnapshotStore(), dispatcher: new ScriptedDispatcher(answer) };
}

async function boot(
  w: ReturnType<typeof world>,
  options: {
    idleMs?: number;
    maxLiveSessions?: number;
    limits?: Partial<RoleboxLimits>;
    at?: number;
    store?: boolean;
    /** Off for the tests of idle and LRU passivation of a gated session (else it goes at its save). */
    passivateWhenWaiting?: boolean;
  } = {},
) {
  const clock = new SimulatedClock(options.at ?? 0);
  const rb = createRolebox({
    ...(options.store === false ? {} : { store: w.store }),
    dispatcher: w.dispatcher,
    clock,
    ids: seededIdSource(7),
    functions: [approval],
    idleMs: options.idleMs ?? Number.POSITIVE_INFINITY,
    ...(options.maxLiveSessions ? { maxLiveSessions: options.maxLiveSessions } : {}),
    ...(options.passivateWhenWaiting === false ? { passivateWhenWaiting: false } : {}),
    limits: { interRoundDelayMs: 0, ...options.limits },
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  /** Advances in small steps, so that each wake-up's activation settles before the next. */
  const run = async (ms: number, step = 250) => {
    for (let done = 0; done < ms; done += step) await advance(step);
  };
  const lifecycle = () =>
    events.flatMap((event) =>
      event.type === 'session_activated'
        ? [`activated ${event.sessionId} (${event.trigger})`]
        : event.type === 'session_passivated'
          ? [`passivated ${event.sessionId} (${event.reason})`]
          : [],
    );
  return { rb, clock, events, advance, run, lifecycle };
}

/** The stored loop state of session `id`: its phase as the store has it. */
function storedLoopValue(store: MemorySnapshotStore, id: string): unknown {
  const { snapshot } = decodeEnvelope(id, store.records.get(id) as string) as {
    snapshot: { children: Record<string, { snapshot: { value: unknown } }> };
  };
  const loop = Object.entries(snapshot.children).find(([childId]) => childId === 'loop');
  return loop?.[1].snapshot.value;
}

/** What a finished loop did, to compare a passivated run with a live one. */
function loopOutcome(b: Awaited<ReturnType<typeof boot>>, w: ReturnType<typeof world>) {
  const loop = b.rb.session('S').view().loop;
  return {
    phase: loop?.phase,
    current: loop?.current,
    rounds: loop?.rounds.map((round) => ({
      round: round.round,
      status: round.status,
      workerTaskId: round.workerTaskId,
    })),
    lastSummary: loop?.lastSummary,
    dispatched: w.dispatcher.dispatchCalls,
    tasks: w.dispatcher.tasks.map((task) => task.key),
  };
}

describe('a session passivated mid-loop is woken and finishes with exactly N rounds', () => {
  /**
   * Drives a 3-round loop whose worker the test ends by hand, once with passivation and
   * once without, and returns both outcomes and what the passivated one went through.
   */
  async function roundsInFlight(passivate: boolean) {
    const w = world();
    const b = await boot(w, { idleMs: passivate ? IDLE_MS : Number.POSITIVE_INFINITY });
    const session = await b.rb.openSession({ id: 'S' });
    expect(session.startLoop('|loop:3| step').ok).toBe(true);
    await b.advance(0);
    const whilePassivated: unknown[] = [];
    for (let round = 1; round <= 3; round++) {
      await b.run(2 * IDLE_MS);
      whilePassivated.push({ live: b.rb.sessions(), stored: storedLoopValue(w.store, 'S') });
      w.dispatcher.complete(w.dispatcher.task(round).taskId, `round ${round} done`);
      await b.advance(0);
    }
    return { outcome: loopOutcome(b, w), whilePassivated, lifecycle: b.lifecycle() };
  }

  it('a round in flight: the worker’s end activates the session', async () => {
    const live = await roundsInFlight(false);
    const passivated = await roundsInFlight(true);
    expect(live.outcome.phase).toBe('complete');
    expect(passivated.outcome).toEqual(live.outcome);
    expect(passivated.outcome.dispatched).toBe(3);
    // Between rounds the session was out of memory, its loop stored awaiting its worker.
    expect(passivated.whilePassivated).toEqual(
      Array.from({ length: 3 }, () => ({ live: [], stored: 'awaiting_worker' })),
    );
    expect(
      live.whilePassivated.every((seen) => (seen as { live: string[] }).live.length === 1),
    ).toBe(true);
    expect(passivated.lifecycle).toEqual([
      'passivated S (idle)',
      'activated S (wake_up)',
      'passivated S (idle)',
      'activated S (wake_up)',
      'passivated S (idle)',
      'activated S (wake_up)',
    ]);
    expect(live.lifecycle).toEqual([]);
  });

  it('the inter-round delay pending: its deadline activates the session', async () => {
    const run = async (passivate: boolean) => {
      const w = world((input) => `round ${input.round} done`);
      const b = await boot(w, {
        idleMs: passivate ? IDLE_MS : Number.POSITIVE_INFINITY,
        limits: { interRoundDelayMs: 5_000 },
      });
      const session = await b.rb.openSession({ id: 'S' });
      session.startLoop('|loop:3| step');
      await b.advance(0);
      await b.run(2_000);
      const midDelay = { live: b.rb.sessions(), stored: storedLoopValue(w.store, 'S') };
      await b.run(20_000);
      return { outcome: loopOutcome(b, w), midDelay, lifecycle: b.lifecycle() };
    };
    const live = await run(false);
    const passivated = await run(true);
    expect(live.outcome.phase).toBe('complete');
    expect(passivated.outcome).toEqual(live.outcome);
    expect(passivated.outcome.dispatched).toBe(3);
    expect(passivated.midDelay).toEqual({ live: [], stored: { dispatching: 'waiting' } });
    expect(passivated.lifecycle.filter((line) => line === 'activated S (wake_up)')).toHaveLength(2);
  });

  it('a round timeout pending: the deadline activates the session and the timeout is taken', async () => {
    const run = async (passivate: boolean) => {
      const w = world(); // the worker never ends
      const b = await boot(w, {
        idleMs: passivate ? IDLE_MS : Number.POSITIVE_INFINITY,
        limits: { roundTimeoutMs: 3_000 },
      });
      const session = await b.rb.openSession({ id: 'S' });
      session.startLoop('|loop:3| step');
      await b.advance(0);
      await b.run(2_000);
      const beforeTimeout = b.rb.sessions();
      await b.run(30_000);
      return {
        outcome: loopOutcome(b, w),
        cancelled: w.dispatcher.cancelled,
        beforeTimeout,
        lifecycle: b.lifecycle(),
      };
    };
    const live = await run(false);
    const passivated = await run(true);
    expect(passivated.beforeTimeout).toEqual([]);
    expect(live.beforeTimeout).toEqual(['S']);
    expect(passivated.outcome).toEqual(live.outcome);
    expect(passivated.cancelled).toEqual(live.cancelled);
    expect(live.cancelled.length).toBeGreaterThan(0);
    expect(passivated.lifecycle[0]).toBe('passivated S (idle)');
    expect(passivated.lifecycle[1]).toBe('activated S (wake_up)');
  });

  it('killed while passivated: the next process arms the stored wake-up and finishes the loop', async () => {
    const w = world();
    const first = await boot(w, { idleMs: IDLE_MS });
    const session = await first.rb.openSession({ id: 'S' });
    session.startLoop('|loop:3| step');
    await first.advance(0);
    await first.run(2 * IDLE_MS);
    expect(first.rb.sessions()).toEqual([]);
    // The process dies while the session is passivated: nothing is flushed or released.
    first.rb.system.stop();

    const second = await boot(w, { idleMs: IDLE_MS, at: first.clock.now() });
    const report = await second.rb.start();
    expect(report.wakeUps).toBe(1);
    expect(second.rb.sessions()).toEqual([]);
    for (let round = 1; round <= 3; round++) {
      w.dispatcher.complete(w.dispatcher.task(round).taskId, `round ${round} done`);
      await second.advance(0);
      await second.run(2 * IDLE_MS);
    }
    expect(second.lifecycle().filter((line) => line.startsWith('activated'))).toEqual([
      'activated S (wake_up)',
      'activated S (wake_up)',
      'activated S (wake_up)',
    ]);
    const loop = second.rb.session('S').view().loop;
    expect(loop?.phase).toBe('complete');
    expect(loop?.rounds.map((round) => `${round.round}:${round.status}`)).toEqual([
      '1:completed',
      '2:completed',
      '3:completed',
    ]);
    expect(loop?.lastSummary).toContain('round 3 done');
    expect(w.dispatcher.dispatchCalls).toBe(3);
  });
});

describe('passivation', () => {
  it('the least recently used session goes when there are more than maxLiveSessions', async () => {
    const w = world();
    const b = await boot(w, { maxLiveSessions: 2, passivateWhenWaiting: false });
    await b.rb.openSession({ id: 'A' });
    await b.rb.openSession({ id: 'B' });
    await b.rb.openSession({ id: 'C' });
    await b.advance(0);
    expect(b.rb.sessions()).toEqual(['B', 'C']);
    // A command to A activates it; B is now the least recently used.
    b.rb.session('A').activate('approval');
    await b.advance(0);
    expect(b.rb.sessions()).toEqual(['C', 'A']);
    expect(b.lifecycle()).toEqual([
      'passivated A (lru)',
      'activated A (command)',
      'passivated B (lru)',
    ]);
    expect(
      b.rb
        .session('A')
        .view()
        .functions.map((fn) => fn.phase),
    ).toEqual(['gated']);
  });

  it('a burst of activations over the limit passivates the least recently used, each once', async () => {
    const w = world();
    const first = await boot(w, { passivateWhenWaiting: false });
    for (const id of ['A', 'B', 'C', 'D', 'E', 'F']) await first.rb.openSession({ id });
    await first.rb.stop();
    const b = await boot(w, { maxLiveSessions: 2, passivateWhenWaiting: false });
    // Activated one after another in one synchronous burst: each passivation is still in
    // flight when the next activation looks for the least recently used.
    for (const id of ['A', 'B', 'C', 'D', 'E', 'F']) b.rb.session(id).view();
    await b.advance(0);
    expect(b.rb.sessions()).toEqual(['E', 'F']);
    expect(b.lifecycle().filter((line) => line.startsWith('passivated'))).toEqual([
      'passivated A (lru)',
      'passivated B (lru)',
      'passivated C (lru)',
      'passivated D (lru)',
    ]);
  });

  it('a session with no command for idleMs goes; one used meanwhile stays', async () => {
    const w = world();
    const b = await boot(w, { idleMs: IDLE_MS, passivateWhenWaiting: false });
    await b.rb.openSession({ id: 'A' });
    await b.advance(600);
    const other = await b.rb.openSession({ id: 'B' });
    await b.advance(600);
    other.activate('approval');
    await b.run(1_000, 100);
    expect(b.rb.sessions()).toEqual(['B']);
    await b.run(1_000, 100);
    expect(b.rb.sessions()).toEqual([]);
    expect(b.lifecycle()).toEqual(['passivated A (idle)', 'passivated B (idle)']);
  });

  it('a session waiting for a human (a gated function) is passivated and resumed by the answer', async () => {
    const w = world();
    const b = await boot(w, { idleMs: IDLE_MS });
    const session = await b.rb.openSession({ id: 'T' });
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { reason: 'refund' } });
    await b.run(2 * IDLE_MS);
    expect(b.rb.sessions()).toEqual([]);
    // The handle taken before still works: the answer activates the session.
    expect(session.signal({ type: 'answer' }).text).toContain('recorded on 1 function(s)');
    expect(b.rb.sessions()).toEqual(['T']);
    expect(session.idle().completed).toEqual(['approval']);
  });

  it('without a store nothing is passivated (there would be nowhere to keep it)', async () => {
    const w = world();
    const b = await boot(w, { idleMs: IDLE_MS, maxLiveSessions: 1, store: false });
    await b.rb.openSession({ id: 'A' });
    await b.rb.openSession({ id: 'B' });
    await b.run(5 * IDLE_MS);
    expect(b.rb.sessions()).toEqual(['A', 'B']);
    expect(b.lifecycle()).toEqual([]);
  });

  it('activation by an open: openSession({ id }) of a passivated session brings it back', async () => {
    const w = world();
    const b = await boot(w, { idleMs: IDLE_MS });
    (await b.rb.openSession({ id: 'A' })).activate('approval');
    await b.run(2 * IDLE_MS);
    expect(b.rb.sessions()).toEqual([]);
    const again = await b.rb.openSession({ id: 'A' });
    expect(again.view().functions.map((fn) => `${fn.name}: ${fn.phase}`)).toEqual([
      'approval: gated',
    ]);
    // A gated session goes once saved (passivateWhenWaiting), before idleMs.
    expect(b.lifecycle()).toEqual(['passivated A (waiting)', 'activated A (open)']);
    // Live now: a second open is refused, the get-or-open form returns it.
    await expect(b.rb.openSession({ id: 'A' })).rejects.toMatchObject({
      code: 'duplicate_session',
    });
    expect((await b.rb.openSession({ id: 'A', ifOpen: 'reuse' })).id).toBe('A');
  });

  it('a session that is dispatching a round stays live (its step is not finished)', async () => {
    const w = world();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const dispatchRound = w.dispatcher.dispatchRound.bind(w.dispatcher);
    w.dispatcher.dispatchRound = async (input, key) => {
      await held;
      return dispatchRound(input, key);
    };
    const b = await boot(w, { idleMs: IDLE_MS });
    (await b.rb.openSession({ id: 'S' })).startLoop('|loop:1| step');
    await b.run(3 * IDLE_MS);
    expect(b.rb.sessions()).toEqual(['S']);
    release();
    await b.advance(0);
    await b.run(2 * IDLE_MS);
    expect(b.rb.sessions()).toEqual([]);
    expect(storedLoopValue(w.store, 'S')).toBe('awaiting_worker');
  });
});

describe('a command to a passivated session behaves exactly as to a live one', () => {
  const paths = sessionModelPaths();
  for (const path of paths.filter((candidate) => candidate.steps.length > 1)) {
    const steps = path.steps.slice(1).map(({ event }) => event as TimedRuntimeEvent);
    it(`${steps.map((event) => event.type).join(' → ')} ⇒ ${JSON.stringify(path.state.value)}`, async () => {
      const live = await boot(world());
      const passive = await boot(world(), { idleMs: IDLE_MS });
      const a = await live.rb.openSession({ id: 'S' });
      const b = await passive.rb.openSession({ id: 'S' });
      for (const event of steps) {
        await live.run(2 * IDLE_MS);
        await passive.run(2 * IDLE_MS);
        expect(passive.rb.sessions()).toEqual([]);
        expect(sendModelEvent(b, event)).toEqual(sendModelEvent(a, event));
        const snapshot = (rb: typeof live.rb) =>
          comparableSnapshot(rb.system.system.get('session:S')?.getPersistedSnapshot());
        expect(snapshot(passive.rb)).toEqual(snapshot(live.rb));
      }
      const actor = passive.rb.system.system.get('session:S');
      expect((actor?.getSnapshot() as AnyMachineSnapshot | undefined)?.value).toEqual(
        path.state.value,
      );
      expect(passive.lifecycle().filter((line) => line.startsWith('activated'))).toHaveLength(
        steps.length,
      );
    });
  }
});
