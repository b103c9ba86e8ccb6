// What a function FSM costs for being an actor of its own (issue 26, to size the next
// decision the closing notes propose: hold each function's state in its session's machine
// instead of one child actor per function). Measures on rolebox's own machines and records,
// each against the same thing without the function actors, in the same run:
//   1. heap per live idle session with 0, 1 and 2 functions active, through a rolebox (each
//      count in a fresh process; `passivateWhenWaiting: false`, so a gated session stays
//      live, as P6 has it);
//   2. a paused session's stored record restored by XState (parsed, created, started and
//      stopped, as in P5) with its function actors, and the same record with each child's
//      snapshot moved into the session's context instead (the same bytes under another key,
//      no child actors), alternating batches in one process; and the heap of sessions kept
//      live after such restores, both ways (each in a fresh process). The second form only
//      carries the functions' state: a session machine that ran them would do more, so what
//      it saves is an upper bound;
//   3. the XState events of one W1 approval workflow on the machines driven bare, by kind of
//      actor (their starts and restores included), and the actors it creates.
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
/** Sessions opened before the heap is read (their allocations are not counted), then counted. */
const HEAP = { warmUp: 500, sessions: 4_000 };
/** Restores before timing, then batches timed alternately. */
const RESTORE = { warmUp: 3_000, batches: 20, perBatch: 500 };
/** Workflows before the counted one: enough that every one of the 256 shards is up. */
const STEPS_WARM_UP = 3_000;

/** A session with `count` of P6's functions active: the approval gated on a request, then the review. */
function activateFunctions(session: SessionHandle, count: number): void {
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
    activateFunctions(await rb.openSession({ id: `warm-${index}` }), count);
  await rb.flush();
  const before = await settledHeap();
  for (let index = 0; index < HEAP.sessions; index++)
    activateFunctions(await rb.openSession({ id: `s-${index}` }), count);
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
  const live = (session.getSnapshot().context as { liveFunctions: string[] }).liveFunctions;
  if (live.length !== count) throw new Error(`${live.length} functions live, expected ${count}`);
  const text = JSON.stringify(session.getPersistedSnapshot());
  root.stop();
  return text;
}

/**
 * The paused record with `count` functions, as stored (with its function actors' snapshots
 * as children), and the same with those snapshots under the session's context instead.
 */
function pausedRecords(count: number): { withActors: string; withoutActors: string } {
  const withActors = pausedRecord(count);
  const parsed = JSON.parse(withActors) as {
    context: Record<string, unknown>;
    children: Record<string, unknown>;
  };
  if (Object.keys(parsed.children).length !== count)
    throw new Error(`the record has ${Object.keys(parsed.children).length} children`);
  const withoutActors = JSON.stringify({
    ...parsed,
    context: { ...parsed.context, functionStates: parsed.children },
    children: {},
  });
  return { withActors, withoutActors };
}

/** Part 2: µs to restore a paused record (parse, create, start, stop) with and without its function actors. */
function partRestore(count: number): Record<string, number> {
  const { session } = roleboxMachines(functions, realClock);
  const { withActors, withoutActors } = pausedRecords(count);
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

/** Part 2, heap: bytes per session kept live after a restore of the record, `form` `with` or `without` actors. */
async function partRestoredHeap(arg: string): Promise<Record<string, number>> {
  const [count, form] = arg.split('-') as [string, 'with' | 'without'];
  const { session } = roleboxMachines(functions, realClock);
  const records = pausedRecords(Number(count));
  const text = form === 'with' ? records.withActors : records.withoutActors;
  const kept: unknown[] = [];
  const restoreLive = () => {
    const actor = createActor(session, { snapshot: JSON.parse(text) } as never);
    actor.start();
    kept.push(actor);
  };
  for (let index = 0; index < HEAP.warmUp; index++) restoreLive();
  const before = await settledHeap();
  for (let index = 0; index < HEAP.sessions; index++) restoreLive();
  const after = await settledHeap();
  if (kept.length !== HEAP.warmUp + HEAP.sessions) throw new Error('restored heap: sessions lost');
  return { bytesPerSession: (after - before) / HEAP.sessions };
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
  const flow = bareMachineApprovals(approval, {
    inspect: (event) => {
      if (!counting) return;
      const kind = kindOf((event.actorRef as AnyActorRef).id);
      const key =
        event.type === '@xstate.event'
          ? `${kind}Events`
          : event.type === '@xstate.actor'
            ? `${kind}Actors`
            : '';
      if (key) counts[key] = (counts[key] ?? 0) + 1;
    },
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
  restoredHeap: (arg: string | undefined) => partRestoredHeap(String(arg)),
  steps: () => partSteps(),
} satisfies Record<string, BenchPart>;

const partRunner = await benchParts(import.meta.filename, 'function-actor-cost', PARTS);
if (partRunner) {
  const one = (name: keyof typeof PARTS, extra: string[] = []) =>
    partRunner<Record<string, number>>(name, extra);
  const heap = [0, 1, 2].map((count) =>
    Math.round(one('heap', [String(count)]).bytesPerSession as number),
  );
  const restore = [1, 2].map(
    (count): Record<string, number> => ({
      ...one('restore', [String(count)]),
      heapWithActors: one('restoredHeap', [`${count}-with`]).bytesPerSession as number,
      heapWithoutActors: one('restoredHeap', [`${count}-without`]).bytesPerSession as number,
    }),
  );
  const steps = one('steps');
  const [none, oneFunction, two] = heap as [number, number, number];
  await writeResult('function-actor-cost', {
    description:
      'what a function FSM costs as an actor of its own: heap per live idle session by functions active (through a rolebox); XState restoring a paused record with its function actors / with their snapshots in the session context instead (time, and heap per session kept live; an upper bound on what holding function state in the session would save); XState events (starts and restores included) and actors of one W1 workflow on the bare machines, by actor kind. No goal: sizes a proposed decision.',
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
          heapBytesWithActors: Math.round(figures.heapWithActors),
          heapBytesWithoutActors: Math.round(figures.heapWithoutActors),
        },
      ]),
    ),
    w1StepsPerWorkflow: steps,
  });
}
