// The command table (src/rolebox/command-table.ts) against every surface derived from it:
// the session and artifacts handles (their prototypes and their guard), the Restate
// object's exclusive and shared handlers, the Restate client's handle, method by method
// down to the handler each one posts to, the agent tools, and `rolebox send`. A method
// added to a handle without a row, a row without a method, a handler the table does not
// name, or a row `send` does not reach fails here.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { z } from 'zod';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { createMcpServer, ROLEBOX_TOOL_NAMES } from '../src/ai/index.js';
import { toolSpec } from '../src/ai/tools.js';
import { main } from '../src/cli/main.js';
import { ERROR_CODES } from '../src/errors.js';
import { createRolebox } from '../src/index.js';
import {
  createRestateRolebox,
  type RestateArtifactsHandle,
  type RestateSessionHandle,
  roleboxSessionObject,
  SESSION_COMMANDS,
  SESSION_READS,
} from '../src/restate/index.js';
import { ArtifactsHandle } from '../src/rolebox/artifacts-handle.js';
import { guardCommands } from '../src/rolebox/command-guard.js';
import {
  ARTIFACT_COMMAND_ROWS,
  type CommandRows,
  GUARD_CODES,
  SESSION_COMMAND_ROWS,
} from '../src/rolebox/command-table.js';
import { SessionHandle } from '../src/rolebox/session-handle.js';

/** The session object's own handlers, which no row of the table stands for. */
const OWN_EXCLUSIVE_HANDLERS = [
  'open',
  'workerTerminated',
  'effectStarted',
  'effectAttemptFailed',
  'effectReturned',
  'deadline',
];
/** Of those, the ones only services may call (the ingress refuses them). */
const PRIVATE_HANDLERS = [
  'workerTerminated',
  'effectStarted',
  'effectAttemptFailed',
  'effectReturned',
  'deadline',
];

/** The public methods a prototype defines (what the guard wraps). */
function methodsOf(prototype: object): string[] {
  return Object.getOwnPropertyNames(prototype).filter(
    (name) =>
      name !== 'constructor' &&
      typeof Object.getOwnPropertyDescriptor(prototype, name)?.value === 'function',
  );
}

/** How a surface differs from what the table says it should be: one line per difference. */
function surfaceProblems(
  surface: string,
  actual: Iterable<string>,
  expected: Iterable<string>,
): string[] {
  const have = new Set(actual);
  const want = new Set(expected);
  return [
    ...[...have]
      .filter((name) => !want.has(name))
      .map((name) => `${surface}.${name} has no row in the command table`),
    ...[...want]
      .filter((name) => !have.has(name))
      .map((name) => `${surface}.${name} is in the command table but not on ${surface}`),
  ].sort();
}

/** The Restate handler names a table's rows of one kind name (or of any kind). */
function handlersNamed(rows: CommandRows, kind?: 'command' | 'read'): string[] {
  return Object.values(rows).flatMap((row) =>
    row.restate !== null && (kind === undefined || row.kind === kind) ? [row.restate] : [],
  );
}

/** The rows a Restate handler serves, by method name. */
function servedRows(rows: CommandRows): string[] {
  return Object.entries(rows).flatMap(([method, row]) => (row.restate === null ? [] : [method]));
}

/** What the Restate SDK recorded of a handler: its kind (1 exclusive, 2 shared) and options. */
function handlerWrapper(handler: unknown): {
  kind: number;
  options?: { ingressPrivate?: boolean };
} {
  const symbol = Object.getOwnPropertySymbols(handler).find((key) => key.description === 'Handler');
  expect(symbol, 'every handler is wrapped by the SDK').toBeDefined();
  return Reflect.get(handler as object, symbol as symbol);
}
const EXCLUSIVE = 1;
const SHARED = 2;

