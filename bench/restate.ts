// Restate (DESIGN §8), each figure measured against a baseline in the same run:
// P9  a signal round trip through Restate vs a bare virtual-object handler doing one state
//     get + set, same server, same endpoint process (goal ≤ 1.5×);
// P12 signals per second over 1 000 sessions with 2 endpoint processes vs 1 (goal ≥ 1.6×);
// P13 resident memory of an endpoint process after 100 000 sessions were served vs after
//     1 000 (goal ≤ 1.2×).
// Run: npm run bench:restate   (ROLEBOX_BENCH_P13_SESSIONS=… to change the 100 000)
// One figure: npm run bench:restate -- --only P12 --processes 1,2,4   (on a machine with
// cores to spare: each count of endpoint processes against one, one summary line; the
// result goes to bench/results/restate-P12.json with the machine it ran on).
// (--only takes P9, P12 or P13, comma-separated; --processes is for P12, default 1,2.)
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { TERMINAL_LOOP_PHASES } from '../src/loop/types.js';
import {
  createRestateRolebox,
  freePort,
  type LocalRestateServer,
  restateServerBinary,
  startLocalRestateServer,
} from '../src/restate/index.js';
import { atMost, median, rounded, writeResult } from './measure.js';

const ENDPOINT = new URL('./support/restate-endpoint.ts', import.meta.url).pathname;
const P13_SESSIONS = Number(process.env.ROLEBOX_BENCH_P13_SESSIONS ?? 100_000);
/** Approval workflows with a loop served by P13's second part (a tenth of them first). */
const P13_WORKFLOWS = Number(process.env.ROLEBOX_BENCH_P13_WORKFLOWS ?? 5_000);
const FIGURES = ['P9', 'P12', 'P13'] as const;
type Figure = (typeof FIGURES)[number];

/** What the command line asks for: which figures, and P12's counts of endpoint processes. */
function commandLine(): { only: Figure[]; processes: number[] } {
  const { values } = parseArgs({
    options: { only: { type: 'string' }, processes: { type: 'string' } },
    strict: true,
  });
  const only = (values.only ?? process.env.ROLEBOX_BENCH_ONLY ?? FIGURES.join(','))
    .split(',')
    .map((name) => name.trim().toUpperCase());
  for (const name of only)
    if (!FIGURES.includes(name as Figure))
      throw new Error(`--only takes ${FIGURES.join(', ')} (comma-separated), got ${name}`);
  const processes = (values.processes ?? '1,2').split(',').map(Number);
  if (processes.some((count) => !Number.isInteger(count) || count < 1) || !processes.includes(1))
    throw new Error(
      `--processes takes counts of endpoint processes including 1, as 1,2,4; got ${values.processes}`,
    );
  return { only: only as Figure[], processes: [...new Set(processes)].sort((a, b) => a - b) };
}
const ASKED = commandLine();

if (!restateServerBinary()) {
  console.log('bench:restate skipped: no restate-server binary for this platform');
  process.exit(0);
}

interface Setup {
  readonly server: LocalRestateServer;
  readonly endpoint: ChildProcess;
  readonly ingressUrl: string;
  /** The endpoint's JS heap in MiB once garbage is collected (one process only). */
  settledHeapMiB(): Promise<number>;
  stop(): Promise<void>;
}

/** A fresh server and endpoint (with `processes` processes), registered. */
async function setUp(processes: number): Promise<Setup> {
  const server = await startLocalRestateServer();
  const port = await freePort();
  const endpoint = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      'tsx',
      '--conditions=rolebox-source',
      ENDPOINT,
      String(port),
      String(processes),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: endpoint.stdout as NodeJS.ReadableStream });
  const heapWaiters: ((bytes: number) => void)[] = [];
  await new Promise<void>((resolve, reject) => {
    endpoint.once('exit', (code) => reject(new Error(`endpoint exited ${code}`)));
    lines.on('line', (line) => {
      if (line.startsWith('READY')) resolve();
      if (line.startsWith('HEAP ')) heapWaiters.shift()?.(Number(line.slice(5)));
    });
  });
  await server.register(`http://127.0.0.1:${port}`);
  return {
    server,
    endpoint,
    ingressUrl: server.ingressUrl,
    settledHeapMiB: () =>
      new Promise<number>((resolve) => {
        heapWaiters.push((bytes) => resolve(bytes / 1_048_576));
        endpoint.kill('SIGUSR2');
      }),
    stop: async () => {
      endpoint.kill('SIGTERM');
      await server.stop();
    },
  };
}

