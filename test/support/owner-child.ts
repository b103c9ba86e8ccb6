// A rolebox process for the two-process ownership tests: a SQLite store shared with another
// process, the command dispatcher, and a JSON line protocol. The test writes one command a
// line on stdin ({ id, op, ... }); the child answers { id, result } or { id, error } on
// stdout. Its loops' notes are printed as the CLI prints them (`followLoops`: each once its
// state is stored), as { type: 'out', text } lines; the host events that matter are printed
// as JSON lines too, each once the store has what it reflects. Every line has `at` (Date.now()).
//   tsx --conditions=rolebox-source owner-child.ts '<json config>'
// The config: db, tasks, worker, leaseMs, delayMs, and optionally `host` (the hostname this
// process claims sessions under: another host, whose pid means nothing here) and `logSaves`
// (print every save the store is asked for, with what it refused) and `pauseOnNote` (stop
// this process with SIGSTOP when the first note starting with it arrives, before its state is
// saved; it goes on when the test sends SIGCONT) or `pauseAtDispatch` (`<point>:<n>`: stop
// so the n-th time the command dispatcher reaches that point of starting a worker).
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { createInterface } from 'node:readline';

interface Config {
  readonly db: string;
  readonly tasks: string;
  readonly worker: string;
  readonly leaseMs: number;
  readonly delayMs: number;
  readonly host?: string;
  readonly logSaves?: boolean;
  readonly pauseOnNote?: string;
  readonly pauseAtDispatch?: string;
}

const config = JSON.parse(process.argv[2] as string) as Config;
const os = createRequire(import.meta.url)('node:os') as typeof import('node:os');
if (config.host !== undefined) {
  // Before rolebox is loaded: its claims name this host (a process on another machine).
  const host = config.host;
  os.hostname = () => host;
  syncBuiltinESMExports();
}

const { createRolebox, isRoleboxError } = await import('../../src/index.js');
const { CommandDispatcher } = await import('../../src/node.js');
const { SqliteSnapshotStore } = await import('../../src/sqlite.js');
const { followLoops } = await import('../../src/cli/output.js');
type HostEvent = import('../../src/index.js').HostEvent;
type SaveArgs = Parameters<InstanceType<typeof SqliteSnapshotStore>['save']>;

const write = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ ...line, at: Date.now() })}\n`);

/** The SQLite store, printing each save it is asked for and what it refused. */
class LoggingStore extends SqliteSnapshotStore {
  override async save(...args: SaveArgs) {
    const result = await super.save(...args);
    if (config.logSaves)
      write({ type: 'save', ids: args[0].map((record) => record.id), refused: result.refused });
    return result;
  }
}

/**
 * Paused between a change and its save (a long GC pause, a frozen VM): the process stops
 * itself here and goes on from this line when the test sends SIGCONT.
 */
function pause(): void {
  write({ type: 'pausing' });
  process.kill(process.pid, 'SIGSTOP');
  write({ type: 'resumed' });
}

const dispatchPoints = new Map<string, number>();
const [pausePoint, pauseNth = '1'] = (config.pauseAtDispatch ?? '').split(':');

const store = new LoggingStore(config.db);
const dispatcher = new CommandDispatcher({
  command: config.worker,
  stateDir: config.tasks,
  orphanCheckMs: 100,
  onDispatchPoint: (point) => {
    const seen = (dispatchPoints.get(point) ?? 0) + 1;
    dispatchPoints.set(point, seen);
    if (point === pausePoint && seen === Number(pauseNth)) pause();
  },
});
const rb = createRolebox({
  store,
  dispatcher,
  saveDebounceMs: 0,
  leaseMs: config.leaseMs,
  limits: { interRoundDelayMs: config.delayMs },
});

function errorLine(error: unknown) {
  return isRoleboxError(error)
    ? { code: error.code, message: error.message, details: error.details }
    : { message: error instanceof Error ? error.message : String(error) };
}

// The notes, as `rolebox loop` prints them (subscribed first, as the CLI does).
const follower = followLoops(
  (handler) => rb.on('*', handler),
  () => 3,
  {
    out: (text) => write({ type: 'out', text }),
    err: (text) => write({ type: 'progress', text }),
  },
  () => rb.flush(),
  { heartbeatMs: 3_600_000 },
);

let pauseOnNote = config.pauseOnNote;
let printing = Promise.resolve();
const print = (event: HostEvent) => {
  if (event.type === 'note' && pauseOnNote !== undefined && event.text.startsWith(pauseOnNote)) {
    pauseOnNote = undefined;
    pause();
  }
  let line: Record<string, unknown> | undefined;
  if (event.type === 'round_started')
    line = {
      type: 'round_started',
      sessionId: event.sessionId,
      round: event.round,
      taskId: event.taskId,
    };
  else if (event.type === 'loop_finished')
    line = { type: 'loop_finished', sessionId: event.sessionId, phase: event.phase };
  else if (event.type === 'session_activated')
    line = { type: 'session_activated', sessionId: event.sessionId, trigger: event.trigger };
  else if (event.type === 'error')
    line = { type: 'error', sessionId: event.sessionId, ...errorLine(event.error) };
  if (!line) return;
  const printed = line;
  printing = printing.then(async () => {
    // What is printed is stored (a failed flush is reported as an error line of its own),
    // and comes after the notes that came before it.
    await rb.flush().catch(() => {});
    await follower.printed();
    write(printed);
  });
};
rb.on('*', print);

interface Command {
  readonly id: number;
  readonly op: string;
  readonly sessionId?: string;
  readonly wait?: boolean;
  readonly ifOpen?: 'refuse' | 'reuse';
  readonly text?: string;
  readonly key?: string;
  readonly value?: unknown;
  readonly pause?: boolean;
}

async function perform(command: Command): Promise<unknown> {
  const sessionId = command.sessionId as string;
  switch (command.op) {
    case 'open': {
      const session = await rb.openSession({
        id: sessionId,
        ...(command.wait === undefined ? {} : { wait: command.wait }),
        ...(command.ifOpen === undefined ? {} : { ifOpen: command.ifOpen }),
      });
      const loop = session.view().loop;
      return loop ? { loop: { phase: loop.phase, current: loop.current } } : {};
    }
    case 'session':
      rb.session(sessionId);
      return {};
    case 'startLoop': {
      const started = rb.session(sessionId).startLoop(command.text as string);
      if (!started.ok) throw new Error(started.reason);
      await rb.flush();
      return { loopId: started.loopId };
    }
    case 'sessions':
      return rb.sessions();
    case 'setSlot': {
      rb.session(sessionId).setSlot(command.key as string, command.value);
      if (command.pause) pause();
      await rb.flush();
      return {};
    }
    case 'stop':
      await printing;
      await follower.printed();
      follower.stop();
      write({ type: 'stopping' });
      await rb.stop();
      await store.close();
      write({ type: 'stopped' });
      process.exit(0);
      return {};
    default:
      throw new Error(`unknown op ${command.op}`);
  }
}

const report = await rb.start();
createInterface({ input: process.stdin }).on('line', (text) => {
  const command = JSON.parse(text) as Command;
  perform(command).then(
    (result) => write({ type: 'answer', id: command.id, result }),
    (error: unknown) => write({ type: 'answer', id: command.id, error: errorLine(error) }),
  );
});
write({ type: 'started', pid: process.pid, host: os.hostname(), wakeUps: report.wakeUps });
