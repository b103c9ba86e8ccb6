// A SQLite store whose session holds approval requests, open and resolved, for the surfaces
// that show the audit trail (`rolebox show`, the inspector page).
import { SqliteSnapshotStore } from '../../src/adapters/sqlite-snapshot-store.js';
import { createRolebox, defineFunction } from '../../src/index.js';
import { SimulatedClock } from '../../src/testing/index.js';

/** The clock time the store's session was opened at; each step after it is one second on. */
export const APPROVALS_STORE_START = Date.UTC(2026, 0, 5, 9, 0, 0);

/** The gated functions of the store's session. */
export const APPROVAL_FUNCTIONS = [
  defineFunction({
    name: 'deploy',
    gate: 'signal_observed(answer)',
    continue_until: 'state_eq(step=done)',
  }),
  defineFunction({ name: 'review', gate: 'signal_observed(answer)' }),
];

/**
 * Writes a store at `path` with session `release`: `deploy:r1` approved by ana (with a note
 * and the version she saw), `review:r1` rejected by bo, and `deploy:r2` and `review:r2`
 * open (the agent asked again).
 */
export async function writeStoreWithApprovals(path: string): Promise<void> {
  const store = new SqliteSnapshotStore(path);
  const clock = new SimulatedClock(APPROVALS_STORE_START);
  const rb = createRolebox({ store, functions: APPROVAL_FUNCTIONS, clock });
  await rb.start();
  const session = await rb.openSession({ id: 'release' });
  session.activate('deploy');
  session.activate('review');
  session.signal({ type: 'need_approval', payload: { reason: 'step 1: migrate db' } });
  clock.advance(1_000);
  session.approve('deploy:r1', { by: 'ana', note: 'backup checked', seenVersion: 1 });
  clock.advance(1_000);
  session.reject('review:r1', { by: 'bo', reason: 'no rollback plan' });
  clock.advance(1_000);
  session.signal({ type: 'need_approval', payload: { reason: 'step 2: drop old tables' } });
  await rb.stop();
  await store.close();
}
