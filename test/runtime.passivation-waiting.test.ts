// A session waiting for a human passivates once its step is saved (issue 26, decision 3;
// option `passivateWhenWaiting`, on by default): a gated function or `waiting_user`, no
// loop, no effect handler running. Its answer activates it through the same handle; a
// wait's deadline travels in its wake-up. On the simulated clock.
import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  defineFunction,
  type HostEvent,
  MemorySnapshotStore,
  type RoleboxOptions,
  type RuntimeEvent,
  type SnapshotStore,
} from '../src/index.js';
import type { SessionHandle } from '../src/rolebox/session-handle.js';
import { SimulatedClock, seededIdSource, settle } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';

const approval = defineFunction({ name: 'approval', gate: 'signal_observed(answer)' });
const START: RuntimeEvent = {
  type: 'session_started',
  availableSkills: [{ name: 'write' }],
  initialSkill: 'write',
};
const DEBOUNCE_MS = 200;

/** Settles the session's pending effects by hand, as a host that carried them out does. */
function settleAll(session: SessionHandle): void {
  for (const entry of session.view().pendingEffects) session.settleEffect(entry.id);
}

async function boot(options: Partial<RoleboxOptions> = {}, store?: SnapshotStore) {
  const clock = new SimulatedClock(1_000);
  const rb = createRolebox({
    store: store ?? new MemorySnapshotStore(),
    clock,
    ids: seededIdSource(3),
    functions: [approval],
    ...options,
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  /** Lets the debounced save run, and what follows it. */
  const save = async () => {
    clock.advance(DEBOUNCE_MS);
    await settle();
  };
  const lifecycle = () =>
    events.flatMap((event) =>
      event.type === 'session_activated'
        ? [`activated (${event.trigger})`]
        : event.type === 'session_passivated'
          ? [`passivated (${event.reason})`]
          : [],
    );
  return { rb, clock, events, save, lifecycle };
}

describe('passivateWhenWaiting', () => {
  it('passivates a session with a gated function once its step is saved; the answer activates it', async () => {
    const store = new MemorySnapshotStore();
    const h = await boot({}, store);
    const session = await h.rb.openSession({ id: 'ticket-1' });
    session.activate('approval');
    expect(h.rb.sessions()).toEqual(['ticket-1']);
    // Not before its step is stored.
    expect(h.lifecycle()).toEqual([]);
    await h.save();
    expect(h.lifecycle()).toEqual(['passivated (waiting)']);
    expect(h.rb.sessions()).toEqual([]);
    const stored = store.records.get('ticket-1');
    expect(stored).toContain('"gated"');
    // The same handle answers it: activated on the call, the gate opens.
    expect(session.view().functions.map((fn) => `${fn.name}: ${fn.phase}`)).toEqual([
      'approval: gated',
    ]);
    session.signal({ type: 'answer' });
    expect(session.view().functions.map((fn) => `${fn.name}: ${fn.phase}`)).toEqual([
      'approval: active',
    ]);
    expect(h.lifecycle()).toEqual(['passivated (waiting)', 'activated (command)']);
    // No longer waiting for a human: it stays live after its save.
    await h.save();
    expect(h.rb.sessions()).toEqual(['ticket-1']);
    await h.rb.stop();
  });

  it('passivates a session in waiting_user, and its wait deadline wakes it and expires', async () => {
    const h = await boot({ limits: { waitUserTimeoutMs: 60_000 } });
    const session = await h.rb.openSession({ id: 'story' });
    session.send(START);
    expect(session.view().phase).toBe('waiting_user');
    await h.save();
    expect(h.lifecycle()).toEqual(['passivated (waiting)']);
    expect(h.rb.sessions()).toEqual([]);
    h.clock.advance(60_000 - DEBOUNCE_MS - 1);
    await settle();
    expect(h.rb.sessions()).toEqual([]);
    h.clock.advance(1);
    await settle();
    expect(h.lifecycle()).toEqual(['passivated (waiting)', 'activated (wake_up)']);
    expect(h.events.filter((event) => event.type === 'wait_expired')).toHaveLength(1);
    expect(session.view().phase).toBe('error');
    await h.rb.stop();
  });

  it('an answer to a passivated waiting_user session moves it on as a live one would', async () => {
    const h = await boot();
    const session = await h.rb.openSession({ id: 'story' });
    session.send(START);
    await h.save();
    expect(h.rb.sessions()).toEqual([]);
    session.send({ type: 'user_submitted_input', text: 'a short story' });
    expect(session.view().phase).toBe('running');
    expect(h.lifecycle()).toEqual(['passivated (waiting)', 'activated (command)']);
    await h.rb.stop();
  });

  it('releases its claim: another rolebox on the store can take the answer', async () => {
    const store = new MemorySnapshotStore();
    const first = await boot({}, store);
    (await first.rb.openSession({ id: 'ticket-1' })).activate('approval');
    await first.save();
    expect(first.lifecycle()).toEqual(['passivated (waiting)']);
    const second = await boot({}, store);
    const there = await second.rb.openSession({ id: 'ticket-1', ifOpen: 'reuse' });
    there.signal({ type: 'answer' });
    expect(there.view().functions.map((fn) => fn.phase)).toEqual(['active']);
    await second.rb.stop();
    await first.rb.stop();
  });

  it('is off with passivateWhenWaiting: false (the session stays live until idleMs)', async () => {
    const h = await boot({ passivateWhenWaiting: false, idleMs: 60_000 });
    const session = await h.rb.openSession({ id: 'ticket-1' });
    session.activate('approval');
    await h.save();
    expect(h.rb.sessions()).toEqual(['ticket-1']);
    h.clock.advance(120_000);
    await settle();
    expect(h.lifecycle()).toEqual(['passivated (idle)']);
    await h.rb.stop();
  });

  it('does not passivate a session that is not waiting for a human (idle, running)', async () => {
    const h = await boot();
    await h.rb.openSession({ id: 'plain' });
    const running = await h.rb.openSession({ id: 'running' });
    running.send(START);
    running.send({ type: 'user_submitted_input', text: 'a short story' });
    await h.save();
    expect(h.lifecycle()).toEqual([]);
    expect(h.rb.sessions()).toEqual(['plain', 'running']);
    await h.rb.stop();
  });

  it('keeps a session live while its effect handler runs, and passivates it once settled and saved', async () => {
    let finish: () => void = () => {};
    const h = await boot({
      effects: {
        emit_message: () =>
          new Promise<undefined>((resolve) => {
            finish = () => resolve(undefined);
          }),
      },
    });
    const session = await h.rb.openSession({ id: 'ticket-1' });
    session.send(START);
    session.send({ type: 'user_submitted_input', text: 'a refund' });
    settleAll(session);
    // The agent asks: the session waits for the user, with an emit_message effect to run.
    session.signal({ type: 'need_approval', payload: { reason: 'refund over $500' } });
    expect(session.view().phase).toBe('waiting_user');
    await h.save();
    await h.save();
    expect(session.view().pendingEffects.map((entry) => entry.status)).toEqual(['running']);
    expect(h.rb.sessions()).toEqual(['ticket-1']);
    expect(h.lifecycle()).toEqual([]);
    finish();
    await settle();
    await h.save();
    expect(h.lifecycle()).toEqual(['passivated (waiting)']);
    expect(session.view().pendingEffects).toEqual([]);
    await h.rb.stop();
  });

  it('passivates a session paused by a signal once its message is delivered and saved, and does not deliver it again', async () => {
    const h = await boot();
    const messages: string[] = [];
    h.rb.on('effect', (event) => {
      if (event.effect.type === 'emit_message') messages.push(event.effect.message);
    });
    const session = await h.rb.openSession({ id: 'ticket-1' });
    session.send(START);
    session.send({ type: 'user_submitted_input', text: 'a refund' });
    settleAll(session);
    session.signal({ type: 'need_approval', payload: { reason: 'refund over $500' } });
    expect(session.view().phase).toBe('waiting_user');
    await h.save();
    expect(h.lifecycle()).toEqual([]);
    await h.save();
    expect(h.lifecycle()).toEqual(['passivated (waiting)']);
    // Delivered once: the message is not delivered again when the answer activates it.
    session.send({ type: 'user_submitted_input', text: 'yes, refund it' });
    expect(session.view().phase).toBe('running');
    expect(messages).toEqual(['refund over $500']);
    expect(h.lifecycle()).toEqual(['passivated (waiting)', 'activated (command)']);
    await h.rb.stop();
  });

  it('keeps a waiting session live while a host effect is unsettled (it would be delivered again)', async () => {
    const h = await boot();
    const session = await h.rb.openSession({ id: 'ticket-1' });
    session.send(START);
    session.send({ type: 'user_submitted_input', text: 'a refund' });
    session.signal({ type: 'need_approval', payload: { reason: 'refund over $500' } });
    await h.save();
    await h.save();
    const unsettled = session.view().pendingEffects.map((entry) => entry.effect.type);
    expect(unsettled).toContain('invoke_main_agent');
    expect(h.rb.sessions()).toEqual(['ticket-1']);
    settleAll(session);
    await h.save();
    expect(h.lifecycle()).toEqual(['passivated (waiting)']);
    await h.rb.stop();
  });

  it('keeps sessions live on a store that cannot activate at once (no immediate)', async () => {
    const inner = new MemorySnapshotStore();
    const store = new Proxy(inner, {
      get: (target, key) =>
        key === 'immediate' ? undefined : Reflect.get(target, key, target)?.bind?.(target),
    }) as SnapshotStore;
    const h = await boot({}, store);
    const session = await h.rb.openSession({ id: 'ticket-1' });
    session.activate('approval');
    await h.save();
    expect(h.rb.sessions()).toEqual(['ticket-1']);
    expect(session.signal({ type: 'answer' }).text).toContain('answer');
    await h.rb.stop();
  });

  it('refuses a value that is not true or false, naming it', () => {
    for (const bad of ['yes', 1, null]) {
      const error = errorOf(() =>
        createRolebox({ passivateWhenWaiting: bad as unknown as boolean }),
      );
      expect(error.code, String(bad)).toBe('invalid_argument');
      expect(error.message).toContain('passivateWhenWaiting');
    }
  });
});
