import { afterEach, describe, expect, it } from 'vitest';
import {
  createRolebox,
  defineFunction,
  type HostEvent,
  isRoleboxError,
  MemorySnapshotStore,
  type Rolebox,
  type SessionHandle,
} from '../src/index.js';
import { ARTIFACT_COMMAND_ROWS, SESSION_COMMAND_ROWS } from '../src/rolebox/command-table.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';
import { errorOf } from './support/errors.js';

// Issue 22, item 4: every command of a session handle and of its artifacts handle goes
// through one guard. The methods are enumerated from real handles (their prototype
// chains), so a method added later without the guard fails here. Each is called on a
// closed session, an unknown one, one another rolebox drives now, and with arguments
// that throw when read: each is refused with a RoleboxError, nothing changes, the root
// actor stays active and every other session goes on.

const FUNCTIONS = [
  defineFunction({ name: 'approval', gate: 'signal_observed(answer)' }),
  defineFunction({ name: 'helper' }),
];

/** Every method of `handle`, from its prototype chain (what a caller can call on it). */
function methodsOf(handle: object): string[] {
  const names = new Set<string>();
  for (
    let proto = Object.getPrototypeOf(handle) as object | null;
    proto !== null && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      if (name !== 'constructor' && typeof descriptor?.value === 'function') names.add(name);
    }
  }
  return [...names].sort();
}

/**
 * Well-formed arguments for each method: on a live session each call applies or is
 * refused for a reason of the session's state, never for its arguments. A method missing
 * here fails the test (see `argumentsFor`): a new command needs a row.
 */
const SESSION_ARGS = {
  send: [{ type: 'session_started', availableSkills: [] }],
  toolCall: [{ name: 'write_file', kind: 'boundary' }],
  facts: [],
  setSlot: ['k', { n: 1 }],
  activate: ['helper'],
  deactivate: ['approval'],
  signal: [{ type: 'answer', payload: { ok: true } }],
  tool: ['|write_file| notes.md'],
  approve: ['approval:r1', { by: 'ana', note: 'ok', seenVersion: 1 }],
  reject: ['approval:r1', { by: 'ana', reason: 'not yet' }],
  extendRequest: ['approval:r1', { timeoutMs: 60_000, by: 'ana' }],
  startLoop: ['|loop:2| draft the notes', { agent: 'writer' }],
  stopLoop: [{ now: true }],
  observeTool: ['write_file'],
  idle: [],
  message: ['hello'],
  resume: ['approval'],
  setKv: ['approval', 'k', 'v'],
  settleEffect: ['S:e1', {}],
  view: [],
  close: [],
} as const satisfies Record<keyof typeof SESSION_COMMAND_ROWS, readonly unknown[]>;
const ARTIFACT_ARGS = {
  write: [{ name: 'notes', content: 'draft' }],
  setStatus: ['art-1', 'under_review'],
  get: ['art-1'],
  require: ['art-1'],
  list: [],
  facts: [],
} as const satisfies Record<keyof typeof ARTIFACT_COMMAND_ROWS, readonly unknown[]>;

function argumentsFor(table: Readonly<Record<string, readonly unknown[]>>, method: string) {
  const args = Object.hasOwn(table, method) ? table[method] : undefined;
  if (!args) throw new Error(`no arguments for ${method}: add a row for the new method`);
  return structuredClone(args) as unknown[];
}

/** One command: a method of the session handle or of its artifacts handle. */
interface Command {
  readonly label: string;
  readonly args: readonly unknown[];
  call(session: SessionHandle, args: readonly unknown[]): unknown;
}

function commandsOf(session: SessionHandle): Command[] {
  const onSession = methodsOf(session).map(
    (method): Command => ({
      label: `session.${method}`,
      args: argumentsFor(SESSION_ARGS, method),
      call: (target, args) =>
        (target as unknown as Record<string, (...a: unknown[]) => unknown>)[method]?.(...args),
    }),
  );
  const onArtifacts = methodsOf(session.artifacts).map(
    (method): Command => ({
      label: `session.artifacts.${method}`,
      args: argumentsFor(ARTIFACT_ARGS, method),
      call: (target, args) =>
        (target.artifacts as unknown as Record<string, (...a: unknown[]) => unknown>)[method]?.(
          ...args,
        ),
    }),
  );
  return [...onSession, ...onArtifacts];
}

