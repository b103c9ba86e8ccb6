import {
  createRolebox,
  defineFunction,
  type FunctionSpec,
  type HostEvent,
  MemorySnapshotStore,
  type Rolebox,
  RoleboxError,
  type RoleboxLimits,
  type SnapshotStore,
} from '../../src/index.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../../src/testing/index.js';

/** A store that counts what each save wrote. */
export class CountingStore extends MemorySnapshotStore {
  readonly written: string[][] = [];
  override async save(...args: Parameters<MemorySnapshotStore['save']>) {
    this.written.push(args[0].map((record) => record.id));
    return super.save(...args);
  }
}

export const APPROVAL: FunctionSpec = {
  name: 'approval',
  gate: 'signal_observed(answer)',
  continue_until: 'signal_observed(answer)',
};

/**
 * One "process": a rolebox on its own simulated clock, over a store and a dispatcher that
 * outlive it. `crash()` stops it dead: no flush, its timers never fire again.
 */
export async function boot(
  world: {
    store: SnapshotStore;
    dispatcher?: ScriptedDispatcher;
    functions?: FunctionSpec[];
    limits?: Partial<RoleboxLimits>;
    /** Activate every stored session after start (default true). */
    activate?: boolean;
  },
  at = 0,
) {
  const clock = new SimulatedClock(at);
  const events: HostEvent[] = [];
  const rb: Rolebox = createRolebox({
    store: world.store,
    clock,
    ids: seededIdSource(at + 11),
    dispatcher: world.dispatcher ?? new ScriptedDispatcher(),
    functions: (world.functions ?? [APPROVAL]).map((spec) =>
      defineFunction(spec, { onWarning: () => {} }),
    ),
    ...(world.limits ? { limits: world.limits } : {}),
  });
  rb.on('*', (event) => events.push(event));
  const started = await rb.start();
  // start() restores nothing (sessions are activated on demand): like a program that goes
  // on with each of its sessions, activate every stored one and report what restored.
  const activated =
    world.activate === false ? { restored: [], failed: [] } : await activateStored(rb, world.store);
  const report = {
    restored: activated.restored,
    failed: [...started.failed, ...activated.failed],
  };
  const notes = () => events.flatMap((event) => (event.type === 'note' ? [event.text] : []));
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  const crash = () => rb.system.stop();
  return { rb, clock, events, notes, report, advance, crash };
}

/**
 * Opens every session the store holds (`openSession({ id, ifOpen: 'reuse' })`), in the
 * store's order: which ones restored, and which were refused and why.
 */
export async function activateStored(
  rb: Rolebox,
  store: SnapshotStore,
): Promise<{ restored: string[]; failed: { sessionId: string; error: RoleboxError }[] }> {
  const restored: string[] = [];
  const failed: { sessionId: string; error: RoleboxError }[] = [];
  for (const { id } of await store.loadAll()) {
    if (id.startsWith('$')) continue;
    try {
      await rb.openSession({ id, ifOpen: 'reuse' });
      restored.push(id);
    } catch (error) {
      if (!(error instanceof RoleboxError)) throw error;
      failed.push({ sessionId: id, error });
    }
  }
  return { restored, failed };
}
