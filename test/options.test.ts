import { describe, expect, it } from 'vitest';
import { startInspectorServer } from '../inspector/server.js';
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { createPipeline, createRolebox } from '../src/index.js';
import { CommandDispatcher } from '../src/node.js';
import { debounce, outerTimeout, throttle } from '../src/pipeline/index.js';
import {
  createRestateRolebox,
  roleboxSessionObject,
  serveRoleboxOnRestate,
  shellCommandWorker,
  startLocalRestateServer,
} from '../src/restate/index.js';
import { ROLEBOX_OPTION_NAMES } from '../src/rolebox/options.js';
import { ScriptedDispatcher } from '../src/testing/index.js';
import { errorOf, rejectionOf } from './support/errors.js';

// Every public entry point that takes an options object refuses a name it does not know
// (a typo would otherwise be ignored and its default used), with the name likely meant and
// the known ones; Object.prototype's names are unknown names like any other.

const ROLEBOX_KNOWN =
  'known: functions, conditions, clock, ids, limits, inspect, dispatcher, strictSessions, store, saveDebounceMs, migrations, journal, pipeline, idleMs, maxLiveSessions, passivateWhenWaiting, shards, leaseMs, effects, effectRetry';

describe('createRolebox options', () => {
  it('refuses a misspelt option, naming the one meant and the known ones', () => {
    const error = errorOf(() => createRolebox({ functons: [] } as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe(
      `createRolebox options: unknown option "functons" (did you mean "functions"?); ${ROLEBOX_KNOWN}`,
    );
    expect(error.details).toMatchObject({
      unknown: ['functons'],
      suggestions: { functons: 'functions' },
      known: ROLEBOX_OPTION_NAMES,
    });
  });

  it('names every unknown option at once', () => {
    const error = errorOf(() => createRolebox({ save_debounce_ms: 0, colour: 'red' } as never));
    expect(error.message).toBe(
      `createRolebox options: unknown options "save_debounce_ms" (did you mean "saveDebounceMs"?), "colour"; ${ROLEBOX_KNOWN}`,
    );
  });

  it.each([
    ['constructor', { constructor: 1 }],
    ['toString', { toString: () => 'x' }],
    ['valueOf', { valueOf: 1 }],
    ['__proto__', JSON.parse('{"__proto__": {"functions": []}}')],
  ])('refuses %s as an option name', (name, options) => {
    const error = errorOf(() => createRolebox(options));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe(
      `createRolebox options: unknown option ${JSON.stringify(name)}; ${ROLEBOX_KNOWN}`,
    );
  });

  it('refuses a hole in functions like any other missing definition', () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case.
    const error = errorOf(() => createRolebox({ functions: [,] as never }));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('functions[0]: not an object, got undefined');
  });

  it('takes every known name, set or not', () => {
    const unset = Object.fromEntries(ROLEBOX_OPTION_NAMES.map((name) => [name, undefined]));
    expect(() => createRolebox(unset)).not.toThrow();
  });

  it.each([
    [null, 'createRolebox options must be an object, got null'],
    [[], 'createRolebox options must be an object, got []'],
    ['functions', 'createRolebox options must be an object, got "functions"'],
  ])('refuses %j, which is not an object', (options, message) => {
    expect(errorOf(() => createRolebox(options as never)).message).toBe(message);
  });

  it.each([
    [
      { limits: { maxToolBursts: 3 } },
      'createRolebox limits: unknown limit "maxToolBursts" (did you mean "maxToolBurst"?); known: continuationsPerSession, continuationCooldowns, defaultIterations, maxIterations, roundTimeoutMs, interRoundDelayMs, summaryCharCap, seedCharCap, maxTreeLoops, maxToolBurst',
    ],
    [{ limits: { constructor: 3 } }, 'createRolebox limits: unknown limit "constructor"; known:'],
    [{ limits: null }, 'createRolebox limits must be an object, got null'],
    [
      { inspect: { url: 'ws://127.0.0.1:1', tokn: 'x' } },
      'createRolebox inspect: unknown option "tokn"; known: url',
    ],
  ])('refuses an unknown name in a nested object: %j', (options, message) => {
    const error = errorOf(() => createRolebox(options as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message.startsWith(message)).toBe(true);
  });

  it('names the value of a bad limit, not the whole limits object', () => {
    expect(
      errorOf(() => createRolebox({ limits: { maxIterations: 0, maxToolBurst: 2 } })).message,
    ).toBe('limits.maxIterations: Too small: expected number to be >=1 (got 0)');
  });

  it.each([
    [{ conditions: {} }, 'conditions must implement get and names, got {}'],
    [{ clock: { now: () => 1 } }, 'clock must implement now, setTimeout and clearTimeout'],
    [{ ids: 'seed' }, 'ids must implement next, got "seed"'],
    [{ migrations: [] }, 'migrations must implement migrate, got []'],
    [{ strictSessions: 'yes' }, 'strictSessions must be true or false, got "yes"'],
    [{ journal: 1 }, 'journal must be true or false, got 1'],
  ])('refuses an option of the wrong kind: %j', (options, message) => {
    const error = errorOf(() => createRolebox(options as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message.startsWith(message)).toBe(true);
  });
});

describe('session call options', () => {
  it('openSession, startLoop and stopLoop refuse unknown option names', async () => {
    const rb = createRolebox({ dispatcher: new ScriptedDispatcher(() => 'done') });
    await rb.start();
    try {
      const openError = await rejectionOf(() => rb.openSession({ ids: 's1' } as never));
      expect(openError.message).toBe(
        'openSession options: unknown option "ids" (did you mean "id"?); known: id, acceptanceMode, ifOpen, wait',
      );
      expect(rb.sessions()).toEqual([]);
      const session = await rb.openSession({ id: 's1' });
      expect(errorOf(() => session.startLoop('|loop:2| x', { agnt: 'a' } as never)).message).toBe(
        'startLoop options: unknown option "agnt" (did you mean "agent"?); known: agent',
      );
      expect(session.view().loop).toBeNull();
      expect(errorOf(() => session.stopLoop({ nw: true } as never)).message).toBe(
        'stopLoop options: unknown option "nw" (did you mean "now"?); known: now',
      );
    } finally {
      await rb.stop();
    }
  });
});

describe('createPipeline options', () => {
  it.each([
    [{ constructor: 1 }, 'createPipeline options: unknown option "constructor"; known: policies,'],
    [{ limit: {} }, 'createPipeline options: unknown option "limit" (did you mean "limits"?)'],
    [null, 'createPipeline options must be an object, got null'],
    [{ policies: 0 }, 'policies must be an array of policies, got 0'],
    [{ telemetry: { tracerProvider: [] } }, 'telemetry.tracerProvider must implement getTracer'],
    [{ telemetry: { meterProvider: {} } }, 'telemetry.meterProvider must implement getMeter'],
  ])('refuses %j', (options, message) => {
    const error = errorOf(() => createPipeline(options as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message.startsWith(message)).toBe(true);
  });
});

describe('the inspector server and the pipeline guards', () => {
  it('startInspectorServer refuses an unknown option before it starts anything', async () => {
    const error = await rejectionOf(() => startInspectorServer({ prot: 0 } as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toMatch(
      /^startInspectorServer options: unknown option "prot" \(did you mean "port"\?\); known: port, host, token,/,
    );
  });

  it.each([
    ['debounce', debounce],
    ['throttle', throttle],
    ['outerTimeout', outerTimeout],
  ] as const)('%s refuses an unknown option', async (name, guard) => {
    const error = await rejectionOf(() =>
      guard({} as never, { lane: 'l', ms: 10, mss: 1 } as never),
    );
    expect(error.message).toBe(
      `${name} options: unknown option "mss" (did you mean "ms"?); known: lane, ms`,
    );
  });
});

describe('CommandDispatcher options', () => {
  it.each([
    [
      { command: 'cat', stateDirectory: '/tmp/x' },
      'CommandDispatcher options: unknown option "stateDirectory" (did you mean "stateDir"?); known: command, stateDir, cwd, env, clock, ids, killGraceMs, orphanCheckMs, maxOutputBytes, onDispatchPoint',
    ],
    [{ command: 'cat', hasOwnProperty: 1 }, 'CommandDispatcher options: unknown option'],
    [undefined, 'CommandDispatcher options must be an object, got undefined'],
    [{ command: 'cat', stateDir: 5 }, 'CommandDispatcher stateDir must be a path, got 5'],
    [{ command: 'cat', cwd: '' }, 'CommandDispatcher cwd must be a path, got ""'],
    [{ command: 'cat', env: { A: 1 } }, 'CommandDispatcher env must be an object of strings'],
    [
      { command: 'cat', killGraceMs: -1 },
      'CommandDispatcher killGraceMs must be a whole number of milliseconds of at least 0, got -1',
    ],
    [{ command: 'cat', orphanCheckMs: 0 }, 'CommandDispatcher orphanCheckMs must be a whole'],
    [{ command: 'cat', clock: {} }, 'CommandDispatcher clock must be an object with now,'],
    [{ command: 'cat', ids: 1 }, 'CommandDispatcher ids must be an object with next, got 1'],
    [{ command: 'cat', onDispatchPoint: 'x' }, 'CommandDispatcher onDispatchPoint must be a'],
  ])('refuses %j', (options, message) => {
    const error = errorOf(() => new CommandDispatcher(options as never));
    expect(error.code).toBe('invalid_argument');
    expect(error.message.startsWith(message)).toBe(true);
  });
});

describe('snapshot store call options', () => {
  it.each([
    ['memory', () => new MemorySnapshotStore()],
    ['sqlite', () => new SqliteSnapshotStore(':memory:')],
  ])('%s: save, delete and loadWakeUps refuse unknown option names', async (_name, make) => {
    const store = make();
    try {
      const save = await rejectionOf(() =>
        store.save([{ id: 's', data: '{}' }], [], { nw: 1 } as never),
      );
      expect(save.message).toBe(
        'options: unknown option "nw" (did you mean "now"?); known: now, wakeUps',
      );
      const remove = await rejectionOf(() => store.delete(['s'], [], { wakeUps: [] } as never));
      expect(remove.message).toBe('options: unknown option "wakeUps"; known: now');
      const wakeUps = await rejectionOf(() => store.loadWakeUps({ due: 1 } as never));
      expect(wakeUps.message).toBe(
        'loadWakeUps options: unknown option "due" (did you mean "dueBy"?); known: dueBy',
      );
      expect(await store.load('s')).toBeUndefined();
    } finally {
      if (store instanceof SqliteSnapshotStore) await store.close();
    }
  });
});

describe('Restate entry points', () => {
  it.each([
    [
      () => serveRoleboxOnRestate({ functons: [] } as never),
      'serveRoleboxOnRestate options: unknown option "functons" (did you mean "functions"?); known: functions, conditions, limits, strictSessions, migrations, effectRetry, objectName, workers, eventSink, effects, inspect, services, logger',
    ],
    [
      () => serveRoleboxOnRestate(null as never),
      'serveRoleboxOnRestate options must be an object, got null',
    ],
    [
      () => serveRoleboxOnRestate({ workers: { service: 'w', handlr: 'run' } } as never),
      'workers: unknown option "handlr" (did you mean "handler"?); known: service, handler',
    ],
    [
      () => serveRoleboxOnRestate({ inspect: { url: 'ws://x', constructor: 1 } } as never),
      'inspect: unknown option "constructor"; known: url',
    ],
    [
      () => roleboxSessionObject({ store: {} } as never),
      'roleboxSessionObject options: unknown option "store"; known: functions,',
    ],
    [
      () => serveRoleboxOnRestate({ limits: { maxSteps: 1 } } as never),
      'createRolebox limits: unknown limit "maxSteps"',
    ],
    [
      () => serveRoleboxOnRestate({ effectRetry: { maxAtempts: 2 } } as never),
      'createRolebox effectRetry: unknown option "maxAtempts" (did you mean "maxAttempts"?)',
    ],
    [
      () => createRestateRolebox({ ingressUrl: 'http://127.0.0.1:1', header: {} } as never),
      'createRestateRolebox options: unknown option "header" (did you mean "headers"?); known: ingressUrl, objectName, headers',
    ],
    [
      () => shellCommandWorker({ command: 'cat', taskDir: 'x' } as never),
      'shellCommandWorker options: unknown option "taskDir" (did you mean "tasksDir"?); known: command, tasksDir, name',
    ],
  ])('refuses an unknown name: %#', (make, message) => {
    const error = errorOf(make);
    expect(error.code).toBe('invalid_argument');
    expect(error.message.startsWith(message)).toBe(true);
  });

  it('refuses an effectRetry out of range on the endpoint, naming the field and the value', () => {
    for (const [effectRetry, message] of [
      [{ maxAttempts: 0 }, 'effectRetry.maxAttempts must be a whole number of at least 1, got 0'],
      [
        { initialDelayMs: 1.5 },
        'effectRetry.initialDelayMs must be a whole number of at least 0, got 1.5',
      ],
      [
        { initialDelayMs: 500, maxDelayMs: 100 },
        'effectRetry.maxDelayMs (100) must be at least initialDelayMs (500)',
      ],
    ] as const) {
      const error = errorOf(() => serveRoleboxOnRestate({ effectRetry }));
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toBe(message);
    }
    expect(serveRoleboxOnRestate({ effectRetry: { maxAttempts: 1 } }).endpoint).toBeDefined();
  });

  it('startLocalRestateServer and openSession refuse before they start or call anything', async () => {
    expect((await rejectionOf(() => startLocalRestateServer({ port: 1 } as never))).message).toBe(
      'startLocalRestateServer options: unknown option "port" (did you mean "ports"?); known: baseDir, ports, startTimeoutMs, onLog, env',
    );
    expect(
      (
        await rejectionOf(() =>
          startLocalRestateServer({ ports: { ingres: 1, admin: 2, node: 3 } } as never),
        )
      ).message,
    ).toBe(
      'startLocalRestateServer ports: unknown port "ingres" (did you mean "ingress"?); known: ingress, admin, node',
    );
    const client = createRestateRolebox({ ingressUrl: 'http://127.0.0.1:1' });
    expect((await rejectionOf(() => client.openSession({ ids: 'x' } as never))).message).toBe(
      'openSession options: unknown option "ids" (did you mean "id"?); known: id, acceptanceMode',
    );
  });
});
