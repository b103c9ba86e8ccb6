import type { InspectionEvent } from 'xstate';
import { createRolebox, type HostEvent, type RoleboxLimits } from '../../src/index.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../../src/testing/index.js';

/** A started rolebox with a scripted dispatcher, recording notes and every loop phase visited. */
export async function loopHarness(
  options: { limits?: Partial<RoleboxLimits>; dispatcher?: ScriptedDispatcher } = {},
) {
  const clock = new SimulatedClock(0);
  const dispatcher = options.dispatcher ?? new ScriptedDispatcher();
  const phases = new Map<string, string[]>();
  const inspect = (event: InspectionEvent) => {
    // By systemId (`loop:<id>`): a loop's child id in its session is just `loop`.
    const id = (event.actorRef as { systemId?: string }).systemId ?? '';
    if (
      !id.startsWith('loop:') ||
      (event.type !== '@xstate.microstep' && event.type !== '@xstate.snapshot')
    )
      return;
    const value = (event.snapshot as unknown as { value: unknown }).value;
    const phase = typeof value === 'string' ? value : Object.keys(value as object)[0];
    const list = phases.get(id.slice(5)) ?? [];
    if (list.at(-1) !== phase) list.push(phase as string);
    phases.set(id.slice(5), list);
  };
  const rb = createRolebox({
    clock,
    dispatcher,
    ids: seededIdSource(3),
    ...(options.limits ? { limits: options.limits } : {}),
    inspect,
  });
  const events: HostEvent[] = [];
  rb.on('*', (event) => events.push(event));
  await rb.start();
  const session = await rb.openSession({ id: 'S' });
  const notes = (sessionId = 'S') =>
    events
      .filter((e) => e.type === 'note' && e.sessionId === sessionId)
      .map((e) => (e as { text: string }).text);
  /** Advances the simulated clock, then lets the dispatcher's promises resolve. */
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  return { rb, session, clock, dispatcher, events, notes, phases, advance, settle };
}
