// A SQLite store whose sessions hold pending effects, for the surfaces that show them
// (`rolebox show`, the inspector).
import { SqliteSnapshotStore } from '../../src/adapters/sqlite-snapshot-store.js';
import { createRolebox, defineFunction } from '../../src/index.js';
import { SimulatedClock, settle } from '../../src/testing/index.js';

/** The clock time the store's sessions were written at. */
export const EFFECTS_STORE_START = 1_000;

/** How long a failed `invoke_main_agent` waits for its next attempt. */
export const EFFECTS_STORE_RETRY_MS = 60_000;

/**
 * Writes a store at `path` with sessions `down`, whose main agent's handler threw once (its
 * effect `down:<nonce>:e1` waits for its retry), and `poet`, whose approved worker has no handler
 * (`poet:<nonce>:e2`, pending, never attempted) and which runs function `note` (an actor with no
 * outbox).
 */
export async function writeStoreWithEffects(path: string): Promise<void> {
  const store = new SqliteSnapshotStore(path);
  const rb = createRolebox({
    store,
    functions: [defineFunction({ name: 'note', continue_until: 'signal_observed(answer)' })],
    clock: new SimulatedClock(EFFECTS_STORE_START),
    effects: {
      invoke_main_agent: () => {
        throw new Error('model down\n    at call (model.ts:1)');
      },
    },
    effectRetry: {
      maxAttempts: 3,
      initialDelayMs: EFFECTS_STORE_RETRY_MS,
      maxDelayMs: EFFECTS_STORE_RETRY_MS,
    },
  });
  await rb.start();
  for (const id of ['down', 'poet']) {
    const session = await rb.openSession({ id });
    session.send({ type: 'session_started', availableSkills: [{ name: 'write' }] });
    session.send({ type: 'skill_selected', skill: 'write' });
    session.send({ type: 'user_submitted_input', text: 'a poem' });
    await settle(10);
    if (id === 'poet') {
      session.activate('note');
      session.send({
        type: 'main_agent_decision_created',
        decision: { id: 'd1', kind: 'run_worker', workerId: 'writer', requiresApproval: true },
      });
      session.send({ type: 'user_approved_next_step', decisionId: 'd1' });
    }
  }
  await settle(10);
  await rb.stop();
  await store.close();
}