describe('the command table', () => {
  const tables = { session: SESSION_COMMAND_ROWS, 'session.artifacts': ARTIFACT_COMMAND_ROWS };

  it('has, for every row, as many parameter names as argument schemas, and only known codes', () => {
    for (const [surface, rows] of Object.entries(tables))
      for (const [method, row] of Object.entries(rows)) {
        const what = `${surface}.${method}`;
        expect(row.arguments, what).toBeInstanceOf(z.ZodTuple);
        expect((row.arguments as z.ZodTuple).def.items.length, what).toBe(row.parameters.length);
        expect(new Set(row.parameters).size, what).toBe(row.parameters.length);
        for (const code of [...row.throws, ...GUARD_CODES])
          expect(Object.hasOwn(ERROR_CODES, code), `${what} throws ${code}`).toBe(true);
      }
  });

  it('describes arguments the method takes: the schemas accept a good call and refuse a bad one', () => {
    expect(SESSION_COMMAND_ROWS.signal.arguments.safeParse([{ type: 'answer' }]).success).toBe(
      true,
    );
    expect(SESSION_COMMAND_ROWS.signal.arguments.safeParse([{ type: 'nope' }]).success).toBe(false);
    expect(
      SESSION_COMMAND_ROWS.send.arguments.safeParse([{ type: 'user_confirmed_intake' }]).success,
    ).toBe(true);
    expect(SESSION_COMMAND_ROWS.send.arguments.safeParse([{ type: 'made_up' }]).success).toBe(
      false,
    );
    expect(SESSION_COMMAND_ROWS.startLoop.arguments.safeParse(['|loop:2| x']).success).toBe(true);
    expect(
      SESSION_COMMAND_ROWS.startLoop.arguments.safeParse(['|loop:2| x', { agnet: 'a' }]).success,
    ).toBe(false);
    expect(ARTIFACT_COMMAND_ROWS.setStatus.arguments.safeParse(['a1', 'accepted']).success).toBe(
      true,
    );
    expect(ARTIFACT_COMMAND_ROWS.setStatus.arguments.safeParse(['a1', 'done']).success).toBe(false);
  });
});

