import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRolebox, type HostEvent } from '../../src/index.js';
import { TERMINAL_LOOP_PHASES } from '../../src/loop/types.js';
import { CommandDispatcher } from '../../src/node.js';
import { SqliteSnapshotStore } from '../../src/sqlite.js';

// The passivation load scenario of issue 22: many sessions, each running a short loop with
// a shell worker that outlasts `idleMs`, more sessions than `maxLiveSessions`, a SQLite
// store. Each worker run appends "<loopId> <round>" to runs.log, so a test counts them.

/** How the scenario is sized. */
export interface LoadSettings {
  /** Folder for the store (state.db), the dispatcher's tasks (tasks/) and runs.log. */
  readonly dir: string;
  readonly idleMs: number;
  readonly sessions?: number;
  readonly rounds?: number;
  readonly maxLiveSessions?: number;
  /** Seconds each worker sleeps (default 0.2). */
  readonly workerSeconds?: number;
  /** Called with each loop that ends, once its state has been saved. */
  readonly onFinished?: (sessionId: string, phase: string) => void;
}

/** The ids of the scenario's sessions. */
export function loadSessionIds(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `S${i}`);
}

/**
 * Opens (or reopens, from the store) every session and starts its loop unless it has one;
 * resolves once every loop has ended, or after `waitMs`, with what happened. Stops the
 * rolebox before it resolves.
 */
export async function runLoadScenario(settings: LoadSettings, waitMs: number) {
  const { dir, idleMs, sessions = 20, rounds = 3, maxLiveSessions = 5 } = settings;
  const store = new SqliteSnapshotStore(join(dir, 'state.db'));
  const dispatcher = new CommandDispatcher({
    command: `sleep ${settings.workerSeconds ?? 0.2}; echo "$ROLEBOX_LOOP_ID $ROLEBOX_ROUND" >> "$RUNS_LOG"; echo "answer $ROLEBOX_ROUND"`,
    stateDir: join(dir, 'tasks'),
    env: { RUNS_LOG: join(dir, 'runs.log') },
    orphanCheckMs: 100,
  });
  const rb = createRolebox({ store, dispatcher, idleMs, maxLiveSessions, saveDebounceMs: 0 });
  const ids = loadSessionIds(sessions);
  const ended = new Map<string, string>();
  let passivations = 0;
  let activations = 0;
  let allEnded: () => void = () => {};
  const done = new Promise<void>((resolve) => (allEnded = resolve));
  const end = (sessionId: string, phase: string) => {
    if (ended.has(sessionId)) return;
    ended.set(sessionId, phase);
    if (ended.size === ids.length) allEnded();
  };
  let saved = Promise.resolve();
  rb.on('*', (event: HostEvent) => {
    if (event.type === 'session_passivated') passivations++;
    else if (event.type === 'session_activated') activations++;
    else if (event.type === 'loop_finished') {
      const { sessionId, phase } = event;
      saved = saved.then(async () => {
        await rb.flush();
        settings.onFinished?.(sessionId, phase);
        end(sessionId, phase);
      });
    }
  });
  await rb.start();
  for (const id of ids) {
    const session = await rb.openSession({ id, ifOpen: 'reuse', wait: true });
    const loop = session.view().loop;
    if (loop && TERMINAL_LOOP_PHASES.has(loop.phase)) end(id, loop.phase);
    else if (!loop) {
      const started = session.startLoop(`|loop:${rounds}| step of ${id}`);
      if (!started.ok) throw new Error(`${id}: ${started.reason}`);
    }
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
  clearTimeout(timer);
  await saved;
  await rb.stop();
  dispatcher.close();
  await store.close();
  return { ended, passivations, activations };
}

/** Each worker run logged in `dir`: the rounds run, by loop id, in the order they ran. */
export function workerRuns(dir: string): Map<string, number[]> {
  const path = join(dir, 'runs.log');
  const runs = new Map<string, number[]>();
  if (!existsSync(path)) return runs;
  for (const line of readFileSync(path, 'utf8').trim().split('\n')) {
    const [loopId, round] = line.split(' ') as [string, string];
    runs.set(loopId, [...(runs.get(loopId) ?? []), Number(round)]);
  }
  return runs;
}
