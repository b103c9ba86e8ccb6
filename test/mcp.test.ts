// `rolebox mcp`: rolebox's tools and session resources over MCP. A real client (the SDK's
// Client over StdioClientTransport) spawns the command and drives approval workflows; the
// command alone, in this process, answers only protocol frames on stdout and ends with
// stdin; without the SDK it says what to install.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LoggingMessageNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMcpServer, loadMcpSdk, MCP_SDK_PACKAGE } from '../src/ai/index.js';
import { runMcpCommand } from '../src/cli/commands/mcp.js';
import type { Output } from '../src/cli/output.js';
import {
  createRolebox,
  defineFunction,
  MemorySnapshotStore,
  type Rolebox,
  RUNTIME_EVENT_TYPES,
  SIGNAL_TYPES,
} from '../src/index.js';
import { ScriptedDispatcher, settle } from '../src/testing/index.js';
import { ROLEBOX_BIN } from './support/cli.js';
import { rejectionOf } from './support/errors.js';
import { killTaskGroups, killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

let dir: string;
/** Pids of the servers the clients spawned (their transports own the child processes). */
const servers: number[] = [];

const APPROVAL = `---
name: approval
gate: user_approval()
continue_until: signal_observed(answer)
observe:
  - tool: signal
    capture_payload_as: approval-data
---
Ask for approval, wait for the user, then answer.
`;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-mcp-'));
  await mkdir(join(dir, 'functions'));
  await writeFile(join(dir, 'functions', 'approval.md'), APPROVAL);
});

afterEach(async () => {
  for (const pid of servers.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await killTracked();
  killTaskGroups(join(dir, '.rolebox', 'tasks'));
  await rm(dir, { recursive: true, force: true });
});

function captured(): Output & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (line) => lines.push(`out: ${line}`), err: (line) => lines.push(line) };
}

/** A client connected to `rolebox mcp ...args`, spawned from the sources in `dir`. */
async function connect(args: readonly string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ROLEBOX_BIN, 'mcp', ...args],
    cwd: dir,
    env: { ...process.env } as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const client = new Client({ name: 'rolebox-test', version: '1.0.0' });
  // A line on stdout that is not a frame would arrive here.
  const protocolErrors: unknown[] = [];
  client.onerror = (error) => protocolErrors.push(error);
  const logged: { logger?: string; data: unknown }[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logged.push(notification.params);
  });
  await client.connect(transport);
  if (transport.pid !== null) servers.push(transport.pid);
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    const [content] = result.content as { type: string; text: string }[];
    return { text: content?.text ?? '', isError: result.isError === true };
  };
  const read = async (uri: string): Promise<unknown> => {
    const result = await client.readResource({ uri });
    return JSON.parse((result.contents[0] as { text: string }).text);
  };
  return { client, transport, call, read, stderr: () => stderr, protocolErrors, logged };
}

type View = {
  phase: string;
  waitingReason: unknown;
  functions: { name: string; phase: string }[];
  artifacts: { id: string; name: string; status: string; content?: string }[];
  loop: { id: string; phase: string } | null;
};