/** Values that throw when read, each in a fresh copy (a revoked proxy cannot be reused). */
function hostileValues(): { readonly label: string; readonly value: unknown }[] {
  const throwing = () => {
    throw new Error('read me not');
  };
  const everyTrap = new Proxy(
    {},
    {
      get: throwing,
      has: throwing,
      ownKeys: throwing,
      getOwnPropertyDescriptor: throwing,
      getPrototypeOf: throwing,
      set: throwing,
      defineProperty: throwing,
      deleteProperty: throwing,
      isExtensible: throwing,
      preventExtensions: throwing,
      setPrototypeOf: throwing,
      apply: throwing,
      construct: throwing,
    },
  );
  const revocable = Proxy.revocable({ type: 'answer' }, {});
  revocable.revoke();
  const getter = Object.defineProperty({}, 'name', { get: throwing, enumerable: true });
  // The trap that runs only on a read of a property (what validation does first).
  const readTrap = new Proxy({ type: 'answer', name: 'x' }, { get: throwing });
  return [
    { label: 'a Proxy that throws on every trap', value: everyTrap },
    { label: 'a revoked Proxy', value: revocable.proxy },
    { label: 'an object with a throwing getter', value: getter },
    { label: 'a Proxy whose get throws', value: readTrap },
    { label: 'an object whose toJSON throws', value: { type: 'answer', toJSON: throwing } },
    { label: 'a throwing getter one level down', value: { type: 'answer', payload: getter } },
    { label: 'a Proxy inside an array', value: [everyTrap] },
    {
      label: 'a thrown Proxy',
      value: Object.defineProperty({}, 'x', {
        enumerable: true,
        get: () => {
          throw everyTrap;
        },
      }),
    },
  ];
}

const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

interface World {
  readonly rb: Rolebox;
  readonly clock: SimulatedClock;
  readonly store: MemorySnapshotStore;
  readonly errors: unknown[];
}

const started: Rolebox[] = [];
afterEach(async () => {
  for (const rb of started.splice(0)) await rb.stop();
});

async function boot(
  store = new MemorySnapshotStore(),
  clock = new SimulatedClock(1_000),
  options: { maxLiveSessions?: number; passivateWhenWaiting?: boolean } = {},
): Promise<World> {
  const rb = createRolebox({
    functions: FUNCTIONS,
    clock,
    ids: seededIdSource(3),
    dispatcher: new ScriptedDispatcher(() => 'done'),
    store,
    idleMs: Number.POSITIVE_INFINITY,
    ...options,
  });
  const errors: unknown[] = [];
  rb.on('error', (event: HostEvent) => errors.push((event as { error: unknown }).error));
  await rb.start();
  started.push(rb);
  return { rb, clock, store, errors };
}

/** A session with something in it: a live function, a slot, an artifact. */
async function busySession(rb: Rolebox, id: string): Promise<SessionHandle> {
  const session = await rb.openSession({ id });
  session.activate('approval');
  session.setSlot('owner', 'ada');
  session.artifacts.write({ name: 'notes', content: 'first' });
  return session;
}

/** What must not change: the views of the sessions and the root's status. */
function picture(world: World, sessions: readonly SessionHandle[]) {
  return JSON.stringify({
    root: world.rb.system.getSnapshot().status,
    live: world.rb.sessions(),
    views: sessions.map((session) => session.view()),
  });
}

/** The other sessions still take commands, and the root is active with no error reported. */
function expectAlive(world: World, others: readonly SessionHandle[]) {
  expect(world.rb.system.getSnapshot().status).toBe('active');
  expect(world.errors).toEqual([]);
  for (const other of others) {
    other.setSlot('after', 1);
    expect(other.view().slots).toMatchObject({ after: 1 });
    other.artifacts.write({ name: 'after', content: 'x' });
  }
}

