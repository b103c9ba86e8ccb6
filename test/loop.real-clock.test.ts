import { describe, expect, it } from 'vitest';
import { createRolebox, type HostEvent } from '../src/index.js';
import { ScriptedDispatcher } from '../src/testing/index.js';

// Loops on the real clock: Node's setTimeout may fire while Date.now() is still a
// millisecond short of the due time (and late under load). Every loop test elsewhere runs
// on the simulated clock, which fires exactly on time, so only this file sees it.

const LOOPS = 40;
const ROUNDS = 4;
const RUNS = 10;

/** Starts LOOPS loops of ROUNDS instant rounds at once; resolves with those that finished, and how many rounds each dispatched. */
async function runLoops(waitMs: number) {
  const dispatcher = new ScriptedDispatcher((input) => `round ${input.round}`);
  const rb = createRolebox({ dispatcher, limits: { interRoundDelayMs: 50 } });
  const finished = new Map<string, string>();
  let allDone: () => void = () => {};
  const done = new Promise<void>((resolve) => (allDone = resolve));
  rb.on('*', (event: HostEvent) => {
    if (event.type !== 'loop_finished') return;
    finished.set(event.sessionId, event.phase);
    if (finished.size === LOOPS) allDone();
  });
  await rb.start();
  for (let i = 0; i < LOOPS; i++) {
    const session = await rb.openSession({ id: `S${i}` });
    expect(session.startLoop(`|loop:${ROUNDS}| step ${i}`).ok).toBe(true);
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
  clearTimeout(timer);
  await rb.stop();
  const roundsByLoop = new Map<string, number[]>();
  for (const task of dispatcher.tasks) {
    const rounds = roundsByLoop.get(task.input.loopId) ?? [];
    rounds.push(task.input.round);
    roundsByLoop.set(task.input.loopId, rounds);
  }
  return { finished, roundsByLoop };
}

describe('loops on the real clock', () => {
  it(`${LOOPS} concurrent loops of ${ROUNDS} rounds with a 50 ms inter-round delay all finish, every round once (${RUNS} runs)`, async () => {
    // Per run: loops not finished, loops not complete, loops whose rounds were not 1..ROUNDS once each.
    const runs: { stuck: number; notComplete: number; wrongRounds: number }[] = [];
    const everyRound = Array.from({ length: ROUNDS }, (_, i) => i + 1);
    for (let run = 0; run < RUNS; run++) {
      // Each loop needs about (ROUNDS - 1) × 50 ms; 10 s leaves room for a loaded machine.
      const { finished, roundsByLoop } = await runLoops(10_000);
      runs.push({
        stuck: LOOPS - finished.size,
        notComplete: [...finished.values()].filter((phase) => phase !== 'complete').length,
        wrongRounds:
          LOOPS -
          [...roundsByLoop.values()].filter(
            (rounds) => JSON.stringify(rounds) === JSON.stringify(everyRound),
          ).length,
      });
    }
    expect(runs).toEqual(
      Array.from({ length: RUNS }, () => ({ stuck: 0, notComplete: 0, wrongRounds: 0 })),
    );
  }, 90_000);
});
