// What a function FSM costs for being an actor of its own (issue 26, to size the next
// decision the closing notes propose: hold each function's state in its session's machine
// instead of one child actor per function). Three measures on rolebox's own machines and
// records, each against the same thing without the function actors, in the same run:
//   1. heap per live idle session with 0, 1 and 2 functions active (each count in a fresh
//      process; `passivateWhenWaiting: false`, so a gated session stays live, as P6 has it);
//   2. XState restoring a paused session's stored record (parsed, created, started and
//      stopped, as in P5) with its function actors, and the same record with each
//      function's state moved into the session's context instead (same bytes, no child
//      actors): what the function actors add to an activation's XState share (alternating
//      batches in one process);
//   3. the XState steps of one W1 approval workflow on the machines driven bare (events each
//      actor took, actors created), by kind of actor: what a session without function
//      actors would not take.
// No goal: the figures size a decision the team has not taken (P6 and P5 hold the goals).
// Run: npm run bench:function-actors
import { type AnyActorRef, createActor } from 'xstate';
import { realClock } from '../src/adapters/real-clock.js';
import { sessionActorId } from '../src/base/actor-ids.js';
import { createRolebox, defineFunction, type SessionHandle } from '../src/index.js';
import { SimulatedClock } from '../src/testing/index.js';
import {
  type BenchPart,
  benchParts,
  median,
  rounded,
  settledHeap,
  writeResult,
} from './measure.js';
import { bareMachineApprovals } from './support/bare-machines.js';
import { roleboxMachines } from './support/rolebox-machines.js';

const answered = 'signal_observed(answer)';
const approval = defineFunction({ name: 'approval', gate: answered, continue_until: answered });
const review = defineFunction({ name: 'review', continue_until: 'signal_observed(revise_needed)' });
const functions = [approval, review];
const HEAP = { warmUp: 500, sessions: 4_000 };
const RESTORE = { warmUp: 3_000, batches: 20, perBatch: 500 };
/** Workflows before the counted one: enough that every one of the 256 shards is up. */
const STEPS_WARM_UP = 3_000;

/** A session with `count` of P6's functions active: the approval gated on a request, then the review. */
function activate(session: SessionHandle, count: number): void {
  if (count >= 1) {
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { reason: 'refund over $500' } });
  }
  if (count >= 2) session.activate('review');
}

/** Part 1, in its own process: heap bytes per live idle session with `count` functions. */
async function partHeap(count: number): Promise<Record<string, number>> {
  const rb = createRolebox({
    clock: new SimulatedClock(1_000_000),
    functions,
    passivateWhenWaiting: false,
    maxLiveSessions: 1_000_000,
  });
  await rb.start();
  for (let index = 0; index < HEAP.warmUp; index++)
    activate(await rb.openSession({ id: `warm-${index}` }), count);
  await rb.flush();
  const before = await settledHeap();
  for (let index = 0; index < HEAP.sessions; index++)
    activate(await rb.openSession({ id: `s-${index}` }), count);
  await rb.flush();
  const after = await settledHeap();
  const live = rb.sessions().length;
  await rb.stop();
  if (live !== HEAP.warmUp + HEAP.sessions)
    throw new Error(`heap part: ${live} sessions live, expected ${HEAP.warmUp + HEAP.sessions}`);
  return { bytesPerSession: (after - before) / HEAP.sessions };
}

/** A paused session's persisted snapshot with `count` functions, as JSON (what a store holds). */
function pausedRecord(count: number): string {
  const machines = roleboxMachines(functions, realClock);
  const root = createActor(machines.system);
  root.start();
  const at = Date.now();
  root.send({ type: 'system.open_session', sessionId: 'paused', at, nonce: 'paused' });
  const session = root.system.get(sessionActorId('paused'));
  if (count >= 1) {
    session.send({ type: 'session.activate', name: 'approval', at });
    session.send({
      type: 'session.signal',
      signal: { type: 'need_approval', payload: { reason: 'refund over $500' } },
      at,
    });
  }
  if (count >= 2) session.send({ type: 'session.activate', name: 'review', at });
  const text = JSON.stringify(session.getPersistedSnapshot());
  root.stop();
  return text;
}