describe('the commands of both handles, enumerated from the handles', () => {
  it('finds every method of a session handle and of its artifacts handle', async () => {
    const world = await boot();
    const session = await world.rb.openSession({ id: 'S' });
    const sessionMethods = methodsOf(session);
    const artifactMethods = methodsOf(session.artifacts);
    // Every method the handles have needs its row (a new one fails in argumentsFor).
    expect(sessionMethods).toEqual(Object.keys(SESSION_ARGS).sort());
    expect(artifactMethods).toEqual(Object.keys(ARTIFACT_ARGS).sort());
    // Driven by the command table (issue 23): the handles have exactly its rows, and the
    // sample arguments (typed by the rows above) are what each row's schema accepts.
    expect(sessionMethods).toEqual(Object.keys(SESSION_COMMAND_ROWS).sort());
    expect(artifactMethods).toEqual(Object.keys(ARTIFACT_COMMAND_ROWS).sort());
    for (const [rows, samples] of [
      [SESSION_COMMAND_ROWS, SESSION_ARGS],
      [ARTIFACT_COMMAND_ROWS, ARTIFACT_ARGS],
    ] as const) {
      for (const [method, row] of Object.entries(rows)) {
        const sample = (samples as Readonly<Record<string, readonly unknown[]>>)[method];
        expect(row.arguments.safeParse(sample).success, method).toBe(true);
      }
    }
  });

  it('on a live session the arguments are well-formed: no call is refused for them', async () => {
    const world = await boot();
    const probe = await world.rb.openSession({ id: 'probe' });
    for (const command of commandsOf(probe)) {
      const session = await busySession(world.rb, `live-${command.label}`);
      try {
        command.call(session, command.args);
      } catch (error) {
        expect(isRoleboxError(error), `${command.label}: ${String(error)}`).toBe(true);
        expect(['invalid_argument', 'unknown_session'], command.label).not.toContain(
          (error as { code: string }).code,
        );
      }
    }
    expect(world.rb.system.getSnapshot().status).toBe('active');
  });

  it('on a closed session every command is unknown_session, and nothing else changes', async () => {
    const world = await boot();
    const others = [await busySession(world.rb, 'O1'), await busySession(world.rb, 'O2')];
    const closed = await busySession(world.rb, 'S1');
    closed.close();
    const before = picture(world, others);
    const commands = commandsOf(closed);
    expect(commands.length).toBeGreaterThanOrEqual(23);
    for (const command of commands) {
      const error = errorOf(() => command.call(closed, command.args));
      expect(error.code, command.label).toBe('unknown_session');
      expect(error.message, command.label).toContain('"S1"');
      expect(picture(world, others), command.label).toBe(before);
    }
    expectAlive(world, others);
  });

  it('on a session another rolebox drives now: session_owned_elsewhere; once it is closed there: unknown_session', async () => {
    const store = new MemorySnapshotStore();
    const clock = new SimulatedClock(1_000);
    // M (gated) must stay live for the picture: only the LRU limit passivates here.
    const a = await boot(store, clock, { maxLiveSessions: 1, passivateWhenWaiting: false });
    const foreign = await busySession(a.rb, 'F');
    // Opening a second session passivates F here (at most one live): saved, claim released.
    const mine = await busySession(a.rb, 'M');
    await settle();
    expect(a.rb.sessions()).toEqual(['M']);
    const b = await boot(store, clock);
    const there = await b.rb.openSession({ id: 'F' });
    const before = picture(a, [mine]);
    for (const command of commandsOf(foreign)) {
      const error = errorOf(() => command.call(foreign, command.args));
      expect(error.code, command.label).toBe('session_owned_elsewhere');
      expect(picture(a, [mine]), command.label).toBe(before);
    }
    // The other rolebox's session is untouched by all that.
    expect(there.view().slots).toEqual({ owner: 'ada' });
    there.close();
    await b.rb.flush();
    for (const command of commandsOf(foreign)) {
      const error = errorOf(() => command.call(foreign, command.args));
      expect(error.code, command.label).toBe('unknown_session');
      expect(picture(a, [mine]), command.label).toBe(before);
    }
    expectAlive(a, [mine]);
    expectAlive(b, []);
  });

  it('on a stopped rolebox every command is refused with stopped', async () => {
    const world = await boot();
    const session = await busySession(world.rb, 'S');
    await world.rb.stop();
    for (const command of commandsOf(session)) {
      expect(errorOf(() => command.call(session, command.args)).code, command.label).toBe(
        'stopped',
      );
    }
  });

  it('a method taken off its handle is refused with invalid_argument, not a TypeError', async () => {
    const world = await boot();
    const session = await world.rb.openSession({ id: 'S' });
    const { setSlot } = session;
    const { write } = session.artifacts;
    expect(errorOf(() => setSlot('k', 1)).code).toBe('invalid_argument');
    expect(errorOf(() => write.call({}, { name: 'notes' })).code).toBe('invalid_argument');
    expect(session.view().slots).toEqual({});
  });
});

