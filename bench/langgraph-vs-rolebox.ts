// rolebox side by side with LangGraph.js (@langchain/langgraph 1.7, its SQLite checkpointer
// 1.0), the same workflows built in both:
//  - approval: create → paused for a human's approval → resumed with the answer → done.
//    LangGraph: one node that calls interrupt(), resumed with Command({ resume }).
//    rolebox: a session with the function `gate/continue_until: signal_observed(answer)`,
//    `need_approval` (→ gated), then `answer` and an idle cycle (→ complete).
//    In memory (MemorySaver / MemorySnapshotStore) and with SQLite (SqliteSaver /
//    SqliteSnapshotStore): each pair keeps its workflows in the same medium.
//  - loop: 5 rounds of a worker that answers at once, each round's prompt seeded with the
//    previous summary (rolebox's inherit mode; in LangGraph a node looping on itself).
//  - fresh (W2b, serverless: a fresh instance per workflow): each approval workflow builds
//    its own instance (LangGraph: compile the graph with a new checkpointer; rolebox:
//    createRolebox and start()), runs it (pause, answer) and closes it (rolebox: stop());
//    in memory (a new MemorySaver / MemorySnapshotStore each) and with SQLite (the same file
//    opened and closed by each). And `fresh-sqlite-open` (W2c): the SQLite file opened once per
//    process and kept open, a fresh instance per workflow over it (LangGraph: the graph
//    compiled per workflow with the one SqliteSaver; rolebox: createRolebox per workflow with
//    the one SqliteSnapshotStore): what a serverless host that keeps its connection between
//    requests pays, without the open and close (a checkpoint and a WAL restart, both fsyncs).
//  - paused: 10 000 paused approval workflows at once, rolebox passivating all but the
//    last `maxLiveSessions` (virtual actors, DESIGN §7): memory and file bytes per paused
//    workflow, then every one resumed (time per resume).
// Beside them, a third contender where a goal is not met: rolebox's own machines driven bare,
// with no runtime (`machines`, bench/support/bare-*.ts): the floor each workload hits.
// Every measurement runs in a fresh child process (`--expose-gc`), the systems alternating,
// and the ratios pair the children of one sample: the machine is shared and noisy, only
// ratios measured in one run compare. Goals (the virtual-actor issue): LangGraph time /
// rolebox time ≥ 5 on each, rolebox bytes per paused workflow ≤ LangGraph's.
// Run: npm run bench:langgraph (ROLEBOX_BENCH_QUICK=1: W2b in fewer, smaller batches)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Annotation,
  Command,
  END,
  interrupt,
  MemorySaver,
  START,
  StateGraph,
} from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import Database from 'better-sqlite3';
import {
  createRolebox,
  defineFunction,
  MemorySnapshotStore,
  type Rolebox,
  type SnapshotStore,
} from '../src/index.js';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { settle } from '../src/testing/index.js';
import { median, timeNs, writeResult } from './measure.js';
import { bareLoopTree } from './support/bare-loop.js';
import { bareMachineApprovals } from './support/bare-machines.js';
import { memoryRecords, sharedRecords, sqliteRecords } from './support/bare-records.js';
import { InstantDispatcher } from './support/instant-dispatcher.js';

/**
 * The contenders. `rolebox-live` is rolebox without a store (every session stays a live
 * actor): not a pair for the goals, since it persists nothing, but it shows what the store
 * and passivation cost or save. `machines` is rolebox's machines driven bare with the same
 * events (bench/support/bare-machines.ts), sessions kept as JSON in the same medium (a Map
 * or a SQLite table, bare-records.ts): the floor the actor tree sets, in the same run —
 * what rolebox would reach with a runtime costing nothing; for the loops, the loop machine in
 * its session tree (bare-loop.ts's bareLoopTree; P2 reports it beside its baseline).
 */
const SYSTEMS = ['langgraph', 'rolebox', 'rolebox-live', 'machines'] as const;
type System = (typeof SYSTEMS)[number];
/** Where a system keeps its workflows: nowhere but its live objects, in memory, or in SQLite. */
type Medium = 'none' | 'memory' | 'sqlite';