describe('rolebox mcp over stdio', () => {
  it('drives an approval workflow: need_approval gates, the user approves, answer and idle complete', async () => {
    const mcp = await connect([
      '--functions',
      join(dir, 'functions'),
      '--activate',
      'approval',
      '--worker',
      'cat',
      '--delay',
      '0',
      '--no-store',
    ]);
    const { tools } = await mcp.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'signal',
      'start_loop',
      'stop_loop',
      'session_view',
      'send_event',
    ]);
    expect(tools[0]?.inputSchema).toMatchObject({
      required: expect.arrayContaining(['session_id', 'type']),
    });
    expect(tools.find((tool) => tool.name === 'session_view')?.annotations?.readOnlyHint).toBe(
      true,
    );

    // The first call names the session: it is opened, with approval activated (gated).
    expect(
      await mcp.call('signal', {
        session_id: 'ticket-1',
        type: 'need_approval',
        payload: { reason: 'deploy to prod' },
      }),
    ).toEqual({
      text: 'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request approval:r1',
      isError: false,
    });
    const viewUri = 'rolebox://session/ticket-1/view';
    let view = (await mcp.read(viewUri)) as View;
    expect(view.functions).toMatchObject([{ name: 'approval', phase: 'gated' }]);
    // The captured payload is an artifact, but a draft: no content, and no fact.
    expect(view.artifacts).toEqual([
      expect.objectContaining({ name: 'approval-data', status: 'drafted' }),
    ]);
    expect(view.artifacts[0]).not.toHaveProperty('content');
    expect(await mcp.read('rolebox://session/ticket-1/artifacts')).toEqual([]);

    // A refusal is a tool result with isError and the code; nothing changes.
    expect(
      await mcp.call('send_event', {
        session_id: 'ticket-1',
        event: { type: 'resume_function', name: 'approval' },
      }),
    ).toEqual({
      text: 'refused (gate_closed): function "approval" opens only when its gate holds: user_approval()',
      isError: true,
    });
    // So is an input outside the schema (refused by the SDK before rolebox sees it).
    const bad = await mcp.call('signal', { session_id: 'ticket-1', type: 'approve' });
    expect(bad.isError).toBe(true);
    expect(bad.text).toContain('type');

    // The user approves: a user message opens the gate.
    await mcp.call('send_event', {
      session_id: 'ticket-1',
      event: { type: 'user_message', text: 'Approved.' },
    });
    view = (await mcp.read(viewUri)) as View;
    expect(view.functions).toMatchObject([{ name: 'approval', phase: 'active' }]);
    expect((await mcp.call('signal', { session_id: 'ticket-1', type: 'answer' })).text).toBe(
      'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition, answered approval:r1',
    );
    const idle = await mcp.call('send_event', {
      session_id: 'ticket-1',
      event: { type: 'idle' },
    });
    expect(JSON.parse(idle.text)).toMatchObject({ completed: ['approval'] });
    view = (await mcp.read(viewUri)) as View;
    expect(view.functions).toMatchObject([{ name: 'approval', phase: 'complete' }]);

    // The runtime session's own approval and review make the artifact a fact.
    const send = async (event: Record<string, unknown>) => {
      const result = await mcp.call('send_event', { session_id: 'ticket-1', event });
      expect(result.isError, result.text).toBe(false);
      return JSON.parse(result.text) as { phase: string; waitingReason: unknown };
    };
    await send({
      type: 'session_started',
      availableSkills: [{ name: 'ship' }],
      initialSkill: 'ship',
    });
    await send({ type: 'user_submitted_input', text: 'ship it' });
    const decision = { id: 'd1', kind: 'run_worker', workerId: 'shipper', requiresApproval: true };
    expect(await send({ type: 'main_agent_decision_created', decision })).toMatchObject({
      waitingReason: { kind: 'approve_step', decisionId: 'd1' },
    });
    expect(await send({ type: 'user_approved_next_step', decisionId: 'd1' })).toMatchObject({
      phase: 'running',
    });
    await send({ type: 'worker_started', workerId: 'shipper', acceptanceMode: 'user_confirmed' });
    const artifactId = view.artifacts[0]?.id;
    await send({ type: 'worker_completed', artifactId });
    await send({ type: 'user_accepted_artifact', artifactId });
    expect(await mcp.read('rolebox://session/ticket-1/artifacts')).toEqual([
      expect.objectContaining({ id: artifactId, name: 'approval-data', status: 'accepted' }),
    ]);

    const { resources } = await mcp.client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual([
      viewUri,
      'rolebox://session/ticket-1/artifacts',
    ]);
    // Reading never opens a session.
    await expect(mcp.read('rolebox://session/nobody/view')).rejects.toThrow(/no open session/);
    expect(mcp.protocolErrors).toEqual([]);
    expect(mcp.stderr()).toContain(
      'rolebox mcp: serving tools signal, start_loop, stop_loop, session_view, send_event on stdio; sessions in memory, activating approval',
    );
    await mcp.client.close();
  });

  it('runs a loop with --worker, and parallel first calls share one stored session', async () => {
    // With a store, opening a session takes a claim and a read: the second call comes meanwhile.
    const mcp = await connect(['--worker', 'cat', '--delay', '0']);
    const [first, second] = await Promise.all([
      mcp.call('start_loop', { session_id: 'loops', task: 'count to one', iterations: 1 }),
      mcp.call('session_view', { session_id: 'loops' }),
    ]);
    expect(first.text).toMatch(/^loop started: loop_\w+$/);
    expect(second.isError, second.text).toBe(false);
    let view = (await mcp.read('rolebox://session/loops/view')) as View;
    for (let i = 0; i < 200 && view.loop?.phase !== 'complete'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      view = (await mcp.read('rolebox://session/loops/view')) as View;
    }
    expect(view.loop).toMatchObject({
      id: first.text.slice('loop started: '.length),
      phase: 'complete',
    });
    expect(await mcp.call('stop_loop', { session_id: 'loops' })).toEqual({
      text: 'refused (no_active_loop): session loops has no running loop',
      isError: true,
    });
    expect(mcp.stderr()).toContain('sessions in .rolebox/state.db');
    // The loop's notes reached the client as log messages.
    expect(mcp.logged).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          logger: 'rolebox',
          data: expect.objectContaining({
            session: 'loops',
            text: expect.stringContaining('round 1/1 completed'),
          }),
        }),
      ]),
    );
    await mcp.client.close();
    // A later server lists the stored session without a call naming it (listing claims
    // nothing, so it need not wait for the first server to let go).
    const later = await connect(['--delay', '0']);
    const { resources } = await later.client.listResources();
    expect(resources.map((resource) => resource.uri)).toContain('rolebox://session/loops/view');
    await later.client.close();
  });
});

