// A handler's result saved apart from its session (src/persistence/effect-result-record.ts):
// written when nothing else of the session waits to be saved, read back on activation for an
// effect still pending, refused when corrupt, deleted with its session. The SIGKILL tests
// (writing-agent.crash: the main agent's finish) show a restart applies it.
import { describe, expect, it } from 'vitest';
import { isRoleboxError } from '../src/errors.js';
import {
  createRolebox,
  type EffectHandlers,
  type HostEvent,
  MemorySnapshotStore,
  type RuntimeEvent,
} from '../src/index.js';
import {
  effectResultRecordId,
  encodeEffectResultRecord,
  readEffectResultRecord,
} from '../src/persistence/effect-result-record.js';
import { sealRecord } from '../src/persistence/record-checksum.js';
import { SimulatedClock, settle } from '../src/testing/index.js';
import { UNTIL_POET_APPROVAL } from './support/poem-flow.js';

const ID = effectResultRecordId('S');
/** The session asked for a poem (its main agent's effect emitted), and the decision it makes. */
const INTAKE = UNTIL_POET_APPROVAL.slice(0, 2);
const decision = UNTIL_POET_APPROVAL[2] as RuntimeEvent;

/** A rolebox on `store` with `effects`, its host events, and session S opened. */
async function boot(store: MemorySnapshotStore, effects: EffectHandlers = {}) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({ clock, store, effects, effectRetry: { initialDelayMs: 100 } });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  return { rb, clock, session, events };
}

/** Session S left with its main agent's effect pending (no handler ran it), stored. */
async function pendingMainAgent(store: MemorySnapshotStore): Promise<string> {
  const { rb, session } = await boot(store);
  for (const event of INTAKE) session.send(event);
  const [pending] = session.view().pendingEffects;
  expect(pending?.effect.type).toBe('invoke_main_agent');
  await rb.stop();
  return pending?.id as string;
}

describe('the effect-result record', () => {
  it('reads back what was written, for its effect only', () => {
    const text = encodeEffectResultRecord('S:e1', { events: [decision], attempt: 2 });
    expect(readEffectResultRecord(ID, text, 'S:e1')).toEqual({ events: [decision], attempt: 2 });
    expect(readEffectResultRecord(ID, text, 'S:e2')).toBeUndefined();
  });

  it('refuses a corrupt record with invalid_snapshot naming it', () => {
    const good = encodeEffectResultRecord('S:e1', { events: [decision] });
    const corrupt = [
      good.replace('d1', 'd2'), // the checksum no longer matches
      sealRecord('{"effectId":"S:e1","events":"none"}'),
      sealRecord('{"effectId":"S:e1","events":[],"attempt":0}'),
      sealRecord('{"effectId":"S:e1","events":[{"type":"no_such_event"}]}'),
      sealRecord('{"effectId":7,"events":[]}'),
      'not json',
    ];
    for (const text of corrupt) {
      let refused: unknown;
      try {
        readEffectResultRecord(ID, text, 'S:e1');
      } catch (error) {
        refused = error;
      }
      expect(isRoleboxError(refused, 'invalid_snapshot'), text).toBe(true);
      expect((refused as Error).message).toContain(ID);
    }
  });

  it('is written for a result when nothing else of the session waits, and deleted with the session', async () => {
    const store = new MemorySnapshotStore();
    const { rb, session } = await boot(store, { invoke_main_agent: () => [decision] });
    for (const event of INTAKE) session.send(event);
    await settle(10);
    expect(session.view().waitingReason).toMatchObject({ kind: 'approve_step' });
    expect(store.records.get(ID)).toContain('"main_agent_decision_created"');
    session.close();
    await rb.flush();
    expect(store.records.has('S')).toBe(false);
    expect(store.records.has(ID)).toBe(false);
    await rb.stop();
  });

  it('is applied on activation for the effect it holds, and the handler is not called', async () => {
    const store = new MemorySnapshotStore();
    const effectId = await pendingMainAgent(store);
    // What a process that died after saving the result, before applying it, leaves behind.
    store.records.set(ID, encodeEffectResultRecord(effectId, { events: [decision], attempt: 1 }));
    let calls = 0;
    const { rb, session, events } = await boot(store, {
      invoke_main_agent: () => {
        calls += 1;
        return [decision];
      },
    });
    await settle(10);
    expect(calls).toBe(0);
    expect(session.view()).toMatchObject({
      waitingReason: { kind: 'approve_step' },
      pendingEffects: [],
    });
    expect(events.filter((event) => event.type === 'effect_settled')).toHaveLength(1);
    await rb.stop();
  });

  it('when corrupt, is reported and not applied: the attempt fails and the retry calls the handler', async () => {
    const store = new MemorySnapshotStore();
    const effectId = await pendingMainAgent(store);
    store.records.set(ID, sealRecord(`{"effectId":"${effectId}","events":"garbled"}`));
    let calls = 0;
    const { rb, clock, session, events } = await boot(store, {
      invoke_main_agent: () => {
        calls += 1;
        return [decision];
      },
    });
    await settle(10);
    const error = events.find((event) => event.type === 'error');
    expect(error && isRoleboxError(error.error, 'invalid_snapshot')).toBe(true);
    expect(calls).toBe(0);
    expect(session.view().pendingEffects).toEqual([
      expect.objectContaining({
        id: effectId,
        // No handler ran: the refusal waits to be retried, and counts no handler attempt.
        status: 'pending',
        attempts: 0,
        lastError: expect.stringContaining('invalid_snapshot'),
        nextAttemptAt: 1_100,
      }),
    ]);
    clock.advance(100);
    await settle(10);
    expect(calls).toBe(1);
    expect(session.view()).toMatchObject({
      waitingReason: { kind: 'approve_step' },
      pendingEffects: [],
    });
    await rb.stop();
  });
});