/** Each scenario, the systems it runs and the medium each keeps its workflows in. */
const PLAN = {
  'approval-memory': {
    langgraph: 'memory',
    rolebox: 'memory',
    'rolebox-live': 'none',
    machines: 'memory',
  },
  'approval-sqlite': { langgraph: 'sqlite', rolebox: 'sqlite', machines: 'sqlite' },
  'fresh-memory': { langgraph: 'memory', rolebox: 'memory', machines: 'memory' },
  'fresh-sqlite': { langgraph: 'sqlite', rolebox: 'sqlite', machines: 'sqlite' },
  'fresh-sqlite-open': { langgraph: 'sqlite', rolebox: 'sqlite', machines: 'sqlite' },
  // Nothing to pause in a loop: both run without persistence, LangGraph compiled without
  // a checkpointer, rolebox without a store; the machines' floor is the loop machine in its
  // session tree, driven bare.
  loop: { langgraph: 'none', rolebox: 'none', machines: 'none' },
  // The same loop checkpointed in memory (MemorySaver after every step / MemorySnapshotStore;
  // the bare tree's session snapshot as JSON in a Map once the loop is done, as often as
  // rolebox saves; rolebox also writes its system record, the loop registry, the floor not).
  'loop-checkpointed': { langgraph: 'memory', rolebox: 'memory', machines: 'memory' },
  'paused-memory': {
    langgraph: 'memory',
    rolebox: 'memory',
    'rolebox-live': 'none',
    machines: 'memory',
  },
  'paused-sqlite': { langgraph: 'sqlite', rolebox: 'sqlite', machines: 'sqlite' },
} as const satisfies Record<string, Partial<Record<System, Medium>>>;
type Scenario = keyof typeof PLAN;
const SCENARIOS = Object.keys(PLAN) as Scenario[];

const systemsOf = (scenario: Scenario) => Object.keys(PLAN[scenario]) as System[];
const mediumOf = (scenario: Scenario, system: System): Medium =>
  (PLAN[scenario] as Partial<Record<System, Medium>>)[system] ?? 'none';

/** Steady state: warm-up, then batches of workflows in a row; the median batch counts. */
const STEADY = { warmUp: 200, batches: 7, perBatch: 100, samples: 3 };
/** A fresh instance per workflow: fewer in a row (each builds and closes its instance). */
const FRESH = process.env.ROLEBOX_BENCH_QUICK
  ? { warmUp: 10, batches: 5, perBatch: 10, samples: 2 }
  : { warmUp: 30, batches: 7, perBatch: 20, samples: 3 };
const LOOP = { rounds: 5, warmUp: 100, batches: 7, perBatch: 50, samples: 3 };
/**
 * 10 000 paused at once; creation and resumption timed in batches of 1 000. rolebox keeps
 * at most `maxLiveSessions` live, so 9 900 of them really are passivated (in the store only).
 */
const PAUSED = { count: 10_000, perBatch: 1_000, warmUp: 200, samples: 3, maxLiveSessions: 100 };
const SPEED_GOAL = 5;

/** One approval workflow, the same in both systems: `pause` leaves it waiting, `resume` ends it. */
interface Approvals {
  /** Creates the workflow and runs it up to the approval it waits for (stored when stored). */
  pause(id: string): Promise<void>;
  /** Answers the approval and runs the workflow to its end (stored when stored). */
  resume(id: string): Promise<void>;
  /** Lets background work finish (rolebox: the passivations the LRU limit started). */
  quiesce(): Promise<void>;
  /** How many workflows are live objects now (rolebox's live sessions), when that is known. */
  live(): number | undefined;
  /** The SQLite file, when stored there. */
  readonly file?: string;
  close(): Promise<void>;
}

const ApprovalState = Annotation.Root({
  request: Annotation<string>,
  approved: Annotation<boolean | undefined>,
  status: Annotation<string>,
});

/** The smallest LangGraph approval: one node that interrupts for the answer, then ends. */
const approvalGraph = new StateGraph(ApprovalState)
  .addNode('approval', () => {
    const answer = interrupt({ reason: 'prod' }) as { approved: boolean };
    return { approved: answer.approved, status: 'complete' };
  })
  .addEdge(START, 'approval')
  .addEdge('approval', END);