async function post(url: string, body: unknown): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

/** Runs `calls` with at most `concurrency` in flight; returns the seconds it took. */
async function pooled(calls: number, concurrency: number, call: (i: number) => Promise<unknown>) {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < calls) await call(next++);
    }),
  );
  return (performance.now() - start) / 1000;
}

/** P9: sequential round trips, the two kinds alternating in batches. */
async function measureP9() {
  const setup = await setUp(1);
  try {
    const rb = createRestateRolebox({ ingressUrl: setup.ingressUrl });
    const session = await rb.openSession({ id: 'p9' });
    await session.activate('approval');
    const bareUrl = `${setup.ingressUrl}/bare/p9/signal`;
    const floorUrl = `${setup.ingressUrl}/floor/p9/signal`;
    const signal = () => session.signal({ type: 'progress', payload: { step: 1 } });
    const bare = () => post(bareUrl, [{ type: 'progress', payload: { step: 1 } }]);
    const floor = () => post(floorUrl, [{ type: 'progress', payload: { step: 1 } }]);
    for (let i = 0; i < 50; i++) {
      await signal();
      await bare();
      await floor();
    }
    const ratios: number[] = [];
    const floorRatios: number[] = [];
    const roleboxMs: number[] = [];
    const bareMs: number[] = [];
    const floorMs: number[] = [];
    for (let sample = 0; sample < 8; sample++) {
      const time = async (call: () => Promise<unknown>) => {
        const start = performance.now();
        for (let i = 0; i < 40; i++) await call();
        return (performance.now() - start) / 40;
      };
      const b = await time(bare);
      const f = await time(floor);
      const r = await time(signal);
      bareMs.push(b);
      floorMs.push(f);
      roleboxMs.push(r);
      ratios.push(r / b);
      floorRatios.push(f / b);
    }
    return {
      bareMsPerCall: rounded(median(bareMs)),
      roleboxMsPerCall: rounded(median(roleboxMs)),
      spread: { min: rounded(Math.min(...ratios)), max: rounded(Math.max(...ratios)) },
      ratio: atMost(median(ratios), 1.5, '×'),
      restateFloor: {
        what: 'the Restate operations of a rolebox step without rolebox: the state reads, ctx.date.now() (journaled: a round trip to the server), the writes',
        msPerCall: rounded(median(floorMs)),
        ratioToBare: rounded(median(floorRatios)),
        spread: { min: rounded(Math.min(...floorRatios)), max: rounded(Math.max(...floorRatios)) },
        roleboxToFloor: rounded(median(roleboxMs) / median(floorMs)),
      },
    };
  } finally {
    await setup.stop();
  }
}

/** CPU ticks (user + system) a process and its children that exited have used (Linux). */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]);
}

/** The live child processes of `pid` (the cluster's endpoint processes). */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Where the CPU went during the last throughput run: share of one core per process group. */
let lastCpuSplit: Record<string, string> = {};

