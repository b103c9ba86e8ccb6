import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runLoadScenario, workerRuns } from './support/passivation-load.js';
import { killTaskGroups, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

// Loops keep going while their sessions passivate (issue 22): 20 sessions with a 3-round
// loop each, a 0.2 s shell worker, at most 5 live sessions and an idleMs shorter than a
// round. A session woken for its worker's end must handle it before it can be passivated
// again, or LRU eviction and the idle sweep undo each other's work forever.

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const SESSIONS = 20;
const ROUNDS = 3;

describe('loops finish while their sessions passivate (real clock, SQLite, shell workers)', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-passivation-load-'));
  });

  afterEach(async () => {
    killTaskGroups(join(dir, 'tasks'));
    await rm(dir, { recursive: true, force: true });
  });

  it.each([50, 150])(
    `${SESSIONS} loops of ${ROUNDS} rounds, maxLiveSessions 5, idleMs %i: all complete, each round's worker run once`,
    async (idleMs) => {
      // Unhindered, the loops take about 3 × 0.2 s each; 60 s leaves room for a loaded machine.
      const outcome = await runLoadScenario(
        { dir, idleMs, sessions: SESSIONS, rounds: ROUNDS },
        60_000,
      );
      expect({ ended: outcome.ended.size, passivated: outcome.passivations > 0 }).toEqual({
        ended: SESSIONS,
        passivated: true,
      });
      expect([...outcome.ended.values()].filter((phase) => phase !== 'complete')).toEqual([]);
      const runs = workerRuns(dir);
      expect(runs.size).toBe(SESSIONS);
      for (const rounds of runs.values()) expect(rounds).toEqual([1, 2, 3]);
    },
  );
});