/**
 * A LangGraph SQLite connection set as rolebox's SqliteSnapshotStore sets its own (WAL,
 * `synchronous = NORMAL`), so both commit without an fsync per transaction.
 */
function langgraphDatabase(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

/**
 * LangGraph's checkpoint is stored when invoke() resolves: it awaits every checkpoint
 * write before returning, whatever the `durability` mode (Pregel.stream's finally).
 */
function langgraphApprovals(medium: Medium, dir: string, opened?: SqliteSaver): Approvals {
  const file = join(dir, 'langgraph.db');
  const db = medium === 'sqlite' && !opened ? langgraphDatabase(file) : undefined;
  const graph = approvalGraph.compile({
    checkpointer: opened ?? (db ? new SqliteSaver(db) : new MemorySaver()),
  });
  return {
    async pause(id) {
      const paused = await graph.invoke(
        { request: 'deploy', status: 'pending' },
        { configurable: { thread_id: id } },
      );
      if (!('__interrupt__' in paused)) throw new Error(`langgraph ${id} did not pause`);
    },
    async resume(id) {
      const done = await graph.invoke(new Command({ resume: { approved: true } }), {
        configurable: { thread_id: id },
      });
      if (done.status !== 'complete') throw new Error(`langgraph ${id} did not complete`);
    },
    quiesce: async () => {},
    live: () => undefined,
    ...(db ? { file } : {}),
    async close() {
      db?.close();
    },
  };
}

const answered = 'signal_observed(answer)';
const approvalFunction = { name: 'approval', gate: answered, continue_until: answered };
/**
 * The bare machines' definition, made once: their floor does not pay for building machines
 * (a rolebox defines its function per instance in W2b and finds its machines in its cache).
 */
const approvalDefinition = defineFunction(approvalFunction);

/** rolebox's store for a medium: none, MemorySnapshotStore or SqliteSnapshotStore. */
function roleboxStore(medium: Medium, file: string): SnapshotStore | undefined {
  if (medium === 'memory') return new MemorySnapshotStore();
  if (medium === 'sqlite') return new SqliteSnapshotStore(file);
  return undefined;
}

/**
 * rolebox's approval. With a store, `saveDebounceMs: 0` and a flush after the pause and
 * after the end make the same two states stored as LangGraph's two invocations do.
 * `maxLiveSessions` passivates the least recently used sessions beyond it.
 */
async function roleboxApprovals(
  medium: Medium,
  dir: string,
  maxLiveSessions?: number,
  opened?: SnapshotStore,
): Promise<Approvals> {
  const file = join(dir, 'rolebox.db');
  const store = opened ?? roleboxStore(medium, file);
  const rb = createRolebox({
    functions: [defineFunction(approvalFunction)],
    ...(store ? { store, saveDebounceMs: 0 } : {}),
    ...(maxLiveSessions ? { maxLiveSessions } : {}),
  });
  await rb.start();
  return {
    async pause(id) {
      const session = await rb.openSession({ id });
      session.activate('approval');
      session.signal({ type: 'need_approval', payload: { reason: 'prod' } });
      if (store) await rb.flush();
    },
    async resume(id) {
      // A passivated session is activated here (read from the store, checked, restored).
      const session = rb.session(id);
      session.signal({ type: 'answer', payload: { approved: true } });
      if (session.idle().completed[0] !== 'approval')
        throw new Error(`rolebox ${id} did not complete`);
      if (store) await rb.flush();
    },
    async quiesce() {
      // A passivation flushes, then stops the session: a few turns of the event loop.
      await settle(5);
      await rb.flush();
      await settle(5);
    },
    live: () => rb.sessions().length,
    ...(medium === 'sqlite' ? { file } : {}),
    async close() {
      await rb.stop();
      // A store opened by the caller outlives the rolebox (the caller closes it).
      if (!opened) await store?.close?.();
    },
  };
}

function approvals(
  system: System,
  medium: Medium,
  dir: string,
  maxLiveSessions?: number,
): Promise<Approvals> {
  if (system === 'machines')
    return Promise.resolve(
      bareMachineApprovals(approvalDefinition, {
        records: medium === 'sqlite' ? sqliteRecords(join(dir, 'machines.db')) : memoryRecords(),
        ...(maxLiveSessions ? { maxLive: maxLiveSessions } : {}),
      }),
    );
  return system === 'langgraph'
    ? Promise.resolve(langgraphApprovals(medium, dir))
    : roleboxApprovals(medium, dir, maxLiveSessions);
}

/** Microseconds per item of each batch of `perBatch` calls of `run(index)`. */
async function batches(
  count: number,
  perBatch: number,
  first: number,
  run: (index: number) => Promise<void>,
  afterBatch: () => Promise<void> = async () => {},
): Promise<number[]> {
  const result: number[] = [];
  for (let batch = 0; batch < count; batch++) {
    const start = first + batch * perBatch;
    const ns = await timeNs(async () => {
      for (let index = start; index < start + perBatch; index++) await run(index);
      // Work a batch left running in the background is counted in it.
      await afterBatch();
    });
    result.push(ns / perBatch / 1000);
  }
  return result;
}

/** Child: approval workflows in a row, each in a fresh instance built and closed for it (W2b). */
async function measureFresh(system: System, medium: Medium, dir: string): Promise<number[]> {
  const fresh = async (index: number) => {
    const flow = await approvals(system, medium, dir);
    await flow.pause(`w${index}`);
    await flow.resume(`w${index}`);
    await flow.close();
  };
  await batches(1, FRESH.warmUp, 0, fresh);
  return batches(FRESH.batches, FRESH.perBatch, FRESH.warmUp, fresh);
}

/**
 * Child: W2b over a SQLite file opened once and kept open (W2c): a fresh instance per
 * workflow, the connection (LangGraph's SqliteSaver, rolebox's store) shared by all.
 */
async function measureFreshOverOpenFile(system: System, dir: string): Promise<number[]> {
  const langgraph = system === 'langgraph';
  const db = langgraph ? langgraphDatabase(join(dir, 'langgraph.db')) : undefined;
  const saver = db ? new SqliteSaver(db) : undefined;
  const store = system === 'rolebox' ? new SqliteSnapshotStore(join(dir, 'rolebox.db')) : undefined;
  const records = system === 'machines' ? sqliteRecords(join(dir, 'machines.db')) : undefined;
  const fresh = async (index: number) => {
    const flow = saver
      ? langgraphApprovals('sqlite', dir, saver)
      : records
        ? bareMachineApprovals(approvalDefinition, { records: sharedRecords(records) })
        : await roleboxApprovals('sqlite', dir, undefined, store);
    await flow.pause(`w${index}`);
    await flow.resume(`w${index}`);
    await flow.close();
  };
  await batches(1, FRESH.warmUp, 0, fresh);
  const usPerWorkflow = await batches(FRESH.batches, FRESH.perBatch, FRESH.warmUp, fresh);
  db?.close();
  await store?.close();
  records?.close();
  return usPerWorkflow;
}

/** Child: full approval workflows in a row. */
async function measureApproval(system: System, medium: Medium, dir: string): Promise<number[]> {
  const flow = await approvals(system, medium, dir);
  const full = async (index: number) => {
    await flow.pause(`w${index}`);
    await flow.resume(`w${index}`);
  };
  await batches(1, STEADY.warmUp, 0, full);
  const usPerWorkflow = await batches(STEADY.batches, STEADY.perBatch, STEADY.warmUp, full);
  await flow.close();
  return usPerWorkflow;
}

const LoopState = Annotation.Root({
  task: Annotation<string>,
  total: Annotation<number>,
  round: Annotation<number>,
  lastSummary: Annotation<string | undefined>,
  rounds: Annotation<{ round: number; text: string }[]>({
    reducer: (recorded, added) => recorded.concat(added),
    default: () => [],
  }),
});

/** The worker LangGraph's loop calls: answers at once and keeps nothing, as rolebox's InstantDispatcher. */
async function instantWorker(_prompt: string): Promise<string> {
  return 'answer';
}

/** A node that runs one round and loops back to itself until the last round. */
const loopGraph = new StateGraph(LoopState)
  .addNode('worker', async (state) => {
    const round = state.round + 1;
    const prompt = state.lastSummary ? `${state.lastSummary}\n\n---\n\n${state.task}` : state.task;
    const text = await instantWorker(prompt);
    return { round, lastSummary: text.slice(-8000), rounds: [{ round, text }] };
  })
  .addEdge(START, 'worker')
  .addConditionalEdges('worker', (state) => (state.round < state.total ? 'worker' : END));

/** Child: 5-round loops, one after the other (each its own thread / session). */
async function measureLoop(system: System, medium: Medium): Promise<number[]> {
  let runLoop: (index: number) => Promise<void>;
  let close = async () => {};
  if (system === 'langgraph') {
    const graph = loopGraph.compile(medium === 'none' ? {} : { checkpointer: new MemorySaver() });
    runLoop = async (index) => {
      const done = await graph.invoke(
        { task: `task ${index}`, total: LOOP.rounds, round: 0 },
        { configurable: { thread_id: `l${index}` } },
      );
      if (done.rounds.length !== LOOP.rounds) throw new Error('langgraph loop did not finish');
    };
  } else if (system === 'machines') {
    // The floor: the loop machine in the tree a rolebox runs it in (root → shard → session →
    // loop, bare-loop.ts's bareLoopTree), one session per loop left open as rolebox's are,
    // with no runtime; checkpointed, the session's persisted snapshot saved as JSON once the
    // loop is done, as often as rolebox saves here (below; rolebox also writes its system
    // record then, the loop registry: the floor leaves it out).
    const tree = bareLoopTree();
    const checkpoints = new Map<string, string>();
    runLoop = async (index) => {
      const done = tree.run(`s${index}`, `l${index}`, LOOP.rounds);
      if (medium !== 'none') checkpoints.set(`s${index}`, JSON.stringify(done.persisted()));
    };
    close = async () => tree.stop();
  } else {
    const store = roleboxStore(medium, '');
    const rb: Rolebox = createRolebox({
      // Its workers answer at once and keep nothing, as LangGraph's instantWorker.
      dispatcher: new InstantDispatcher('answer'),
      limits: { interRoundDelayMs: 0 },
      // Saved without debounce. The save timer still waits for a turn of the event loop, and
      // a worker that answers at once lets all five rounds run before it: rolebox stores
      // each loop once here (after its end), where MemorySaver checkpoints every step. With
      // a worker that takes time, each round's change is saved as it comes.
      ...(store ? { store, saveDebounceMs: 0 } : {}),
    });
    await rb.start();
    let finished: ((phase: string) => void) | undefined;
    rb.on('loop_finished', (event) => finished?.(event.phase));
    runLoop = async () => {
      const session = await rb.openSession();
      const phase = new Promise<string>((resolve) => {
        finished = resolve;
      });
      const started = session.startLoop(`|loop:${LOOP.rounds}| task`);
      if (!started.ok) throw new Error(started.reason);
      if ((await phase) !== 'complete') throw new Error('rolebox loop did not complete');
      // The finished loop stored, as LangGraph's last checkpoint is when invoke() resolves.
      if (store) await rb.flush();
    };
    close = () => rb.stop();
  }
  const settled = async (index: number) => {
    await runLoop(index);
    // What a loop leaves for after loop_finished is counted in the batch's last loop.
    if ((index + 1) % LOOP.perBatch === 0) await settle();
  };
  await batches(1, LOOP.warmUp, 0, settled);
  const usPerLoop = await batches(LOOP.batches, LOOP.perBatch, LOOP.warmUp, settled);
  await close();
  return usPerLoop;
}

interface Memory {
  readonly heap: number;
  readonly heapAndExternal: number;
  readonly rss: number;
}

/** Memory after full collections (several: weak references and finalizers need more than one). */
function memory(): Memory {
  for (let i = 0; i < 4; i++) globalThis.gc?.();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, heapAndExternal: usage.heapUsed + usage.external, rss: usage.rss };
}