/** Signals per second over 1 000 sessions (opened first), 64 in flight. */
async function throughput(processes: number): Promise<number> {
  const setup = await setUp(processes);
  try {
    const rb = createRestateRolebox({ ingressUrl: setup.ingressUrl });
    const ids = Array.from({ length: 1000 }, (_, i) => `p12-${i}`);
    await pooled(ids.length, 64, (i) => rb.openSession({ id: ids[i] as string }));
    const signal = (i: number) =>
      rb.session(ids[i % ids.length] as string).signal({ type: 'progress', payload: { i } });
    await pooled(1000, 64, signal);
    const calls = 4000;
    const endpointPids =
      processes > 1 ? childPids(setup.endpoint.pid as number) : [setup.endpoint.pid as number];
    const groups = {
      'restate-server': [setup.server.pid],
      endpoints: endpointPids,
      'load generator': [process.pid],
    };
    const before = Object.values(groups).map((pids) =>
      pids.reduce((sum, pid) => sum + cpuTicks(pid), 0),
    );
    const seconds = await pooled(calls, 64, signal);
    lastCpuSplit = Object.fromEntries(
      Object.entries(groups).map(([name, pids], i) => [
        name,
        `${Math.round((pids.reduce((sum, pid) => sum + cpuTicks(pid), 0) - (before[i] ?? 0)) / seconds)}%`,
      ]),
    );
    return calls / seconds;
  } finally {
    await setup.stop();
  }
}

/** Signals per second with each count of endpoint processes, against one process. */
async function measureP12(processCounts: readonly number[]) {
  const perSecond = new Map<number, number[]>(processCounts.map((count) => [count, []]));
  const cpu: Record<string, Record<string, string>[]> = {};
  for (let sample = 0; sample < 2; sample++)
    for (const count of processCounts) {
      perSecond.get(count)?.push(await throughput(count));
      const key = `${count} process(es)`;
      cpu[key] = [...(cpu[key] ?? []), lastCpuSplit];
    }
  const one = perSecond.get(1) as number[];
  /** Per sample, `count` processes over one, and their median and spread. */
  const against = (count: number) => {
    const ratios = (perSecond.get(count) as number[]).map((value, i) => value / (one[i] as number));
    return {
      signalsPerSecond: (perSecond.get(count) as number[]).map((v) => rounded(v, 0)),
      overOne: rounded(median(ratios)),
      spread: { min: rounded(Math.min(...ratios)), max: rounded(Math.max(...ratios)) },
    };
  };
  const byProcesses = Object.fromEntries(processCounts.map((count) => [count, against(count)]));
  const two = processCounts.includes(2) ? against(2).overOne : undefined;
  return {
    byProcesses,
    ratio: {
      value: two ?? null,
      unit: '×',
      goal: '>= 1.6 (2 processes over 1)',
      met: two !== undefined && two >= 1.6,
    },
    cpuPerCore: cpu,
    machine: `${hostname()}: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, shared with the restate-server and this load generator`,
  };
}

/** The one summary line of P12. */
function p12Line(p12: Awaited<ReturnType<typeof measureP12>>): string {
  const parts = Object.entries(p12.byProcesses).map(
    ([count, figure]) =>
      `${count} process${count === '1' ? '' : 'es'} ${rounded(median(figure.signalsPerSecond), 0)}/s${count === '1' ? '' : ` (${figure.overOne}×, ${figure.spread.min}–${figure.spread.max})`}`,
  );
  return `P12 on ${p12.machine}: ${parts.join(', ')}; goal ${p12.ratio.goal}: ${p12.ratio.met ? 'met' : 'not met'}`;
}

/** The endpoint process's resident set, in MiB (Linux). */
function residentMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(line?.replace(/\D+/g, '')) / 1024;
}

async function measureP13() {
  const setup = await setUp(1);
  try {
    const rb = createRestateRolebox({ ingressUrl: setup.ingressUrl });
    // Each session served once: opened (a step that writes its first record).
    const serve = async (from: number, to: number) =>
      pooled(to - from, 64, (i) => rb.openSession({ id: `p13-${from + i}` }));
    const pid = setup.endpoint.pid as number;
    await serve(0, 1000);
    const after1k = residentMiB(pid);
    const heap1k = await setup.settledHeapMiB();
    const marks: { sessions: number; residentMiB: number; settledHeapMiB: number }[] = [
      { sessions: 1000, residentMiB: rounded(after1k, 1), settledHeapMiB: rounded(heap1k, 1) },
    ];
    const step = Math.max(1000, Math.floor(P13_SESSIONS / 10));
    for (let done = 1000; done < P13_SESSIONS; ) {
      const to = Math.min(P13_SESSIONS, done + step);
      const seconds = await serve(done, to);
      done = to;
      marks.push({
        sessions: done,
        residentMiB: rounded(residentMiB(pid), 1),
        settledHeapMiB: rounded(await setup.settledHeapMiB(), 1),
      });
      console.log(
        `P13: ${done} sessions served (${rounded(step / seconds, 0)}/s), ${JSON.stringify(marks.at(-1))}`,
      );
    }
    const last = marks.at(-1) ?? marks[0];
    return {
      marks,
      ratio: atMost((last?.residentMiB ?? after1k) / after1k, 1.2, '×'),
      heapRatio: rounded((last?.settledHeapMiB ?? heap1k) / heap1k),
    };
  } finally {
    await setup.stop();
  }
}

