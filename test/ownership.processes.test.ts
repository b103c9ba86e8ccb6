import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteSnapshotStore } from '../src/sqlite.js';
import { startCli } from './support/cli.js';
import {
  killTaskGroups,
  killTracked,
  PROCESS_TEST_TIMEOUT_MS,
  track,
} from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

// Two rolebox instances in two real processes on ONE SQLite file (SPEC §6, DESIGN §7): a
// session is driven by one process at a time. Each process is test/support/owner-child.ts,
// driven by JSON commands on stdin; what it prints it has stored.

const root = join(import.meta.dirname, '..');
const CHILD = join(import.meta.dirname, 'support', 'owner-child.ts');

type Line = { type: string; at: number; [key: string]: unknown };
interface Answer {
  readonly result?: Record<string, unknown> & { loop?: { phase: string; current: number } };
  readonly error?: {
    code?: string;
    message: string;
    details?: { owner?: { pid: number; host: string }; expiresAt?: number };
  };
  readonly at: number;
}

let dir: string;
let gates: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-twoproc-'));
  gates = join(dir, 'gates');
  await mkdir(gates);
});

afterEach(async () => {
  await killTracked();
  killTaskGroups(join(dir, 'tasks'));
  killTaskGroups(join(dir, '.rolebox', 'tasks'));
  await rm(dir, { recursive: true, force: true });
});

// A worker that waits for its gate file (`<origin session>-<round>`), logs that it ran, and
// answers. Every process runs the same command, so the log says which session's round ran.
const WORKER =
  'cat > /dev/null; while [ ! -f "$GATES/$ROLEBOX_ORIGIN_SESSION-$ROLEBOX_ROUND" ]; do sleep 0.02; done; echo "$ROLEBOX_ORIGIN_SESSION round $ROLEBOX_ROUND" >> "$GATES/runs.log"; echo "answer $ROLEBOX_ROUND"';

const open = (sessionId: string, ...rounds: number[]) =>
  Promise.all(rounds.map((round) => writeFile(join(gates, `${sessionId}-${round}`), '')));
const runs = () =>
  existsSync(join(gates, 'runs.log'))
    ? readFileSync(join(gates, 'runs.log'), 'utf8').trim().split('\n')
    : [];

interface ChildOptions {
  readonly leaseMs?: number;
  readonly host?: string;
  readonly logSaves?: boolean;
  readonly pauseOnNote?: string;
  readonly pauseAtDispatch?: string;
}

