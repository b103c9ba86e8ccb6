// Machines built once (issue 26): a rolebox created with the same functions, conditions,
// limits and shards as an earlier one reuses its XState machines; anything that differs gets
// machines of its own, the cache stays bounded, and the machines shared across roleboxes
// receive a finite set of event types (XState keeps one cache entry per type for good).
import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { ConditionRegistry } from '../src/condition/registry.js';
import {
  createRolebox,
  defineFunction,
  type FunctionSpec,
  MemorySnapshotStore,
  type RoleboxOptions,
} from '../src/index.js';
import { machinesFor } from '../src/rolebox/build-machines.js';
import { MACHINE_CACHE_SIZE } from '../src/rolebox/machine-cache.js';
import { resolveRoleboxOptions } from '../src/rolebox/options.js';
import { SimulatedClock } from '../src/testing/index.js';
import { phaseOf } from './support/rolebox.js';

const GATED: FunctionSpec = {
  name: 'deploy',
  gate: 'signal_observed(answer)',
  continue_until: 'signal_observed(answer)',
};

/** The system machine a rolebox created with `options` would run. */
function machineOf(options: RoleboxOptions) {
  return machinesFor(resolveRoleboxOptions(options)).system;
}

describe('machines built once per process', () => {
  it('a second rolebox with equal inputs reuses the machines, even from copies of the definitions', async () => {
    const first = machineOf({ functions: [defineFunction(GATED)], limits: { maxToolBurst: 7 } });
    // New definition objects with the same content (as when loaded again from the same files),
    // a different clock and a store: none of these is an input of the machines.
    const second = machineOf({
      functions: [defineFunction({ ...GATED })],
      limits: { maxToolBurst: 7 },
      store: new MemorySnapshotStore(),
    });
    expect(second).toBe(first);
    // What a started rolebox runs.
    const rb = createRolebox({ functions: [defineFunction(GATED)], limits: { maxToolBurst: 7 } });
    await rb.start();
    expect(rb.system.logic).toBe(first);
    await rb.stop();
  });

  it('different definitions, limits, shards or condition registry get machines of their own', () => {
    const base = { functions: [defineFunction(GATED)] };
    const first = machineOf(base);
    const others = [
      machineOf({ functions: [defineFunction({ ...GATED, gate: undefined })] }),
      machineOf({ ...base, limits: { maxToolBurst: 3 } }),
      machineOf({ ...base, shards: 4 }),
      machineOf({ ...base, conditions: new ConditionRegistry() }),
    ];
    for (const other of others) expect(other).not.toBe(first);
    expect(new Set(others).size).toBe(others.length);
  });

  it('a definition JSON cannot write (a bigint kept among its unknown keys) counts by identity', () => {
    const spec = { name: 'deploy', custom: 10n } as unknown as FunctionSpec;
    const odd = defineFunction(spec);
    const first = machineOf({ functions: [odd] });
    expect(machineOf({ functions: [odd] })).toBe(first);
    expect(machineOf({ functions: [defineFunction(spec)] })).not.toBe(first);
  });

  it('two live roleboxes with a same-named function each follow their own definition', async () => {
    const byAnswer = createRolebox({ functions: [defineFunction(GATED)] });
    const byHandoff = createRolebox({
      functions: [defineFunction({ name: 'deploy', gate: 'signal_observed(handoff)' })],
    });
    for (const rb of [byAnswer, byHandoff]) {
      await rb.start();
      const session = await rb.openSession({ id: 'S' });
      session.activate('deploy');
      session.signal({ type: 'need_approval', payload: { reason: 'prod' } });
      expect(phaseOf(session, 'deploy')).toBe('gated');
      session.signal({ type: 'answer', payload: { approved: true } });
      session.idle();
    }
    // The answer opens the gate of the first definition only.
    expect(phaseOf(byAnswer.session('S'), 'deploy')).not.toBe('gated');
    expect(phaseOf(byHandoff.session('S'), 'deploy')).toBe('gated');
    await byAnswer.stop();
    await byHandoff.stop();
  });

  it(`keeps the ${MACHINE_CACHE_SIZE} most recently used sets: the least recently used is built again`, () => {
    const functions = [defineFunction(GATED)];
    const withBurst = (maxToolBurst: number) => machineOf({ functions, limits: { maxToolBurst } });
    const oldest = withBurst(1);
    const used = withBurst(2);
    for (let burst = 3; burst <= MACHINE_CACHE_SIZE; burst++) withBurst(burst);
    // Using the second again makes the first the least recently used; one more set evicts it.
    expect(withBurst(2)).toBe(used);
    withBurst(MACHINE_CACHE_SIZE + 1);
    expect(withBurst(2)).toBe(used);
    expect(withBurst(1)).not.toBe(oldest);
  });
});

describe('machines shared by fresh roleboxes receive a finite set of event types', () => {
  /** The event types the shared machines received over `count` fresh roleboxes, and the ids used. */
  async function typesOver(count: number, first: number) {
    const types = new Set<string>();
    const ids: string[] = [];
    const inspect = (event: InspectionEvent) => {
      if (event.type === '@xstate.event') types.add(event.event.type);
    };
    for (let index = first; index < first + count; index++) {
      const id = `fresh-${String(index).padStart(6, '0')}`;
      ids.push(id);
      const rb = createRolebox({
        clock: new SimulatedClock(1_000),
        store: new MemorySnapshotStore(),
        functions: [defineFunction(GATED)],
      });
      await rb.start();
      rb.system.system.inspect(inspect);
      const session = await rb.openSession({ id });
      session.activate('deploy');
      session.signal({ type: 'need_approval', payload: { reason: 'prod' } });
      session.idle();
      session.signal({ type: 'answer', payload: { approved: true } });
      session.idle();
      session.close();
      await rb.stop();
    }
    return { types, ids };
  }

  it('the same for 5 and 50 roleboxes, and none names a session', async () => {
    const few = await typesOver(5, 0);
    const many = await typesOver(50, 100);
    expect(few.types.size).toBeGreaterThan(5);
    expect([...many.types].sort()).toEqual([...few.types].sort());
    for (const type of many.types)
      for (const id of many.ids) if (type.includes(id)) expect.fail(`${type} names ${id}`);
  }, 60_000);
});