/** Bytes of a SQLite file with its WAL folded in (through a second connection). */
function fileBytes(file: string): number {
  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return statSync(file).size;
}

interface PausedSample {
  readonly createUs: number[];
  readonly resumeUs: number[];
  readonly heapBytesPerPaused: number;
  readonly heapAndExternalBytesPerPaused: number;
  readonly rssBytesPerPaused: number;
  readonly fileBytesPerPaused?: number;
  /** Live sessions while the 10 000 waited (rolebox): at most maxLiveSessions with a store. */
  readonly liveWhilePaused?: number;
}

/** Child: 10 000 paused at once, their memory and file size, then each resumed. */
async function measurePaused(system: System, medium: Medium, dir: string): Promise<PausedSample> {
  const flow = await approvals(system, medium, dir, PAUSED.maxLiveSessions);
  await batches(1, PAUSED.warmUp, 0, async (index) => {
    await flow.pause(`warm${index}`);
    await flow.resume(`warm${index}`);
  });
  await flow.quiesce();
  const fileBefore = flow.file ? fileBytes(flow.file) : 0;
  const before = memory();
  const pause = (index: number) => flow.pause(`p${index}`);
  const count = PAUSED.count / PAUSED.perBatch;
  const createUs = await batches(count, PAUSED.perBatch, 0, pause, () => flow.quiesce());
  const liveWhilePaused = flow.live();
  if (
    medium !== 'none' &&
    liveWhilePaused !== undefined &&
    liveWhilePaused > PAUSED.maxLiveSessions
  )
    throw new Error(`${system}: ${liveWhilePaused} live sessions, not passivated`);
  const after = memory();
  const fileAfter = flow.file ? fileBytes(flow.file) : 0;
  const resume = (index: number) => flow.resume(`p${index}`);
  const resumeUs = await batches(count, PAUSED.perBatch, 0, resume, () => flow.quiesce());
  await flow.close();
  const per = (bytes: number) => Math.round(bytes / PAUSED.count);
  return {
    createUs,
    resumeUs,
    heapBytesPerPaused: per(after.heap - before.heap),
    heapAndExternalBytesPerPaused: per(after.heapAndExternal - before.heapAndExternal),
    rssBytesPerPaused: per(after.rss - before.rss),
    ...(flow.file ? { fileBytesPerPaused: per(fileAfter - fileBefore) } : {}),
    ...(liveWhilePaused === undefined ? {} : { liveWhilePaused }),
  };
}