/** A rolebox process on the shared store; resolves once it has started. */
async function rolebox(options: ChildOptions = {}) {
  const config = {
    db: join(dir, 'state.db'),
    tasks: join(dir, 'tasks'),
    worker: WORKER,
    leaseMs: options.leaseMs ?? 30_000,
    delayMs: 0,
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.logSaves ? { logSaves: true } : {}),
    ...(options.pauseOnNote === undefined ? {} : { pauseOnNote: options.pauseOnNote }),
    ...(options.pauseAtDispatch === undefined ? {} : { pauseAtDispatch: options.pauseAtDispatch }),
  };
  // Node itself with tsx as a loader: one process, so a signal reaches rolebox.
  const child = track(
    spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=rolebox-source', CHILD, JSON.stringify(config)],
      { cwd: root, env: { ...process.env, GATES: gates }, stdio: ['pipe', 'pipe', 'pipe'] },
    ),
  );
  const lines: Line[] = [];
  const waiters: { predicate: (line: Line) => boolean; resolve: (line: Line) => void }[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  createInterface({ input: child.stdout }).on('line', (text) => {
    const line = JSON.parse(text) as Line;
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  /** The first line (printed already or still to come) that matches; fails if the process ends first. */
  const waitFor = (predicate: (line: Line) => boolean): Promise<Line> => {
    const seen = lines.find(predicate);
    if (seen) return Promise.resolve(seen);
    return Promise.race([
      new Promise<Line>((resolve) => waiters.push({ predicate, resolve })),
      exited.then((code) => {
        throw new Error(
          `process ${child.pid} ended (${code}) before the line came\nlines: ${lines.map((line) => JSON.stringify(line)).join('\n')}\nstderr: ${stderr}`,
        );
      }),
    ]);
  };
  let nextId = 1;
  /** Sends a command; resolves with its answer. */
  const ask = async (op: string, args: Record<string, unknown> = {}): Promise<Answer> => {
    const id = nextId++;
    child.stdin.write(`${JSON.stringify({ id, op, ...args })}\n`);
    return (await waitFor((line) => line.type === 'answer' && line.id === id)) as Answer & Line;
  };
  /** Stops it cleanly (rb.stop(): flushed, claims released); resolves with its exit code. */
  const stop = () => {
    child.stdin.write(`${JSON.stringify({ id: nextId++, op: 'stop' })}\n`);
    return exited;
  };
  const started = await waitFor((line) => line.type === 'started');
  return {
    process: child,
    pid: child.pid as number,
    host: started.host as string,
    wakeUps: started.wakeUps as number,
    lines,
    waitFor,
    ask,
    stop,
    exited,
    stderr: () => stderr,
    /** The notes this process printed (as the CLI prints them), in order. */
    notes: () => notesOf(lines),
    /** The worker tasks of this process's rounds, as its round_started events named them. */
    tasks: () => lines.flatMap((line) => (line.type === 'round_started' ? [line.taskId] : [])),
  };
}
type Child = Awaited<ReturnType<typeof rolebox>>;

/**
 * The notes in what a process wrote on stdout (a closing note is two lines: one note; the
 * `  │ ` lines under a round's note are what its worker produced, not notes).
 */
function notesOf(lines: readonly Line[]): string[] {
  const notes: string[] = [];
  for (const line of lines) {
    if (line.type !== 'out') continue;
    for (const text of String(line.text).split('\n')) {
      if (text.startsWith('  │ ')) continue;
      if (text.startsWith('Rounds: ') && notes.length > 0) notes[notes.length - 1] += `\n${text}`;
      else notes.push(text);
    }
  }
  return notes;
}

const note = (text: string) => (line: Line) =>
  line.type === 'out' &&
  String(line.text)
    .split('\n')
    .some((out) => out.startsWith(text));
const roundStarted = (sessionId: string, round: number) => (line: Line) =>
  line.type === 'round_started' && line.sessionId === sessionId && line.round === round;
const finished = (sessionId: string) => (line: Line) =>
  line.type === 'loop_finished' && line.sessionId === sessionId;

/** Opens session `sessionId` in `child` and starts a three-round loop in it; returns its id. */
async function startLoop(child: Child, sessionId: string): Promise<string> {
  expect((await child.ask('open', { sessionId })).error).toBeUndefined();
  const started = await child.ask('startLoop', {
    sessionId,
    text: `|loop:3| task of ${sessionId}`,
  });
  expect(started.error).toBeUndefined();
  return started.result?.loopId as string;
}

/** Across all `notes` of one loop: one start, each round once, one closing note. */
function expectOneLoop(notes: readonly string[]): void {
  expect(notes.filter((text) => text.startsWith('[loop-progress loop started'))).toHaveLength(1);
  for (const round of [1, 2, 3])
    expect(
      notes.filter((text) => text.startsWith(`[loop-progress round ${round}/3 completed`)),
    ).toHaveLength(1);
  expect(notes.filter((text) => text.startsWith('[loop-progress loop complete]'))).toHaveLength(1);
  expect(notes).toHaveLength(5);
}

/** The claim row of a session, read from the file by a third connection. */
function claimRow(sessionId: string) {
  const db = new Database(join(dir, 'state.db'), { readonly: true });
  try {
    return db
      .prepare('SELECT owner_id, pid, host, token, expires_at FROM claims WHERE session_id = ?')
      .get(sessionId) as
      | { owner_id: string; pid: number; host: string; token: number; expires_at: number }
      | undefined;
  } finally {
    db.close();
  }
}

/** The slots of a stored session, read from the file by a third store. */
async function storedSlots(sessionId: string): Promise<Record<string, unknown>> {
  const store = new SqliteSnapshotStore(join(dir, 'state.db'));
  try {
    const data = (await store.load(sessionId)) as string;
    return (JSON.parse(data) as { snapshot: { context: { slots: Record<string, unknown> } } })
      .snapshot.context.slots;
  } finally {
    await store.close();
  }
}

describe('two rolebox processes on one SQLite file', () => {
  it('each round runs once: A drives its loop, B (started meanwhile) drives its own, each prints only its own notes', async () => {
    const a = await rolebox();
    await startLoop(a, 'alpha');
    await a.waitFor(roundStarted('alpha', 1));
    // B starts while A's first round runs: it sees A's session waiting for its worker.
    const b = await rolebox();
    expect(b.wakeUps).toBe(1);
    await startLoop(b, 'beta');
    await b.waitFor(roundStarted('beta', 1));
    // A's round ends first (B, woken by that worker's end, must leave the session to A).
    await open('alpha', 1);
    await a.waitFor(roundStarted('alpha', 2));
    await open('beta', 1, 2);
    await b.waitFor(roundStarted('beta', 3));
    await open('alpha', 2, 3);
    await open('beta', 3);
    expect(await a.waitFor(finished('alpha'))).toMatchObject({ phase: 'complete' });
    expect(await b.waitFor(finished('beta'))).toMatchObject({ phase: 'complete' });

    expect(runs().sort()).toEqual([
      'alpha round 1',
      'alpha round 2',
      'alpha round 3',
      'beta round 1',
      'beta round 2',
      'beta round 3',
    ]);
    expectOneLoop(a.notes());
    expectOneLoop(b.notes());
    // Each printed the notes of its own loop: the rounds they name are its own workers'.
    const workers = (notes: string[]) =>
      notes.flatMap((text) => [...text.matchAll(/task=(t_\w+)/g)].map((match) => match[1]));
    expect(workers(a.notes())).toEqual(a.tasks());
    expect(workers(b.notes())).toEqual(b.tasks());
    expect(new Set([...a.tasks(), ...b.tasks()]).size).toBe(6);
    // Neither touched the other's session, and nothing failed.
    expect(b.lines.filter((line) => line.sessionId === 'alpha')).toEqual([]);
    expect(a.lines.filter((line) => line.sessionId === 'beta')).toEqual([]);
    expect([...a.lines, ...b.lines].filter((line) => line.type === 'error')).toEqual([]);
    expect(await a.stop()).toBe(0);
    expect(await b.stop()).toBe(0);
  });

  it("the second is refused: openSession and rb.session of A's live session throw session_owned_elsewhere naming A's pid and host", async () => {
    const a = await rolebox();
    await startLoop(a, 'alpha');
    await a.waitFor(roundStarted('alpha', 1));
    const b = await rolebox();
    for (const [op, args] of [
      ['open', { sessionId: 'alpha' }],
      ['open', { sessionId: 'alpha', ifOpen: 'reuse' }],
      ['session', { sessionId: 'alpha' }],
    ] as const) {
      const { error, at } = await b.ask(op, args);
      expect(error?.code, `${op} ${JSON.stringify(args)}`).toBe('session_owned_elsewhere');
      expect(error?.message).toContain(`pid ${a.pid} on ${hostname()}`);
      expect(error?.details?.owner).toEqual({ pid: a.pid, host: hostname() });
      expect(error?.details?.expiresAt).toBeGreaterThan(at);
    }
    // Refused means untouched: nothing live in B, the claim is still A's, and A goes on.
    expect((await b.ask('sessions')).result).toEqual([]);
    expect(claimRow('alpha')?.pid).toBe(a.pid);
    await open('alpha', 1, 2, 3);
    expect(await a.waitFor(finished('alpha'))).toMatchObject({ phase: 'complete' });
    expectOneLoop(a.notes());
    expect(b.lines.filter((line) => line.type !== 'answer' && line.type !== 'started')).toEqual([]);
    expect(runs().sort()).toEqual(['alpha round 1', 'alpha round 2', 'alpha round 3']);
    expect(await a.stop()).toBe(0);
    expect(await b.stop()).toBe(0);
  });

  describe("B's openSession({ id, wait: true }) waits, takes over and finishes A's loop: 3 rounds in all", () => {
    /**
     * A runs round 1 of its loop while B waits for the session; round 2 is running when
     * `end(a, b)` ends A. B's open resolves with the loop where A left it, and B finishes it.
     * Returns: A, B and B's answer.
     */
    async function takeOver(
      end: (a: Child, b: Child) => Promise<void>,
      options: { a?: ChildOptions; b?: ChildOptions } = {},
    ) {
      const a = await rolebox(options.a);
      await startLoop(a, 'alpha');
      await a.waitFor(roundStarted('alpha', 1));
      // B's poll period is a third of its own lease: 1 s.
      const b = await rolebox({ leaseMs: 3_000, ...options.b });
      const waited = b.ask('open', { sessionId: 'alpha', wait: true });
      let answered = false;
      void waited.then(() => (answered = true));
      await open('alpha', 1);
      await a.waitFor(note('[loop-progress round 1/3 completed'));
      await a.waitFor(roundStarted('alpha', 2));
      // A whole round went by while B waited.
      expect(answered).toBe(false);
      await end(a, b);
      const answer = await waited;
      expect(answer.error).toBeUndefined();
      expect(answer.result?.loop).toEqual({ phase: 'awaiting_worker', current: 2 });
      await open('alpha', 2, 3);
      expect(await b.waitFor(finished('alpha'))).toMatchObject({ phase: 'complete' });
      // Across both processes: one loop, each note once, each worker once.
      expectOneLoop([...a.notes(), ...b.notes()]);
      expect(b.notes()).toEqual([
        expect.stringMatching(/^\[loop-progress round 2\/3 completed/),
        expect.stringMatching(/^\[loop-progress round 3\/3 completed/),
        expect.stringMatching(/^\[loop-progress loop complete\]/),
      ]);
      expect(runs().sort()).toEqual(['alpha round 1', 'alpha round 2', 'alpha round 3']);
      expect(b.lines.filter((line) => line.type === 'error')).toEqual([]);
      expect(await b.stop()).toBe(0);
      return { a, b, answer };
    }

    it('A stopped cleanly: its claims released, B takes the session at its next look', async () => {
      let stopping = 0;
      const { answer } = await takeOver(async (a) => {
        expect(await a.stop()).toBe(0);
        stopping = (await a.waitFor((line) => line.type === 'stopping')).at;
      });
      expect(answer.at).toBeGreaterThanOrEqual(stopping);
    });

    it("A SIGKILLed: its pid is dead on this host, B takes the session at once, long before A's claim would expire", async () => {
      let expiresAt = 0;
      const { answer } = await takeOver(
        async (a) => {
          // Frozen first, so that the claim read is A's last one.
          a.process.kill('SIGSTOP');
          expiresAt = claimRow('alpha')?.expires_at as number;
          a.process.kill('SIGKILL');
          await a.exited;
        },
        { a: { leaseMs: 60_000 } },
      );
      expect(answer.at).toBeLessThan(expiresAt);
    });

    it('A on another host SIGKILLed: its pid means nothing here, B takes the session only once the lease has expired', async () => {
      let expiresAt = 0;
      let killedAt = 0;
      const { answer } = await takeOver(
        async (a, b) => {
          expect(a.host).toBe('elsewhere.invalid');
          const refused = await b.ask('session', { sessionId: 'alpha' });
          expect(refused.error?.code).toBe('session_owned_elsewhere');
          expect(refused.error?.message).toContain(`pid ${a.pid} on elsewhere.invalid`);
          a.process.kill('SIGSTOP');
          const claim = claimRow('alpha');
          expect(claim).toMatchObject({ pid: a.pid, host: 'elsewhere.invalid' });
          expiresAt = claim?.expires_at as number;
          a.process.kill('SIGKILL');
          await a.exited;
          killedAt = Date.now();
        },
        { a: { leaseMs: 2_000, host: 'elsewhere.invalid' } },
      );
      expect(answer.at).toBeGreaterThanOrEqual(expiresAt);
      // (The lease ran out after the kill, unless the machine was too slow to tell.)
      if (expiresAt > killedAt) expect(answer.at).toBeGreaterThan(killedAt);
    });
  });

  describe("a stale owner: A's claim expired while A was paused (SIGSTOP) and B took the session", () => {
    /** Every save A was asked for after `since` that included the session: all refused. */
    function expectRefusedSince(a: Child, since: number, sessionId: string): Line[] {
      const saves = a.lines.filter(
        (line) =>
          line.type === 'save' && line.at >= since && (line.ids as string[]).includes(sessionId),
      );
      for (const save of saves) expect(save.refused).toContain(sessionId);
      return saves;
    }

    /** A dropped the session: reported, nothing live, and using it again is refused naming B. */
    async function expectDropped(a: Child, b: Child) {
      const error = await a.waitFor((line) => line.type === 'error');
      expect(error).toMatchObject({ sessionId: 'alpha', code: 'session_owned_elsewhere' });
      expect((await a.ask('sessions')).result).toEqual([]);
      const again = await a.ask('session', { sessionId: 'alpha' });
      expect(again.error?.code).toBe('session_owned_elsewhere');
      expect(again.error?.message).toContain(`pid ${b.pid} on ${hostname()}`);
    }

    it('paused between a change and its save: on SIGCONT that save is refused, A drops the session, the store keeps only what B wrote', async () => {
      const a = await rolebox({ leaseMs: 1_500, logSaves: true });
      await startLoop(a, 'alpha');
      await a.waitFor(roundStarted('alpha', 1));
      const b = await rolebox({ leaseMs: 3_000 });
      // A changes the session and stops itself before saving it.
      const changed = a.ask('setSlot', {
        sessionId: 'alpha',
        key: 'stale',
        value: 'written by A after its claim ran out',
        pause: true,
      });
      await a.waitFor((line) => line.type === 'pausing');
      // A renews nothing while stopped: its claim runs out and B takes the session.
      const taken = await b.ask('open', { sessionId: 'alpha', wait: true });
      expect(taken.result?.loop).toEqual({ phase: 'awaiting_worker', current: 1 });
      expect(claimRow('alpha')?.pid).toBe(b.pid);
      expect(
        (await b.ask('setSlot', { sessionId: 'alpha', key: 'owner', value: 'B' })).error,
      ).toBeUndefined();
      a.process.kill('SIGCONT');
      expect((await changed).error).toBeUndefined();
      const resumed = (await a.waitFor((line) => line.type === 'resumed')).at;
      // Its very next save was that change, refused by the store.
      expect(expectRefusedSince(a, resumed, 'alpha')[0]).toMatchObject({ refused: ['alpha'] });
      await expectDropped(a, b);
      const slots = await storedSlots('alpha');
      expect(slots.owner).toBe('B');
      expect(slots).not.toHaveProperty('stale');
      // B finishes the loop; A, dropped, printed nothing more.
      await open('alpha', 1, 2, 3);
      expect(await b.waitFor(finished('alpha'))).toMatchObject({ phase: 'complete' });
      expect(a.notes()).toEqual(['[loop-progress loop started: 3 rounds, inherit mode]']);
      expectOneLoop([...a.notes(), ...b.notes()]);
      expect(runs().sort()).toEqual(['alpha round 1', 'alpha round 2', 'alpha round 3']);
      expectRefusedSince(a, resumed, 'alpha');
      expect(await storedSlots('alpha')).not.toHaveProperty('stale');
      expect(await a.stop()).toBe(0);
      expect(await b.stop()).toBe(0);
    });

    it('paused from outside while its worker runs; B finishes that round meanwhile: on SIGCONT A drops the session and neither its saves nor its notes get through', async () => {
      const a = await rolebox({ leaseMs: 1_500, logSaves: true });
      await startLoop(a, 'alpha');
      await a.waitFor(roundStarted('alpha', 1));
      const b = await rolebox({ leaseMs: 3_000 });
      a.process.kill('SIGSTOP');
      const taken = await b.ask('open', { sessionId: 'alpha', wait: true });
      expect(taken.result?.loop).toEqual({ phase: 'awaiting_worker', current: 1 });
      // The worker A started ends while A is stopped: B advances the loop.
      await open('alpha', 1);
      await b.waitFor(note('[loop-progress round 1/3 completed'));
      await b.waitFor(roundStarted('alpha', 2));
      const continuedAt = Date.now();
      a.process.kill('SIGCONT');
      await expectDropped(a, b);
      await open('alpha', 2, 3);
      expect(await b.waitFor(finished('alpha'))).toMatchObject({ phase: 'complete' });
      expect(a.notes()).toEqual(['[loop-progress loop started: 3 rounds, inherit mode]']);
      expectOneLoop([...a.notes(), ...b.notes()]);
      expect(runs().sort()).toEqual(['alpha round 1', 'alpha round 2', 'alpha round 3']);
      expectRefusedSince(a, continuedAt, 'alpha');
      expect(await a.stop()).toBe(0);
      expect(await b.stop()).toBe(0);
    });

    it('paused after a round ended, before that state was saved: A does not print the note of a state the store refused', async () => {
      const a = await rolebox({
        leaseMs: 1_500,
        logSaves: true,
        pauseOnNote: '[loop-progress round 1/3 completed',
      });
      await startLoop(a, 'alpha');
      await a.waitFor(roundStarted('alpha', 1));
      const b = await rolebox({ leaseMs: 3_000 });
      await open('alpha', 1);
      await a.waitFor((line) => line.type === 'pausing');
      // What B restores is A's last stored state: round 1 awaited, its worker ended. (B's own
      // wake-up, due at once for that worker's end, may have taken the session first.)
      const taken = await b.ask('open', { sessionId: 'alpha', wait: true, ifOpen: 'reuse' });
      expect(taken.error).toBeUndefined();
      await b.waitFor(note('[loop-progress round 1/3 completed'));
      a.process.kill('SIGCONT');
      const resumed = (await a.waitFor((line) => line.type === 'resumed')).at;
      await expectDropped(a, b);
      await open('alpha', 2, 3);
      expect(await b.waitFor(finished('alpha'))).toMatchObject({ phase: 'complete' });
      expect(expectRefusedSince(a, resumed, 'alpha').length).toBeGreaterThan(0);
      expect(a.notes()).toEqual(['[loop-progress loop started: 3 rounds, inherit mode]']);
      expectOneLoop([...a.notes(), ...b.notes()]);
      expect(runs().sort()).toEqual(['alpha round 1', 'alpha round 2', 'alpha round 3']);
      expect(await a.stop()).toBe(0);
      expect(await b.stop()).toBe(0);
    });

    it("paused while starting round 2's worker (its task claimed, no worker yet): B starts it, A drops the session and stays up, the worker runs once", async () => {
      const a = await rolebox({
        leaseMs: 1_500,
        logSaves: true,
        pauseAtDispatch: 'before-spawn:2',
      });
      await open('alpha', 1);
      const loopId = await startLoop(a, 'alpha');
      await a.waitFor((line) => line.type === 'pausing');
      // A claimed round 2's task key for a task of its own, and stopped before its worker.
      const keyFile = join(dir, 'tasks', 'keys', encodeURIComponent(`${loopId}:2`));
      const task = readFileSync(keyFile, 'utf8').trim();
      const b = await rolebox({ leaseMs: 3_000 });
      // (B's own wake-up, due at once for a dispatch in progress, may take the session first.)
      const taken = await b.ask('open', { sessionId: 'alpha', wait: true, ifOpen: 'reuse' });
      expect(taken.result?.loop, JSON.stringify(taken)).toMatchObject({ current: 2 });
      // B dispatches round 2 again with the same key: the same task, whose worker B starts.
      expect((await b.waitFor(roundStarted('alpha', 2))).taskId).toBe(task);
      a.process.kill('SIGCONT');
      const resumed = (await a.waitFor((line) => line.type === 'resumed')).at;
      // A finishes what it was doing (a dispatch B has since answered) and drops the session.
      await expectDropped(a, b);
      await open('alpha', 2, 3);
      expect(await b.waitFor(finished('alpha'))).toMatchObject({ phase: 'complete' });
      expectRefusedSince(a, resumed, 'alpha');
      expectOneLoop([...a.notes(), ...b.notes()]);
      expect(runs().sort()).toEqual(['alpha round 1', 'alpha round 2', 'alpha round 3']);
      expect(a.lines.filter((line) => line.type === 'error')).toHaveLength(1);
      expect(await a.stop()).toBe(0);
      expect(await b.stop()).toBe(0);
    });
  });
});

describe('rolebox loop twice on one store', () => {
  it('two CLI processes at once, each its own session: every worker runs once per round, each process prints the notes of its own loop only, both exit 0', async () => {
    // Each process its own worker command: the log says whose worker ran, for which session.
    const worker = (name: string) =>
      `cat > /dev/null; while [ ! -f "$GATES/${name}-$ROLEBOX_ROUND" ]; do sleep 0.02; done; echo "${name} $ROLEBOX_ORIGIN_SESSION round $ROLEBOX_ROUND $ROLEBOX_TASK_ID" >> "$GATES/runs.log"; echo "answer $ROLEBOX_ROUND"`;
    const env = { GATES: gates };
    // Started together: both create and open the store file at once.
    const [one, two] = ['one', 'two'].map((name) =>
      startCli(['loop', `|loop:3| ${name}`, '--worker', worker(name), '--delay', '0'], {
        cwd: dir,
        env,
      }),
    ) as [ReturnType<typeof startCli>, ReturnType<typeof startCli>];
    // Both loops are running before any round ends.
    await one.line(/» round 1\/3 running/);
    await two.line(/» round 1\/3 running/);
    await open('one', 1);
    await one.line(/» round 2\/3 running/);
    await open('two', 1, 2);
    await open('one', 2, 3);
    await open('two', 3);
    expect(await one.exited, one.stderr()).toBe(0);
    expect(await two.exited, two.stderr()).toBe(0);

    const sessionOf = (cli: ReturnType<typeof startCli>) =>
      /» session (\S+), loop /.exec(cli.stderr())?.[1] as string;
    const sessions = { one: sessionOf(one), two: sessionOf(two) };
    expect(sessions.one).toMatch(/^s_/);
    expect(sessions.two).toMatch(/^s_/);
    expect(sessions.one).not.toBe(sessions.two);
    const logged = runs().map((line) => line.split(' '));
    // Every worker once per round, each run by the process whose loop it belongs to.
    expect(logged.map(([name, session, , round]) => `${name} ${session} ${round}`).sort()).toEqual([
      ...[1, 2, 3].map((round) => `one ${sessions.one} ${round}`),
      ...[1, 2, 3].map((round) => `two ${sessions.two} ${round}`),
    ]);
    for (const [name, cli] of [
      ['one', one],
      ['two', two],
    ] as const) {
      const notes = notesOf([{ type: 'out', at: 0, text: cli.stdout().trimEnd() }]);
      expectOneLoop(notes);
      // The rounds its notes name are its own workers', in order.
      const tasks = logged
        .filter(([worker]) => worker === name)
        .sort((x, y) => Number(x[3]) - Number(y[3]))
        .map((line) => line[4]);
      expect(notes.slice(1, 4).map((text) => /task=(t_\w+)/.exec(text)?.[1])).toEqual(tasks);
    }
  });
});