/**
 * P13, second part: approval workflows with a loop, as the million soak runs them in
 * process: open, activate the approval, need_approval, answer, a 2-round loop through the
 * worker service, and a third closed once their loop has finished. The endpoint's heap after
 * gc once a tenth of them are through, and once all are (goal ≤ 1.05×: flat).
 */
async function measureP13Workflows() {
  const setup = await setUp(1);
  try {
    const rb = createRestateRolebox({ ingressUrl: setup.ingressUrl });
    const workflow = async (index: number) => {
      const session = await rb.openSession({ id: `wf-${index}` });
      await session.activate('approval');
      await session.signal({ type: 'need_approval', payload: { reason: 'refund over $500' } });
      await session.signal({ type: 'answer', payload: {} });
      await session.startLoop('|loop:2| tidy the notes');
      // The rounds run in the worker service: wait for the loop to finish.
      for (let poll = 0; poll < 2_000; poll++) {
        const { loop } = await session.view();
        if (loop === null || TERMINAL_LOOP_PHASES.has(loop.phase)) break;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (index % 3 === 0) await session.close();
    };
    const first = Math.max(1, Math.floor(P13_WORKFLOWS / 10));
    const started = performance.now();
    await pooled(first, 32, (i) => workflow(i));
    const heapFirst = await setup.settledHeapMiB();
    await pooled(P13_WORKFLOWS - first, 32, (i) => workflow(first + i));
    const heapAll = await setup.settledHeapMiB();
    const seconds = (performance.now() - started) / 1000;
    return {
      workflows: P13_WORKFLOWS,
      workflowsPerSecond: rounded(P13_WORKFLOWS / seconds, 0),
      settledHeapMiB: { [first]: rounded(heapFirst, 1), [P13_WORKFLOWS]: rounded(heapAll, 1) },
      ratio: atMost(heapAll / heapFirst, 1.05, '×'),
    };
  } finally {
    await setup.stop();
  }
}

const asked = (figure: Figure) => ASKED.only.includes(figure);
const p9 = asked('P9') ? await measureP9() : undefined;
if (p9) console.log('P9', JSON.stringify(p9));
const p12 = asked('P12') ? await measureP12(ASKED.processes) : undefined;
if (p12) console.log(p12Line(p12));
const p13 = asked('P13') ? await measureP13() : undefined;
if (p13) console.log('P13', JSON.stringify(p13));
const p13Loops = asked('P13') ? await measureP13Workflows() : undefined;
if (p13Loops) console.log('P13 workflows', JSON.stringify(p13Loops));
const all = ASKED.only.length === FIGURES.length;
await writeResult(all ? 'restate' : `restate-${ASKED.only.join('-')}`, {
  description:
    'rolebox on Restate: P9 signal round trip vs a bare get+set handler (same server, same endpoint process); P12 signals/s over 1 000 sessions, N endpoint processes vs 1 (64 in flight); P13 endpoint RSS (and JS heap after gc) after N sessions served (each opened once) vs after 1 000, and the heap after N approval workflows with a 2-round loop (a third closed) vs after a tenth of them',
  restateServer: '1.7.x from npm',
  restateSdk: '1.12.x',
  ...(p9 ? { P9: p9 } : {}),
  ...(p12 ? { P12: p12 } : {}),
  ...(p13 ? { P13: { sessions: P13_SESSIONS, ...p13 } } : {}),
  ...(p13Loops ? { P13workflows: p13Loops } : {}),
});