/** Part 2: µs to restore a paused record (parse, create, start, stop) with and without its function actors. */
function partRestore(count: number): Record<string, number> {
  const { session } = roleboxMachines(functions, realClock);
  const withActors = pausedRecord(count);
  const parsed = JSON.parse(withActors) as {
    context: Record<string, unknown>;
    children: Record<string, { snapshot: { value: unknown; context: unknown } }>;
  };
  if (Object.keys(parsed.children).length !== count)
    throw new Error(`restore part: the record has ${Object.keys(parsed.children).length} children`);
  // The same session with each function's state (its FSM state and context) kept in the
  // session's own context instead of a child actor: the bytes stay, the actors go.
  const functionStates = Object.fromEntries(
    Object.entries(parsed.children).map(([id, child]) => [
      id,
      { value: child.snapshot.value, context: child.snapshot.context },
    ]),
  );
  const withoutActors = JSON.stringify({
    ...parsed,
    context: { ...parsed.context, functionStates },
    children: {},
  });
  const restore = (text: string) => {
    const actor = createActor(session, { snapshot: JSON.parse(text) } as never);
    actor.start();
    if (actor.getSnapshot().status !== 'active') throw new Error('restore part: not restored');
    actor.stop();
  };
  for (let index = 0; index < RESTORE.warmUp; index++) {
    restore(withActors);
    restore(withoutActors);
  }
  const times = { withActors: [] as number[], withoutActors: [] as number[] };
  for (let batch = 0; batch < RESTORE.batches; batch++) {
    // Alternating order, so drift in machine load hits both alike.
    const order =
      batch % 2
        ? (['withActors', 'withoutActors'] as const)
        : (['withoutActors', 'withActors'] as const);
    for (const which of order) {
      const text = which === 'withActors' ? withActors : withoutActors;
      const start = process.hrtime.bigint();
      for (let index = 0; index < RESTORE.perBatch; index++) restore(text);
      times[which].push(Number(process.hrtime.bigint() - start) / RESTORE.perBatch / 1000);
    }
  }
  return {
    recordBytes: withActors.length,
    recordBytesStateInContext: withoutActors.length,
    withActorsUs: median(times.withActors),
    withoutActorsUs: median(times.withoutActors),
  };
}

/** Part 3: the XState steps of one W1 workflow on the bare machines, by kind of actor. */
async function partSteps(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const kindOf = (id: string) =>
    id.startsWith('fn:')
      ? 'function'
      : id.startsWith('session:')
        ? 'session'
        : id.startsWith('shard:')
          ? 'shard'
          : 'root';
  let counting = false;
  const flow = bareMachineApprovals(approval, (event) => {
    if (!counting) return;
    const kind = kindOf((event.actorRef as AnyActorRef).id);
    const key =
      event.type === '@xstate.event'
        ? `${kind}Events`
        : event.type === '@xstate.actor'
          ? `${kind}Actors`
          : '';
    if (key) counts[key] = (counts[key] ?? 0) + 1;
  });
  // Finished workflows stay live (as in W1), so after these every shard is up and the
  // counted workflow finds its own there, as a workflow does in W1's steady state.
  for (let index = 0; index < STEPS_WARM_UP; index++) {
    await flow.pause(`warm-${index}`);
    await flow.resume(`warm-${index}`);
  }
  counting = true;
  await flow.pause('counted');
  await flow.resume('counted');
  await flow.close();
  return counts;
}

const PARTS = {
  heap: (count: string | undefined) => partHeap(Number(count)),
  restore: async (count: string | undefined) => partRestore(Number(count)),
  steps: () => partSteps(),
} satisfies Record<string, BenchPart>;

const run = await benchParts(import.meta.filename, 'function-actor-cost', PARTS);
if (run) {
  const one = (name: keyof typeof PARTS, extra: string[] = []) =>
    run<Record<string, number>>(name, extra);
  const heap = [0, 1, 2].map((count) =>
    Math.round(one('heap', [String(count)]).bytesPerSession as number),
  );
  const restore = [1, 2].map((count) => one('restore', [String(count)]));
  const steps = one('steps');
  const [none, oneFunction, two] = heap as [number, number, number];
  await writeResult('function-actor-cost', {
    description:
      'what a function FSM costs as an actor of its own: heap per live idle session by functions active; XState restoring a paused record with its function actors / with their state in the session context instead; XState steps of one W1 workflow on the bare machines, by actor kind. No goal: sizes a proposed decision.',
    heapBytesPerLiveSession: { functions0: none, functions1: oneFunction, functions2: two },
    heapBytesPerFunction: { first: oneFunction - none, second: two - oneFunction },
    restore: Object.fromEntries(
      restore.map((figures, index) => [
        `functions${index + 1}`,
        {
          recordBytes: figures.recordBytes,
          recordBytesStateInContext: figures.recordBytesStateInContext,
          withActorsUs: rounded(figures.withActorsUs as number, 1),
          withoutActorsUs: rounded(figures.withoutActorsUs as number, 1),
          ratio: rounded((figures.withActorsUs as number) / (figures.withoutActorsUs as number)),
        },
      ]),
    ),
    w1StepsPerWorkflow: steps,
  });
}
