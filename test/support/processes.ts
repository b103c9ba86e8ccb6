import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { taskProcesses } from '../../src/adapters/command-dispatcher.js';

/**
 * The timeout of a test that spawns processes: sized for a loaded 2-core machine (another
 * suite running beside this one), where starting Node with tsx alone can take seconds.
 */
export const PROCESS_TEST_TIMEOUT_MS = 120_000;

const tracked = new Set<ChildProcess>();

/** Remembers a child so that {@link killTracked} ends it when the test ends. */
export function track<T extends ChildProcess>(child: T): T {
  tracked.add(child);
  child.once('exit', () => tracked.delete(child));
  return child;
}

/**
 * SIGKILLs every tracked child still running (its whole process group when it leads one)
 * and resolves once each has exited. Call it in `afterEach`, so a failed or timed-out test
 * leaves no process behind.
 */
export async function killTracked(): Promise<void> {
  const children = [...tracked];
  tracked.clear();
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Not a group leader: kill the process itself.
      }
      child.kill('SIGKILL');
      await exited;
    }),
  );
}

/**
 * SIGKILLs the process group of every worker task under `tasksDir` (the command
 * dispatcher's task folders keep the pid of each worker's wrapper, and of a wrapper that
 * has not claimed its task yet) and every process marked with a task's id, so a test's
 * workers die with it.
 */
export function killTaskGroups(tasksDir: string): void {
  if (!existsSync(tasksDir)) return;
  for (const task of readdirSync(tasksDir)) {
    for (const name of ['pid', 'spawned']) {
      const pidFile = join(tasksDir, task, name);
      if (!existsSync(pidFile)) continue;
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      if (!Number.isInteger(pid) || pid <= 0) continue;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    if (!/^t_/.test(task)) continue;
    for (const pid of taskProcesses(task) ?? []) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}