describe('every surface has exactly the rows of the table', () => {
  it('the session handle and the artifacts handle: one method per row, one row per method', () => {
    expect(
      surfaceProblems(
        'session',
        methodsOf(SessionHandle.prototype),
        Object.keys(SESSION_COMMAND_ROWS),
      ),
    ).toEqual([]);
    expect(
      surfaceProblems(
        'session.artifacts',
        methodsOf(ArtifactsHandle.prototype),
        Object.keys(ARTIFACT_COMMAND_ROWS),
      ),
    ).toEqual([]);
  });

  it('a method added to a handle without a row is found, and its guard refuses to install', () => {
    // A handle like the real one, with one method more: what adding `approve` without a row does.
    class GrownHandle {
      send(): void {}
      approve(_id: string): void {}
    }
    const rows = { send: SESSION_COMMAND_ROWS.idle };
    expect(surfaceProblems('session', methodsOf(GrownHandle.prototype), Object.keys(rows))).toEqual(
      ['session.approve has no row in the command table'],
    );
    expect(() =>
      guardCommands(GrownHandle.prototype, 'session', rows as never, () => {}),
    ).toThrowError('session.approve has no row in its command table');
    // And the other way: a row left behind by a method that was removed.
    class ShrunkHandle {
      send(): void {}
    }
    const stale = { send: SESSION_COMMAND_ROWS.idle, approve: SESSION_COMMAND_ROWS.idle };
    expect(
      surfaceProblems('session', methodsOf(ShrunkHandle.prototype), Object.keys(stale)),
    ).toEqual(['session.approve is in the command table but not on session']);
    expect(() =>
      guardCommands(ShrunkHandle.prototype, 'session', stale as never, () => {}),
    ).toThrowError("the command table's row session.approve has no method");
  });

  it('the Restate object: commands are exclusive handlers, reads shared ones, plus its own', () => {
    const definition = roleboxSessionObject();
    const handlers = Object.entries(Reflect.get(definition, 'object') as Record<string, unknown>);
    const exclusive = handlers
      .filter(([, handler]) => handlerWrapper(handler).kind === EXCLUSIVE)
      .map(([name]) => name);
    const shared = handlers
      .filter(([, handler]) => handlerWrapper(handler).kind === SHARED)
      .map(([name]) => name);
    expect(exclusive.length + shared.length).toBe(handlers.length);
    expect(
      surfaceProblems('the exclusive handlers', exclusive, [
        ...handlersNamed(SESSION_COMMAND_ROWS, 'command'),
        ...handlersNamed(ARTIFACT_COMMAND_ROWS, 'command'),
        ...OWN_EXCLUSIVE_HANDLERS,
      ]),
    ).toEqual([]);
    expect(
      surfaceProblems('the shared handlers', shared, [
        ...handlersNamed(SESSION_COMMAND_ROWS, 'read'),
        ...handlersNamed(ARTIFACT_COMMAND_ROWS, 'read'),
      ]),
    ).toEqual([]);
    const privateOnes = handlers
      .filter(([, handler]) => handlerWrapper(handler).options?.ingressPrivate === true)
      .map(([name]) => name);
    expect(privateOnes.sort()).toEqual([...PRIVATE_HANDLERS].sort());
    // The exported lists are the same handlers.
    expect(new Set(SESSION_COMMANDS)).toEqual(
      new Set(exclusive.filter((name) => !OWN_EXCLUSIVE_HANDLERS.includes(name))),
    );
    expect(new Set(SESSION_READS)).toEqual(new Set(shared));
  });

  it('two rows share a Restate handler only when both are reads', () => {
    const owners = new Map<string, string[]>();
    for (const [surface, rows] of Object.entries({
      session: SESSION_COMMAND_ROWS,
      artifacts: ARTIFACT_COMMAND_ROWS,
    }))
      for (const [method, row] of Object.entries(rows as CommandRows))
        if (row.restate !== null)
          owners.set(row.restate, [
            ...(owners.get(row.restate) ?? []),
            `${surface}.${method}:${row.kind}`,
          ]);
    const shared = [...owners].filter(([, rows]) => rows.length > 1);
    expect(shared).toEqual([['facts', ['session.facts:read', 'artifacts.facts:read']]]);
  });
});

describe('the Restate client handle', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('has exactly the methods of the rows a handler serves', () => {
    const session = createRestateRolebox({ ingressUrl: 'http://127.0.0.1:9' }).session('s-1');
    const { id, artifacts, ...methods } = session;
    expect(id).toBe('s-1');
    expect(
      surfaceProblems('client session', Object.keys(methods), servedRows(SESSION_COMMAND_ROWS)),
    ).toEqual([]);
    expect(
      surfaceProblems(
        'client artifacts',
        Object.keys(artifacts),
        servedRows(ARTIFACT_COMMAND_ROWS),
      ),
    ).toEqual([]);
    // `require` is embedded only: no handler serves it.
    expect(Object.keys(artifacts)).not.toContain('require');
    expectTypeOf<keyof RestateArtifactsHandle>().toEqualTypeOf<
      'write' | 'setStatus' | 'get' | 'list' | 'facts'
    >();
    expectTypeOf<RestateSessionHandle['setKv']>().toEqualTypeOf<
      (name: string, key: string, value: unknown) => Promise<void>
    >();
  });

  it("posts each method's arguments, as a JSON array, to its row's handler, and answers the result", async () => {
    const posted: Array<{ url: string; body: unknown }> = [];
    vi.stubGlobal('fetch', async (url: string, init: { body: string }) => {
      posted.push({ url, body: JSON.parse(init.body) });
      return new Response(JSON.stringify({ result: { echo: posted.length }, events: [] }));
    });
    const session = createRestateRolebox({ ingressUrl: 'http://127.0.0.1:9' }).session('s-1');
    const calls: Array<[string, CommandRows, Record<string, unknown>]> = [
      ['session', SESSION_COMMAND_ROWS, session],
      ['artifacts', ARTIFACT_COMMAND_ROWS, session.artifacts],
    ];
    for (const [surface, rows, handle] of calls)
      for (const [method, row] of Object.entries(rows)) {
        if (row.restate === null) continue;
        const args = row.parameters.map((parameter) => `${surface}.${method}.${parameter}`);
        const answer = await (handle[method] as (...args: unknown[]) => Promise<unknown>)(...args);
        expect(answer, `${surface}.${method}`).toEqual({ echo: posted.length });
        expect(posted.at(-1), `${surface}.${method}`).toEqual({
          url: `http://127.0.0.1:9/rolebox-session/s-1/${row.restate}`,
          body: args,
        });
      }
    expect(posted).toHaveLength(
      servedRows(SESSION_COMMAND_ROWS).length + servedRows(ARTIFACT_COMMAND_ROWS).length,
    );
  });
});

