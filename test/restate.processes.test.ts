// rolebox on Restate across processes (DESIGN §8): `rolebox restate serve --processes 2`
// shares one port between two endpoint processes behind one server; endpoint processes
// are SIGKILLed at random moments of running loops (the primary starts new ones), and the
// server itself is killed and started again on its base dir. The worker and the event
// sink run in this test process, so every worker run and every note is counted here.
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/restate/index.js';
import { type CliProcess, startCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { type RestateRig, restateUnavailable, startRestateRig } from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate process tests: ${unavailable}`);
const ROUNDS = 6;
/** 20–80 s here alone; room for a loaded machine with another suite beside. */
const KILL_TEST_TIMEOUT_MS = 5 * PROCESS_TEST_TIMEOUT_MS;

/** A small seeded generator (mulberry32): the kill moments differ per run of the seed only. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** User + system CPU ticks a process has used so far (Linux). */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]);
}

describe.skipIf(unavailable !== undefined)('rolebox on Restate: processes', () => {
  let rig: RestateRig;
  let serve: CliProcess;
  /** The endpoint processes alive now (the primary prints each one it starts). */
  let endpointPids: number[] = [];

  beforeAll(async () => {
    rig = await startRestateRig({ sessionsHere: false });
    const port = await freePort();
    serve = startCli(
      [
        'restate',
        'serve',
        '--port',
        String(port),
        '--processes',
        '2',
        '--workers-service',
        'test-worker',
        '--event-sink',
        'test-sink',
        '--delay',
        '0',
        '--register',
        rig.server.adminUrl,
      ],
      { cwd: process.cwd() },
    );
    serve.process.stdout?.on('data', (chunk: Buffer) => {
      for (const match of chunk.toString().matchAll(/serving sessions on \S+ \(pid (\d+)\)/g))
        endpointPids.push(Number(match[1]));
    });
    serve.process.stderr?.on('data', (chunk: Buffer) => {
      for (const match of chunk.toString().matchAll(/endpoint process (\d+) ended/g))
        endpointPids = endpointPids.filter((pid) => pid !== Number(match[1]));
    });
    await serve.line(/registered/);
  }, PROCESS_TEST_TIMEOUT_MS);

  afterEach(() => {
    rig?.answerWith((round) => `round ${round.round} done`);
  });

  afterAll(async () => {
    await killTracked();
    await rig?.stop();
  }, PROCESS_TEST_TIMEOUT_MS);

  /** Starts one loop of ROUNDS rounds in each of these sessions. */
  async function startLoops(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const session = await rig.client.openSession({ id });
      expect((await session.startLoop(`|loop:${ROUNDS}| count ${id}`)).ok).toBe(true);
    }
  }

  /**
   * Waits for every loop to finish, then checks exactly: its rounds, one worker invocation
   * per round, no note twice, and (`workerRunsOnce`) one run of each worker.
   */
  async function expectExactlyOnce(ids: readonly string[], workerRunsOnce = true): Promise<void> {
    await Promise.all(
      ids.map((id) => rig.waitForEvent(id, (event) => event.type === 'loop_finished')),
    );
    for (const id of ids) {
      const { loop } = await rig.client.session(id).view();
      expect(loop?.phase, id).toBe('complete');
      expect(
        loop?.rounds.map((round) => [round.round, round.status]),
        id,
      ).toEqual(Array.from({ length: ROUNDS }, (_, i) => [i + 1, 'completed']));
      // rolebox sent each round to the worker service once.
      const invoked = [...rig.invocations].filter(([key]) => key.startsWith(`${id}/`));
      expect(
        invoked.map(([, seen]) => seen.size),
        id,
      ).toEqual(Array(ROUNDS).fill(1));
      const runs = [...rig.runs].filter(([key]) => key.startsWith(`${id}/`));
      if (workerRunsOnce)
        expect(
          runs.map(([, count]) => count),
          id,
        ).toEqual(Array(ROUNDS).fill(1));
      const notes = rig
        .eventsOf(id)
        .filter((event) => event.type === 'note')
        .map((event) => event.text);
      expect(new Set(notes).size, `${id}: ${notes.join('\n')}`).toBe(notes.length);
      expect(notes).toHaveLength(ROUNDS + 2);
      expect(rig.eventsOf(id).filter((event) => event.type === 'loop_finished')).toHaveLength(1);
    }
  }

  it(
    'two endpoint processes share the sessions: concurrent commands to one are applied one at a time, none lost',
    async () => {
      expect(endpointPids).toHaveLength(2);
      const before = endpointPids.map(cpuTicks);
      const ids = Array.from({ length: 8 }, (_, i) => `shared-${i}`);
      const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
      await Promise.all(
        ids.map(async (id) => {
          const session = await rig.client.openSession({ id });
          await Promise.all(keys.map((key, i) => session.setSlot(key, i)));
        }),
      );
      for (const id of ids)
        expect((await rig.client.session(id).view()).slots).toEqual(
          Object.fromEntries(keys.map((key, i) => [key, i])),
        );
      // Both processes did part of the work.
      const after = endpointPids.map(cpuTicks);
      expect(after.every((ticks, i) => ticks > (before[i] ?? 0))).toBe(true);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'SIGKILLed 20 times at random moments of running loops: every loop has exactly its rounds, each worker ran once, no note twice',
    async () => {
      const ids = Array.from({ length: 4 }, (_, i) => `kill-${i}`);
      const random = seeded(20261201);
      await startLoops(ids);
      let kills = 0;
      while (kills < 20) {
        await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(random() * 120)));
        const alive = endpointPids.filter((pid) => {
          try {
            process.kill(pid, 0);
            return true;
          } catch {
            return false;
          }
        });
        const victim = alive[Math.floor(random() * alive.length)];
        if (victim === undefined) continue;
        process.kill(victim, 'SIGKILL');
        endpointPids = endpointPids.filter((pid) => pid !== victim);
        kills++;
        await serve.line(new RegExp(`endpoint process ${victim} ended`));
      }
      await expectExactlyOnce(ids);
    },
    // Twenty endpoint processes started anew (a Node start each), retries backing off.
    KILL_TEST_TIMEOUT_MS,
  );

  it(
    'the restate-server SIGKILLed mid-loop and started again on its base dir: nothing lost',
    async () => {
      const ids = ['server-kill-0', 'server-kill-1'];
      await startLoops(ids);
      await rig.waitForEvent(
        'server-kill-0',
        (event) => event.type === 'note' && event.text.includes(`round 2/${ROUNDS} completed`),
      );
      await rig.restartServer();
      // A worker's own step (its ctx.run) runs again when the server died before it wrote
      // the step's result down: that is Restate's promise for a step, which is why the
      // shell worker is keyed by round and finds the task it started. What rolebox sends
      // and emits is still exactly once.
      await expectExactlyOnce(ids, false);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