describe('arguments that throw when read', () => {
  it('every command refuses each with invalid_argument naming it, in every position', async () => {
    const world = await boot();
    const target = await busySession(world.rb, 'T');
    const others = [await busySession(world.rb, 'O')];
    const persisted = () =>
      JSON.stringify(world.rb.system.system.get('session:T')?.getPersistedSnapshot());
    const before = picture(world, [target, ...others]);
    const stored = persisted();
    let refused = 0;
    for (const command of commandsOf(target)) {
      const positions = Math.max(command.args.length, 1);
      for (let position = 0; position < positions; position++) {
        for (const { label, value } of hostileValues()) {
          const args = [...command.args];
          args[position] = value;
          const what = `${command.label} with ${label} as argument ${position + 1}`;
          const error = errorOf(() => command.call(target, args));
          expect(error.code, what).toBe('invalid_argument');
          expect(error.message, what).toContain(`${command.label}: `);
          expect(error.message, what).toContain('cannot be read');
          expect(typeof error.details.argument, what).toBe('string');
          expect(picture(world, [target, ...others]), what).toBe(before);
          expect(persisted(), what).toBe(stored);
          refused++;
        }
      }
    }
    expect(refused).toBeGreaterThan(100);
    expectAlive(world, [target, ...others]);
  });

  it('the message names the parameter', async () => {
    const world = await boot();
    const session = await world.rb.openSession({ id: 'S' });
    const getter = Object.defineProperty({}, 'x', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(errorOf(() => session.setSlot('k', getter)).message).toBe(
      'session.setSlot: value cannot be read (Error: boom); pass plain data (objects, arrays, strings, numbers), not a Proxy or an object whose getters throw',
    );
    expect(errorOf(() => session.artifacts.write(getter as never)).details).toEqual({
      command: 'session.artifacts.write',
      argument: 'artifact',
    });
  });

  it('a getter is read once: what was validated is what is applied', async () => {
    const world = await boot();
    const session = await world.rb.openSession({ id: 'S' });
    let reads = 0;
    const shifty = {
      get name() {
        reads++;
        return reads === 1 ? 'notes' : '../../etc/passwd';
      },
      content: 'x',
    };
    const written = session.artifacts.write(shifty);
    expect(written.name).toBe('notes');
    expect(reads).toBe(1);
  });
});

describe('Object.prototype names as arguments', () => {
  it('every command applies or refuses them with a RoleboxError, and Object.prototype stays clean', async () => {
    const world = await boot();
    const others = [await busySession(world.rb, 'O')];
    const view = () => JSON.stringify(others.map((other) => other.view()));
    const before = view();
    const prototypeKeys = Reflect.ownKeys(Object.prototype);
    let index = 0;
    for (const command of commandsOf(others[0] as SessionHandle)) {
      for (let position = 0; position < command.args.length; position++) {
        const original = command.args[position];
        const variants: unknown[] =
          typeof original === 'string'
            ? PROTOTYPE_NAMES
            : PROTOTYPE_NAMES.map((name) =>
                JSON.parse(`{${JSON.stringify(name)}: {"polluted": 1}, "type": "answer"}`),
              );
        for (const variant of variants) {
          const session = await busySession(world.rb, `P${index++}`);
          const args = [...command.args];
          args[position] = variant;
          try {
            command.call(session, args);
          } catch (error) {
            expect(isRoleboxError(error), `${command.label}(${JSON.stringify(variant)})`).toBe(
              true,
            );
          }
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
          expect(Reflect.ownKeys(Object.prototype)).toEqual(prototypeKeys);
        }
      }
    }
    expect(view()).toBe(before);
    expectAlive(world, others);
  });
});

describe('defence in depth: a command for a session that is not there', () => {
  it('sent to the root actor directly, it is dropped by the shard: the root stays active', async () => {
    const world = await boot();
    const other = await busySession(world.rb, 'O');
    const closed = await world.rb.openSession({ id: 'S1' });
    closed.close();
    for (const sessionId of ['S1', 'never-opened']) {
      world.rb.system.send({
        type: 'system.deliver',
        sessionId,
        command: { type: 'session.set_slot', key: 'k', value: 1, at: 1_000 },
      });
    }
    expectAlive(world, [other]);
  });
});