describe('the agent tools', () => {
  /** The tool each row marked for agents names, as `surface.method → tool`. */
  const marked = Object.entries({
    session: SESSION_COMMAND_ROWS,
    artifacts: ARTIFACT_COMMAND_ROWS,
  }).flatMap(([surface, rows]) =>
    Object.entries(rows as CommandRows).flatMap(([method, row]) =>
      row.agentTool === undefined ? [] : [[`${surface}.${method}`, row.agentTool] as const],
    ),
  );

  it('the catalogue and the MCP server serve exactly the tools the rows marked for agents name', async () => {
    const named = new Set(marked.map(([, tool]) => tool));
    expect(surfaceProblems('the agent tools', ROLEBOX_TOOL_NAMES, named)).toEqual([]);
    const rb = createRolebox();
    await rb.start();
    const server = await createMcpServer({ rolebox: rb });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'table', version: '1' });
    await client.connect(clientSide);
    try {
      const { tools } = await client.listTools();
      expect(
        surfaceProblems(
          'the MCP tools',
          tools.map((tool) => tool.name),
          named,
        ),
      ).toEqual([]);
      // A tool that reads only is served as read-only, and only then.
      for (const tool of tools) {
        const kinds = new Set(
          marked
            .filter(([, name]) => name === tool.name)
            .map(([row]) => {
              const [surface, method] = row.split('.') as ['session' | 'artifacts', string];
              const rows: CommandRows =
                surface === 'session' ? SESSION_COMMAND_ROWS : ARTIFACT_COMMAND_ROWS;
              return rows[method]?.kind;
            }),
        );
        expect(tool.annotations?.readOnlyHint, tool.name).toBe(!kinds.has('command'));
      }
    } finally {
      await client.close();
      await rb.stop();
    }
  });

  it('take the arguments of their rows where they pass them on: the same values pass and fail', () => {
    const cases: Array<[tool: 'signal' | 'stop_loop', input: object, row: unknown[]]> = [
      ['signal', { type: 'answer' }, [{ type: 'answer' }]],
      [
        'signal',
        { type: 'answer', payload: { reason: 'x' } },
        [{ type: 'answer', payload: { reason: 'x' } }],
      ],
      ['signal', { type: 'nope' }, [{ type: 'nope' }]],
      ['signal', { type: 'answer', payload: 'text' }, [{ type: 'answer', payload: 'text' }]],
      ['stop_loop', { now: true }, [{ now: true }]],
      ['stop_loop', { now: 'yes' }, [{ now: 'yes' }]],
    ];
    for (const [tool, input, args] of cases) {
      const row = tool === 'signal' ? SESSION_COMMAND_ROWS.signal : SESSION_COMMAND_ROWS.stopLoop;
      expect(
        toolSpec(tool).input.safeParse(input).success,
        `${tool} ${JSON.stringify(input)}`,
      ).toBe(row.arguments.safeParse(args).success);
    }
  });
});

