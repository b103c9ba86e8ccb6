import { describeValue, RoleboxError } from '../../errors.js';
import { isTerminalLoopPhase } from '../../loop/types.js';
import { SqliteSnapshotStore } from '../../ports/sqlite-snapshot-store.js';
import type { Output } from '../output.js';
import { cliRolebox, type RunOptions, WORKER_SLOT, waitForLoops } from './loop.js';

/** Reads which worker command the stored sessions' loops were started with. */
async function recordedWorker(storePath: string): Promise<string | undefined> {
  const store = new SqliteSnapshotStore(storePath);
  try {
    for (const record of await store.loadAll()) {
      const worker = (
        JSON.parse(record.data) as { snapshot?: { context?: { slots?: Record<string, unknown> } } }
      ).snapshot?.context?.slots?.[WORKER_SLOT];
      if (typeof worker === 'string') return worker;
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    await store.close();
  }
}

/**
 * `rolebox resume`: restores every stored session, reconciles its loop with the
 * dispatcher's tasks, and waits for the loops to finish. Returns the exit code.
 */
export async function runResumeCommand(
  options: RunOptions & { worker?: string },
  output: Output,
): Promise<number> {
  const worker = options.worker ?? (await recordedWorker(options.store));
  if (!worker) {
    throw new RoleboxError(
      'invalid_argument',
      `no worker command is recorded in ${describeValue(options.store)}; pass --worker "<command>"`,
    );
  }
  const { rb, close } = await cliRolebox(options, worker, output);
  try {
    const report = await rb.start();
    for (const failure of report.failed)
      output.err(`» could not restore ${failure.sessionId}: ${failure.error.message}`);
    const loops = new Map<string, number>();
    for (const sessionId of report.restored) {
      const loop = rb.session(sessionId).view().loop;
      if (loop && !isTerminalLoopPhase(loop.phase)) {
        loops.set(loop.id, loop.total);
        output.err(
          `» resuming loop ${loop.id} in session ${sessionId}: round ${loop.current}/${loop.total}, ${loop.phase}`,
        );
      }
    }
    if (loops.size === 0) {
      output.err(
        `» nothing to resume (${report.restored.length} session(s) restored, no loop running)`,
      );
      return report.failed.length > 0 ? 1 : 0;
    }
    const code = await waitForLoops(rb, new Set(loops.keys()), output, (loopId) =>
      loops.get(loopId),
    );
    return report.failed.length > 0 && code === 0 ? 1 : code;
  } finally {
    await close();
  }
}
