import {
  createRolebox,
  defineFunction,
  type FunctionSpec,
  type HostEvent,
  MemorySnapshotStore,
  type Rolebox,
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
  const report = await rb.start();
  const notes = () => events.flatMap((event) => (event.type === 'note' ? [event.text] : []));
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  const crash = () => rb.system.stop();
  return { rb, clock, events, notes, report, advance, crash };
}