describe('rolebox mcp in this process', () => {
  it('writes only protocol frames to stdout and ends (exit 0) when stdin ends', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    let written = '';
    stdout.on('data', (chunk) => {
      written += chunk;
    });
    const output = captured();
    const exit = runMcpCommand(
      { store: join(dir, 'state.db'), tasks: join(dir, 'tasks'), inspect: false },
      output,
      '1.2.3',
      { stdin, stdout },
    );
    const frames = () =>
      written
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { id?: number; result?: Record<string, unknown> });
    stdin.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 't', version: '1' },
        },
      })}\n`,
    );
    for (let i = 0; i < 200 && frames().length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(frames()[0]).toMatchObject({
      id: 1,
      result: { serverInfo: { name: 'rolebox', version: '1.2.3' } },
    });
    stdin.end();
    expect(await exit).toBe(0);
    expect(output.lines.filter((line) => line.startsWith('out: '))).toEqual([]);
    expect(output.lines).toContain(
      `rolebox mcp: serving tools signal, session_view, send_event on stdio; sessions in ${join(dir, 'state.db')}`,
    );
  });

  it('stops on SIGINT or SIGTERM, exit 0, and leaves no signal listener behind', async () => {
    const listeners = () => process.listenerCount('SIGINT') + process.listenerCount('SIGTERM');
    const before = listeners();
    let interrupt = () => {};
    const interrupted = new Promise<void>((resolve) => {
      interrupt = resolve;
    });
    const output = captured();
    const exit = runMcpCommand({ store: false, tasks: join(dir, 'tasks') }, output, '1', {
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      interrupted,
    });
    for (let i = 0; i < 200 && !output.lines.some((line) => line.startsWith('rolebox mcp:')); i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    interrupt();
    expect(await exit).toBe(0);
    expect(listeners()).toBe(before);
  });

  it('says what to install when @modelcontextprotocol/sdk is missing', async () => {
    const notFound = Object.assign(
      new Error(
        `Cannot find package '${MCP_SDK_PACKAGE}' imported from /app/dist/src/ai/mcp-server.js`,
      ),
      { code: 'ERR_MODULE_NOT_FOUND' },
    );
    const error = await rejectionOf(
      runMcpCommand({ store: false, tasks: join(dir, 'tasks') }, captured(), '1', {
        loadSdk: () => Promise.reject(notFound),
      }),
    );
    expect(error.code).toBe('missing_dependency');
    expect(error.message).toBe(
      'the MCP server needs @modelcontextprotocol/sdk, which is not installed: npm install @modelcontextprotocol/sdk@^1.23',
    );
    // Something else missing (a broken install) is not blamed on the SDK.
    const other = Object.assign(new Error("Cannot find package 'zod' imported from /x.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    await expect(loadMcpSdk(() => Promise.reject(other))).rejects.toBe(other);
  });

  it('refuses an --activate name with no definition, before serving', async () => {
    const error = await rejectionOf(
      runMcpCommand(
        {
          store: false,
          tasks: join(dir, 'tasks'),
          functions: join(dir, 'functions'),
          activate: ['ghost'],
        },
        captured(),
        '1',
        { stdin: new PassThrough(), stdout: new PassThrough() },
      ),
    );
    expect(error).toMatchObject({
      code: 'unknown_function',
      message: expect.stringContaining('--activate "ghost"'),
    });
  });
});

describe('createMcpServer in your own process', () => {
  it('serves your rolebox over any transport, with the tools you choose', async () => {
    const rb = createRolebox({
      functions: [defineFunction({ name: 'review', continue_until: 'signal_observed(answer)' })],
    });
    await rb.start();
    const server = await createMcpServer({ rolebox: rb, activate: ['review'], tools: ['signal'] });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'host', version: '1' });
    await client.connect(clientSide);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['signal']);
      const result = await client.callTool({
        name: 'signal',
        arguments: { session_id: 'mine', type: 'answer' },
      });
      expect(result.content).toEqual([
        {
          type: 'text',
          text: 'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition',
        },
      ]);
      // The session is the host's own: its handle sees what the client did.
      expect(rb.session('mine').idle().completed).toEqual(['review']);
    } finally {
      await client.close();
      await rb.stop();
    }
  });

  it('refuses bad options, naming them', async () => {
    expect((await rejectionOf(createMcpServer({} as never))).code).toBe('invalid_argument');
    const rb = createRolebox();
    expect(
      (await rejectionOf(createMcpServer({ rolebox: rb, activate: 'review' as never }))).code,
    ).toBe('invalid_argument');
    expect(
      (await rejectionOf(createMcpServer({ rolebox: rb, tools: ['shell' as never] }))).message,
    ).toContain('unknown tool "shell"');
  });
});

/** A client of `createMcpServer({ rolebox: rb, ...options })` over an in-memory pair. */
async function clientOf(
  rb: Rolebox,
  options: Omit<Parameters<typeof createMcpServer>[0], 'rolebox'> = {},
) {
  const server = await createMcpServer({ rolebox: rb, ...options });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'rolebox-test', version: '1' });
  const logged: { logger?: string; data: unknown }[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logged.push(notification.params);
  });
  await client.connect(clientSide);
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    const [content] = result.content as { type: string; text: string }[];
    return { text: content?.text ?? '', isError: result.isError === true };
  };
  return { client, call, logged };
}

type Described = { description?: string; [key: string]: unknown };

describe('the MCP server as a client sees it', () => {
  let rb: Rolebox | undefined;
  afterEach(async () => {
    await rb?.stop();
    rb = undefined;
  });

  it('states the session id rule, the clamp and every event in words, in the schemas it lists', async () => {
    rb = createRolebox({ dispatcher: new ScriptedDispatcher() });
    await rb.start();
    const { client } = await clientOf(rb);
    const { tools } = await client.listTools();
    for (const tool of tools) {
      const schema = tool.inputSchema as { properties: Record<string, Described> };
      expect(schema.properties.session_id, tool.name).toMatchObject({
        type: 'string',
        minLength: 1,
        maxLength: 128,
        pattern: '^[A-Za-z0-9_.-]{1,128}$',
      });
      expect(schema, tool.name).toMatchObject({ additionalProperties: false });
      // A client cannot read rolebox's SPEC: no description points there.
      expect(JSON.stringify(tool), tool.name).not.toMatch(/SPEC|§/);
    }
    const schemaOf = (name: string) =>
      tools.find((tool) => tool.name === name)?.inputSchema as {
        properties: Record<string, Described & { oneOf?: Described[] }>;
      };
    expect(schemaOf('start_loop').properties.iterations?.description).toContain(
      'clamped to it, and the reply says so',
    );
    const variants = schemaOf('send_event').properties.event?.oneOf ?? [];
    expect(
      variants.map((variant) => (variant.properties as { type: { const: string } }).type.const),
    ).toEqual(expect.arrayContaining([...RUNTIME_EVENT_TYPES, 'user_message', 'idle']));
    for (const variant of variants)
      expect(variant.description, JSON.stringify(variant.properties)).toMatch(/\w{3,}/);
    await client.close();
  });

  it('refuses arguments outside the schema as every refusal, naming the value, and opens no session', async () => {
    rb = createRolebox();
    await rb.start();
    const { client, call } = await clientOf(rb);
    expect(await call('signal', { session_id: 'a', type: 'approve' })).toEqual({
      text: `refused (unknown_signal_type): unknown signal type "approve"; expected one of ${SIGNAL_TYPES.join(', ')}`,
      isError: true,
    });
    expect(await call('signal', { session_id: 'a', type: 'answer', extra: 1 })).toEqual({
      text: 'refused (invalid_argument): signal arguments take only type and payload, got "extra"',
      isError: true,
    });
    expect(await call('send_event', { session_id: 'a', event: { type: 'idle', now: 1 } })).toEqual({
      text: 'refused (invalid_event): send_event: idle: unknown argument(s) "now"',
      isError: true,
    });
    expect(await call('session_view', { session_id: 'no/slash' })).toEqual({
      text: 'refused (invalid_argument): session id must be 1-128 characters of A-Z a-z 0-9 _ . -, got "no/slash"',
      isError: true,
    });
    expect((await call('session_view', {})).text).toBe(
      'refused (invalid_argument): session id must be 1-128 characters of A-Z a-z 0-9 _ . -, got undefined',
    );
    expect(rb.sessions()).toEqual([]);
    await client.close();
  });

  it('answers a refused read once, with its code, not "MCP error -32002: MCP error -32002: …"', async () => {
    rb = createRolebox();
    await rb.start();
    const { client } = await clientOf(rb);
    const error = await client.readResource({ uri: 'rolebox://session/nobody/view' }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({
      code: -32002,
      message: 'MCP error -32002: refused (unknown_session): no open session "nobody"',
      data: { code: 'unknown_session' },
    });
    await client.close();
  });

  it('marks a refused loop isError, and says when a loop runs fewer rounds than asked for', async () => {
    rb = createRolebox({
      dispatcher: new ScriptedDispatcher(),
      limits: { maxIterations: 2, defaultIterations: 1, interRoundDelayMs: 0 },
    });
    await rb.start();
    const { client, call } = await clientOf(rb);
    const started = await call('start_loop', { session_id: 'l', task: 'count', iterations: 5 });
    expect(started).toEqual({
      text: expect.stringMatching(
        /^loop started: loop_\w+ \(2 rounds: 5 asked for, clamped to the host's limit\)$/,
      ),
      isError: false,
    });
    expect(rb.session('l').view().loop).toMatchObject({ total: 2, requested: 5 });
    const again = await call('start_loop', { session_id: 'l', task: 'again' });
    expect(again.isError).toBe(true);
    expect(again.text).toMatch(/^loop refused: /);
    await client.close();
  });

  it('sends each loop note to the client as a log message while it is connected', async () => {
    rb = createRolebox({
      dispatcher: new ScriptedDispatcher(() => 'counted'),
      limits: { interRoundDelayMs: 0 },
    });
    await rb.start();
    const { client, call, logged } = await clientOf(rb);
    const started = await call('start_loop', { session_id: 'n', task: 'count', iterations: 2 });
    const loopId = started.text.slice('loop started: '.length);
    for (let i = 0; i < 200 && rb.session('n').view().loop?.phase !== 'complete'; i++)
      await settle(1);
    for (
      let i = 0;
      i < 200 &&
      !logged.some(
        (entry) =>
          /completed/.test(String((entry.data as { text: string }).text)) &&
          (entry.data as { round?: number }).round === 2,
      );
      i++
    )
      await settle(1);
    expect(logged).toEqual(
      expect.arrayContaining([
        {
          level: 'info',
          logger: 'rolebox',
          data: {
            session: 'n',
            loop: loopId,
            round: 1,
            text: expect.stringContaining('round 1/2 completed'),
          },
        },
        expect.objectContaining({
          data: expect.objectContaining({ loop: loopId, round: 2 }),
        }),
      ]),
    );
    // Closed, the client is told nothing more, and the rolebox keeps no listener for it.
    await client.close();
    const count = logged.length;
    const other = await rb.openSession({ id: 'n2' });
    expect(other.startLoop('|loop:1| count again').ok).toBe(true);
    for (let i = 0; i < 200 && other.view().loop?.phase !== 'complete'; i++) await settle(1);
    expect(other.view().loop?.phase).toBe('complete');
    await settle(5);
    expect(logged.length).toBe(count);
  });

  it("reads a session's view with no rolebox-internal keys in it (issue 27 item 18)", async () => {
    rb = createRolebox({
      functions: [defineFunction({ name: 'approval', continue_until: 'signal_observed(answer)' })],
    });
    await rb.start();
    const session = await rb.openSession({ id: 's1' });
    session.activate('approval');
    session.signal({ type: 'need_approval', payload: { reason: 'deploy' } });
    session.signal({ type: 'answer', payload: { approved: true } });
    expect(session.idle().completed).toEqual(['approval']);
    const { client } = await clientOf(rb);
    const read = await client.readResource({ uri: 'rolebox://session/s1/view' });
    const text = (read.contents[0] as { text: string }).text;
    expect(text).not.toContain('__');
    const [fn] = JSON.parse(text).functions;
    expect(fn).toMatchObject({
      name: 'approval',
      status: 'completed',
      evidence: {},
      kv: {},
      terminatingSignal: 'answer',
      signals: { need_approval: { reason: 'deploy' }, answer: { approved: true } },
    });
    await client.close();
  });

  it('lists the sessions in the store as well as the live ones, without activating them', async () => {
    const store = new MemorySnapshotStore();
    const first = createRolebox({ store, saveDebounceMs: 0 });
    await first.start();
    await first.openSession({ id: 'stored-1' });
    await first.openSession({ id: 'stored-2' });
    await first.stop();

    rb = createRolebox({ store, saveDebounceMs: 0 });
    await rb.start();
    const { client, call } = await clientOf(rb, { store });
    await call('session_view', { session_id: 'live' });
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual([
      'rolebox://session/live/view',
      'rolebox://session/stored-1/view',
      'rolebox://session/stored-2/view',
      'rolebox://session/live/artifacts',
      'rolebox://session/stored-1/artifacts',
      'rolebox://session/stored-2/artifacts',
    ]);
    expect(rb.sessions()).toEqual(['live']);
    // A listed session can be read: reading it activates that one alone.
    const read = await client.readResource({ uri: 'rolebox://session/stored-2/view' });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({
      id: 'stored-2',
    });
    expect(rb.sessions().sort()).toEqual(['live', 'stored-2']);
    await client.close();
  });
});