async function measureOne(scenario: Scenario, system: System): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'rolebox-langgraph-'));
  const medium = mediumOf(scenario, system);
  try {
    switch (scenario) {
      case 'approval-memory':
      case 'approval-sqlite':
        return await measureApproval(system, medium, dir);
      case 'fresh-memory':
      case 'fresh-sqlite':
        return await measureFresh(system, medium, dir);
      case 'fresh-sqlite-open':
        return await measureFreshOverOpenFile(system, dir);
      case 'loop':
      case 'loop-checkpointed':
        return await measureLoop(system, medium);
      case 'paused-memory':
      case 'paused-sqlite':
        return await measurePaused(system, medium, dir);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function child<T>(scenario: Scenario, system: System): T {
  const output = execFileSync(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      'tsx',
      '--conditions=rolebox-source',
      import.meta.filename,
      '--one',
      scenario,
      system,
    ],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  return JSON.parse(output) as T;
}

/** Every system's child for one sample, the order rotating between samples. */
function sample<T>(scenario: Scenario, index: number): Partial<Record<System, T>> {
  const systems = systemsOf(scenario);
  const shift = index % systems.length;
  const order = [...systems.slice(shift), ...systems.slice(0, shift)];
  const result: Partial<Record<System, T>> = {};
  for (const system of order) result[system] = child<T>(scenario, system);
  return result;
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));

/** Median and range of a list of figures. */
function spread(values: readonly number[], digits = 1) {
  return {
    median: round(median(values), digits),
    min: round(Math.min(...values), digits),
    max: round(Math.max(...values), digits),
  };
}

/**
 * LangGraph µs, rolebox µs and LangGraph/rolebox: each system over all its batches, the
 * ratio per sample (median batch / median batch of the two children of that sample), its
 * median over the samples judged against the goal.
 */
function compare(langgraph: number[][], rolebox: number[][], goal = true) {
  const ratios = langgraph.map(
    (batches, index) => median(batches) / median(rolebox[index] as number[]),
  );
  const ratio = spread(ratios, 2);
  return {
    langgraphUs: spread(langgraph.flat()),
    roleboxUs: spread(rolebox.flat()),
    ratio,
    ...(goal ? { meetsGoal: ratio.median >= SPEED_GOAL } : {}),
  };
}

/** The samples of a scenario: every system's figures, one row per sample. */
function samples<T>(scenario: Scenario, count: number): Partial<Record<System, T>>[] {
  const runs = Array.from({ length: count }, (_, index) => sample<T>(scenario, index));
  console.error(`measured ${scenario}`);
  return runs;
}

function column<T>(runs: Partial<Record<System, T>>[], system: System): T[] {
  return runs.map((run) => run[system] as T);
}

/** LangGraph against rolebox (the goal), and against rolebox without a store when it ran. */
function steady(scenario: Scenario, count: number) {
  const runs = samples<number[]>(scenario, count);
  const langgraph = column(runs, 'langgraph');
  return {
    media: PLAN[scenario],
    ...compare(langgraph, column(runs, 'rolebox')),
    ...(systemsOf(scenario).includes('rolebox-live')
      ? { againstRoleboxLive: compare(langgraph, column(runs, 'rolebox-live'), false) }
      : {}),
    ...(systemsOf(scenario).includes('machines')
      ? againstMachines(langgraph, column(runs, 'rolebox'), column(runs, 'machines'))
      : {}),
  };
}

/**
 * LangGraph against the bare machines (the floor), and rolebox's time over theirs (its
 * runtime's share), each a median of the ratios paired within a sample.
 */
function againstMachines(langgraph: number[][], rolebox: number[][], machines: number[][]) {
  return {
    againstMachinesBare: compare(langgraph, machines, false),
    roleboxOverMachines: spread(
      rolebox.map((batches, index) => median(batches) / median(machines[index] as number[])),
      2,
    ),
  };
}

type BytesKey =
  | 'heapBytesPerPaused'
  | 'heapAndExternalBytesPerPaused'
  | 'rssBytesPerPaused'
  | 'fileBytesPerPaused';

function paused(scenario: Scenario) {
  const runs = samples<PausedSample>(scenario, PAUSED.samples);
  const live = systemsOf(scenario).includes('rolebox-live');
  const machines = systemsOf(scenario).includes('machines');
  // The goal is on resident bytes (heap + external, and heapUsed alone); RSS and the file
  // size are reported without one.
  const bytes = (key: BytesKey, goal: boolean) => {
    const of = (system: System) => median(column(runs, system).map((one) => one[key] ?? 0));
    const langgraph = of('langgraph');
    const rolebox = of('rolebox');
    return {
      langgraph,
      rolebox,
      ...(live ? { roleboxLive: of('rolebox-live') } : {}),
      ...(machines ? { machinesBare: of('machines') } : {}),
      // A difference near zero makes a ratio meaningless: the goal reads the bytes.
      ...(goal ? { meetsGoal: rolebox <= langgraph } : {}),
    };
  };
  const times = (key: 'createUs' | 'resumeUs') => {
    const langgraph = column(runs, 'langgraph').map((one) => one[key]);
    const rolebox = column(runs, 'rolebox').map((one) => one[key]);
    return {
      ...compare(langgraph, rolebox),
      ...(machines
        ? againstMachines(
            langgraph,
            rolebox,
            column(runs, 'machines').map((one) => one[key]),
          )
        : {}),
      ...(live
        ? {
            againstRoleboxLive: compare(
              langgraph,
              column(runs, 'rolebox-live').map((one) => one[key]),
              false,
            ),
          }
        : {}),
    };
  };
  return {
    media: PLAN[scenario],
    roleboxLiveWhilePaused: column(runs, 'rolebox').map((one) => one.liveWhilePaused),
    createPausedUs: times('createUs'),
    resumeUs: times('resumeUs'),
    // heapUsed + external: MemorySaver keeps its checkpoints in Uint8Arrays, whose bytes
    // are outside the JS heap; heapUsed alone would miss them.
    residentBytesPerPaused: bytes('heapAndExternalBytesPerPaused', true),
    heapUsedBytesPerPaused: bytes('heapBytesPerPaused', true),
    rssBytesPerPaused: bytes('rssBytesPerPaused', false),
    ...(scenario === 'paused-sqlite'
      ? { fileBytesPerPaused: bytes('fileBytesPerPaused', false) }
      : {}),
  };
}

function versionOf(name: string): string {
  const file = join(import.meta.dirname, '..', 'node_modules', name, 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

const [, , mode, scenario, system] = process.argv;
if (mode === '--one') {
  if (
    !SCENARIOS.includes(scenario as Scenario) ||
    !systemsOf(scenario as Scenario).includes(system as System)
  )
    throw new Error(`usage: --one <${SCENARIOS.join('|')}> <${SYSTEMS.join('|')}>`);
  process.stdout.write(JSON.stringify(await measureOne(scenario as Scenario, system as System)));
} else {
  const only = mode === '--only' ? (scenario?.split(',') as Scenario[]) : SCENARIOS;
  const wanted = (name: Scenario) => only.includes(name);
  const figures = {
    description:
      'the same workflows in LangGraph.js and rolebox, each measurement in a fresh child process, the systems alternating; times in µs per workflow (loop: per 5-round loop), ratio = LangGraph time / rolebox time paired within one sample, median over samples (goal ≥ 5); memory per paused workflow = heapUsed + external after gc (goal: rolebox ≤ LangGraph); rolebox-live = rolebox without a store, for reference only; againstMachinesBare = LangGraph / rolebox’s machines driven bare with the same events, routed as the runtime routes them, each session’s snapshot saved as JSON in the same medium (a Map, or a row of a SQLite table) and no runtime: the floor this actor tree sets (loops: the loop machine in its session tree); roleboxOverMachines = rolebox time / the bare machines’ time, paired within a sample: the runtime’s share',
    versions: {
      '@langchain/langgraph': versionOf('@langchain/langgraph'),
      '@langchain/langgraph-checkpoint-sqlite': versionOf('@langchain/langgraph-checkpoint-sqlite'),
      '@langchain/core': versionOf('@langchain/core'),
      'better-sqlite3': versionOf('better-sqlite3'),
      xstate: versionOf('xstate'),
    },
    durability:
      'LangGraph invoke() resolves after its checkpoint writes (Pregel.stream awaits them in its finally, whatever the durability mode); rolebox saveDebounceMs 0 and rb.flush() after the pause and after the end (loop: after loop_finished). SQLite: both files WAL with synchronous = NORMAL (LangGraph connection set to it; rolebox store sets it itself).',
    settings: { steady: STEADY, fresh: FRESH, loop: LOOP, paused: PAUSED },
    ...(wanted('approval-memory') || wanted('approval-sqlite')
      ? {
          approvalPerWorkflow: {
            ...(wanted('approval-memory')
              ? { memory: steady('approval-memory', STEADY.samples) }
              : {}),
            ...(wanted('approval-sqlite')
              ? { sqlite: steady('approval-sqlite', STEADY.samples) }
              : {}),
          },
        }
      : {}),
    ...(wanted('fresh-memory') || wanted('fresh-sqlite') || wanted('fresh-sqlite-open')
      ? {
          freshInstancePerWorkflow: {
            ...(wanted('fresh-memory') ? { memory: steady('fresh-memory', FRESH.samples) } : {}),
            ...(wanted('fresh-sqlite') ? { sqlite: steady('fresh-sqlite', FRESH.samples) } : {}),
            ...(wanted('fresh-sqlite-open')
              ? { sqliteFileKeptOpen: steady('fresh-sqlite-open', FRESH.samples) }
              : {}),
          },
        }
      : {}),
    ...(wanted('loop') ? { loopPer5Rounds: steady('loop', LOOP.samples) } : {}),
    ...(wanted('loop-checkpointed')
      ? { loopPer5RoundsCheckpointed: steady('loop-checkpointed', LOOP.samples) }
      : {}),
    ...(wanted('paused-memory') || wanted('paused-sqlite')
      ? {
          paused10000: {
            ...(wanted('paused-memory') ? { memory: paused('paused-memory') } : {}),
            ...(wanted('paused-sqlite') ? { sqlite: paused('paused-sqlite') } : {}),
          },
        }
      : {}),
  };
  // A partial run (--only a,b, to look into one scenario) is printed, never written over
  // the full figures.
  if (mode === '--only') console.log(JSON.stringify(figures, null, 2));
  else await writeResult('langgraph-vs-rolebox', figures);
}