describe('rolebox send', () => {
  /**
   * Arguments each row's schema takes, as a user types them after `rolebox send <id> <command>`.
   * A new row without an entry here fails below: say how `send` reaches it.
   */
  const TYPED: Readonly<Record<string, readonly string[]>> = {
    send: ['{"type":"user_confirmed_intake"}'],
    toolCall: ['{"name":"grep","kind":"loop"}'],
    facts: [],
    setSlot: ['key', '{"n":1}'],
    activate: ['approval'],
    deactivate: ['approval'],
    signal: ['{"type":"answer"}'],
    tool: ['|signal:answer|'],
    approve: ['deploy:r1', '{"by":"ana","seenVersion":2}'],
    reject: ['deploy:r1', '{"reason":"no rollback plan"}'],
    extendRequest: ['deploy:r1', '{"timeoutMs":1800000,"by":"ana"}'],
    startLoop: ['|loop:2| summarise', '{"agent":"a"}'],
    stopLoop: ['{"now":true}'],
    observeTool: ['grep'],
    idle: [],
    message: ['hello'],
    resume: ['approval'],
    setKv: ['approval', 'key', '42'],
    settleEffect: ['s1:e1', '{"error":"no model"}'],
    view: [],
    close: [],
    'artifacts.write': ['{"name":"notes","content":"x"}'],
    'artifacts.setStatus': ['a1', 'accepted'],
    'artifacts.get': ['a1'],
    'artifacts.require': ['a1'],
    'artifacts.list': [],
    'artifacts.facts': [],
  };
  let dir: string | undefined;

  afterEach(async () => {
    vi.restoreAllMocks();
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("reaches every row: `send <command>` runs the row's method on its handle with the arguments typed", async () => {
    dir = await mkdtemp(join(tmpdir(), 'rolebox-table-'));
    const store = join(dir, 'state.db');
    const sqlite = new SqliteSnapshotStore(store);
    const rb = createRolebox({ store: sqlite, saveDebounceMs: 0 });
    await rb.start();
    await rb.openSession({ id: 's1' });
    await rb.stop();
    await sqlite.close();
    const surfaces = [
      { prefix: '', rows: SESSION_COMMAND_ROWS as CommandRows, prototype: SessionHandle.prototype },
      {
        prefix: 'artifacts.',
        rows: ARTIFACT_COMMAND_ROWS as CommandRows,
        prototype: ArtifactsHandle.prototype,
      },
    ];
    let reached = 0;
    for (const { prefix, rows, prototype } of surfaces)
      for (const [method, row] of Object.entries(rows)) {
        const name = `${prefix}${method}`;
        const typed = TYPED[name];
        expect(typed, `how does \`rolebox send\` reach ${name}? add it to TYPED`).toBeDefined();
        // The method itself is not run: this asserts that send calls it, and with what.
        const spy = vi
          .spyOn(prototype as unknown as Record<string, (...args: unknown[]) => unknown>, method)
          .mockImplementation(() => ({ reached: name }));
        const printed: string[] = [];
        const output = { out: (line: string) => printed.push(line), err: () => {} };
        const code = await main(
          ['send', 's1', name, ...(typed ?? []), '--store', store, '--json'],
          output,
        );
        expect(code, name).toBe(0);
        expect(JSON.parse(printed.join('\n')).result, name).toEqual({ reached: name });
        expect(spy, name).toHaveBeenCalledWith(...row.arguments.parse(typed?.map(parseTyped)));
        spy.mockRestore();
        reached++;
      }
    expect(reached).toBe(
      Object.keys(SESSION_COMMAND_ROWS).length + Object.keys(ARTIFACT_COMMAND_ROWS).length,
    );
    expect(Object.keys(TYPED)).toHaveLength(reached);
  }, 120_000);
});

/** A typed argument's value: JSON, else the text. */
function parseTyped(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
