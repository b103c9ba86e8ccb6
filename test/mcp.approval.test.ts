// `rolebox mcp --require-approval <tool>` (issue 25): a guarded tool does not run when called;
// the call opens an approval request naming the tool and its arguments, the host approves or
// rejects it (the approve_request/reject_request tools under the host's token, or
// `rolebox send … approve|reject`), and the client's second call naming the request runs it,
// once, or is refused. Through the SDK's Client over stdio, as test/mcp.test.ts does.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, expect, it, vi } from 'vitest';
import { createMcpServer } from '../src/ai/index.js';
import { APPROVAL_TOKEN_ENV } from '../src/ai/mcp-approval-tools.js';
import { runMcpCommand } from '../src/cli/commands/mcp.js';
import type { Output } from '../src/cli/output.js';
import { createRolebox, defineFunction } from '../src/index.js';
import { runCli } from './support/cli.js';
import { rejectionOf } from './support/errors.js';
import { activateRelease, mcpApprovalFixture, TOKEN } from './support/mcp-approval.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const fixture = mcpApprovalFixture('rolebox-mcp-approval-');
/** The server's arguments: deploy activated, send_event guarded, sessions in `store.db`. */
const serverArgs = (...more: string[]) => [
  '--functions',
  join(fixture.dir(), 'functions'),
  '--activate',
  'deploy',
  '--store',
  join(fixture.dir(), 'store.db'),
  '--require-approval',
  'send_event',
  ...more,
];

/** A client connected to `rolebox mcp ...args`, with reads of session S's view. */
async function connect(args: readonly string[], env: Record<string, string> = {}) {
  const { client, call } = await fixture.connect(args, env);
  const view = async () =>
    JSON.parse((await call('session_view', {})).text) as {
      functions: {
        name: string;
        phase: string;
        requests: {
          id: string;
          status: string;
          payload: unknown;
          answeredBy?: string;
          hostOnly?: true;
        }[];
      }[];
      slots: Record<string, unknown>;
    };
  const requests = async () =>
    (await view()).functions.find((fn) => fn.name === 'deploy')?.requests;
  const functionNames = async () => (await view()).functions.map((fn) => fn.name);
  return { client, call, view, requests, functionNames };
}

describe('rolebox mcp --require-approval', () => {
  it('a guarded call opens a request and waits; the host approves over MCP; the second call runs it once', async () => {
    const mcp = await connect(serverArgs('--approval-tools'), { [APPROVAL_TOKEN_ENV]: TOKEN });
    const tools = (await mcp.client.listTools()).tools;
    const sendEvent = tools.find((tool) => tool.name === 'send_event');
    expect(sendEvent?.description).toContain('The host must approve each call of this tool');
    expect(Object.keys(sendEvent?.inputSchema.properties ?? {})).toContain('approval_request');
    // Unguarded tools take no approval_request.
    const signal = tools.find((tool) => tool.name === 'signal');
    expect(Object.keys(signal?.inputSchema.properties ?? {})).not.toContain('approval_request');

    const first = await mcp.call('send_event', activateRelease);
    expect(first).toEqual({
      isError: true,
      text: 'waiting for approval (approval_pending): send_event did not run; request deploy:r1 must be approved by the host first. Then call send_event again with the same arguments and approval_request: "deploy:r1"',
    });
    expect(await mcp.functionNames()).toEqual(['deploy']);
    const [opened] = (await mcp.requests()) ?? [];
    expect(opened).toMatchObject({
      id: 'deploy:r1',
      status: 'open',
      payload: { approvalFor: 'mcp_tool_call', tool: 'send_event', arguments: activateRelease },
    });

    // Named before it is approved: it still waits, and opens nothing more.
    const early = await mcp.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r1',
    });
    expect(early.text).toMatch(/^waiting for approval \(approval_pending\): .*deploy:r1/);
    expect(await mcp.requests()).toHaveLength(1);
    // Host-only in the core too: an answer that reached it by another way would be refused.
    expect((await mcp.requests())?.[0]?.hostOnly).toBe(true);

    // The agent cannot approve its own call: an answer, named or not, is refused.
    for (const payload of [undefined, { requestId: 'deploy:r1' }]) {
      const selfAnswer = await mcp.call('signal', {
        type: 'answer',
        ...(payload ? { payload } : {}),
      });
      expect(selfAnswer.isError).toBe(true);
      expect(selfAnswer.text).toMatch(
        /^refused \(approval_refused\): an answer from the agent would approve deploy:r1/,
      );
    }
    // Nor without the host's token.
    const forged = await mcp.call('approve_request', {
      request_id: 'deploy:r1',
      token: 'guessed-token-000000',
    });
    expect(forged.text).toMatch(
      /^refused \(invalid_argument\): approve_request: the token is not the host's/,
    );
    expect((await mcp.requests())?.[0]?.status).toBe('open');
    expect(await mcp.functionNames()).toEqual(['deploy']);

    const approved = await mcp.call('approve_request', {
      request_id: 'deploy:r1',
      token: TOKEN,
      by: 'ana',
      note: 'release it',
    });
    expect(approved.isError).toBe(false);
    expect(approved.text).toContain('answered deploy:r1');
    expect((await mcp.requests())?.[0]).toMatchObject({
      status: 'answered',
      answeredBy: 'ana',
      answeredByHost: true,
    });

    // Approved for these arguments only.
    const other = await mcp.call('send_event', {
      event: { type: 'user_message', text: 'something else' },
      approval_request: 'deploy:r1',
    });
    expect(other.text).toMatch(
      /^refused \(approval_refused\): deploy:r1 was opened for send_event with .*not for this call/,
    );

    const ran = await mcp.call('send_event', { ...activateRelease, approval_request: 'deploy:r1' });
    expect(ran.isError).toBe(false);
    expect(await mcp.functionNames()).toEqual(['deploy', 'release']);

    const again = await mcp.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r1',
    });
    expect(again).toEqual({
      isError: true,
      text: 'refused (approval_refused): deploy:r1 was used already: an approval runs its call once; send_event did not run',
    });
    await mcp.client.close();

    // After a restart on the same store, the approval is still spent.
    const restarted = await connect(serverArgs());
    const afterRestart = await restarted.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r1',
    });
    expect(afterRestart.text).toMatch(/^refused \(approval_refused\): deploy:r1 was used already/);
    await restarted.client.close();
  });

  it('a rejected call never runs: rejected over MCP, or with rolebox send while the server is down', async () => {
    const mcp = await connect(serverArgs('--approval-tools'), { [APPROVAL_TOKEN_ENV]: TOKEN });
    expect((await mcp.call('send_event', activateRelease)).text).toContain('request deploy:r1');
    const rejected = await mcp.call('reject_request', {
      request_id: 'deploy:r1',
      token: TOKEN,
      by: 'ops',
      reason: 'not today',
    });
    expect(rejected.isError).toBe(false);
    const refused = await mcp.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r1',
    });
    expect(refused).toEqual({
      isError: true,
      text: 'refused (approval_refused): deploy:r1 was rejected by ops: not today; send_event did not run',
    });
    // A second call opens a new request; the server goes down before anyone answers it.
    expect((await mcp.call('send_event', activateRelease)).text).toContain('request deploy:r2');
    await mcp.client.close();

    const store = [
      '--store',
      join(fixture.dir(), 'store.db'),
      '--functions',
      join(fixture.dir(), 'functions'),
    ];
    const sent = await runCli(
      ['send', 'S', 'reject', 'deploy:r2', '{"by":"ops","reason":"still no"}', ...store],
      { cwd: fixture.dir() },
    );
    expect(sent.code, sent.stderr).toBe(0);
    const restarted = await connect(serverArgs());
    const stillRefused = await restarted.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r2',
    });
    expect(stillRefused.text).toBe(
      'refused (approval_refused): deploy:r2 was rejected by ops: still no; send_event did not run',
    );
    expect(await restarted.functionNames()).toEqual(['deploy']);
    await restarted.client.close();
  });

  it('approved with rolebox send while the server is down, the call runs after the restart', async () => {
    const mcp = await connect(serverArgs());
    // Without --approval-tools the host's tools are not offered.
    const names = (await mcp.client.listTools()).tools.map((tool) => tool.name);
    expect(names).not.toContain('approve_request');
    expect(names).not.toContain('extend_request');
    expect((await mcp.call('send_event', activateRelease)).text).toContain('request deploy:r1');
    await mcp.client.close();
    const store = [
      '--store',
      join(fixture.dir(), 'store.db'),
      '--functions',
      join(fixture.dir(), 'functions'),
    ];
    const sent = await runCli(['send', 'S', 'approve', 'deploy:r1', '{"by":"ana"}', ...store], {
      cwd: fixture.dir(),
    });
    expect(sent.code, sent.stderr).toBe(0);
    const restarted = await connect(serverArgs());
    const ran = await restarted.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r1',
    });
    expect(ran.isError, ran.text).toBe(false);
    expect(await restarted.functionNames()).toEqual(['deploy', 'release']);
    await restarted.client.close();
  });
});

describe('rolebox mcp --require-approval: refused at start (fail closed)', () => {
  const output = (): Output => ({ out: () => {}, err: () => {} });
  const run = (options: Record<string, unknown>, env: Record<string, string> = {}) =>
    runMcpCommand(
      {
        store: join(fixture.dir(), 'refused.db'),
        tasks: join(fixture.dir(), 'tasks'),
        functions: join(fixture.dir(), 'functions'),
        ...options,
      },
      output(),
      '0.0.0',
      { env },
    );

  it.each([
    [
      { requireApproval: ['deploy_everything'] },
      /--require-approval "deploy_everything": no tool of that name is offered/,
    ],
    // Without --worker the loop tools are not offered: guarding one guards nothing.
    [
      { requireApproval: ['signal', 'start_loop'] },
      /--require-approval "start_loop": no tool of that name is offered/,
    ],
    [
      { approvalTools: true },
      /the approval tools need a token of at least 16 characters \(ROLEBOX_APPROVAL_TOKEN for rolebox mcp\), got undefined/,
    ],
  ])('%o is invalid_argument, and no store is created', async (options, message) => {
    const error = await rejectionOf(run(options));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toMatch(message);
    expect(existsSync(join(fixture.dir(), 'refused.db'))).toBe(false);
  });

  it('a token shorter than 16 characters is refused without naming it', async () => {
    const error = await rejectionOf(
      run({ approvalTools: true }, { [APPROVAL_TOKEN_ENV]: 'short-token' }),
    );
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('got 11 character(s)');
    expect(error.message).not.toContain('short-token');
  });
});

describe('createMcpServer({ requireApproval, approvalToken }): the refusals, in process', () => {
  /** A server over its own rolebox (deploy defined, activated only when `activate`). */
  async function serve(activate: boolean) {
    const rb = createRolebox({
      functions: [
        defineFunction({
          name: 'deploy',
          gate: 'signal_observed(answer)',
          continue_until: 'state_eq(step=done)',
        }),
      ],
    });
    await rb.start();
    const server = await createMcpServer({
      rolebox: rb,
      activate: activate ? ['deploy'] : [],
      requireApproval: ['send_event'],
      approvalToken: TOKEN,
    });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'host', version: '1' });
    await client.connect(clientSide);
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: { session_id: 'S', ...args } });
      const [content] = result.content as { type: string; text: string }[];
      return { text: content?.text ?? '', isError: result.isError === true };
    };
    const stop = async () => {
      await client.close();
      await rb.stop();
    };
    return { rb, call, stop };
  }
  const message = { event: { type: 'user_message', text: 'ship it' } };

  it('refuses, and opens or runs nothing: bad arguments, an unknown or non-tool request, no live function', async () => {
    const bare = await serve(false);
    const none = await bare.call('send_event', message);
    expect(none.text).toMatch(
      /^refused \(approval_refused\): send_event needs the host's approval, and session S has no live function to hold the request/,
    );
    await bare.stop();

    const h = await serve(true);
    const requests = () =>
      h.rb
        .session('S')
        .view()
        .functions.flatMap((fn) => fn.requests);
    // The tool's own arguments are read first: a bad call opens no request.
    const bad = await h.call('send_event', { event: { type: 'no_such_event' } });
    expect(bad.text).toMatch(/^refused \(invalid_event|^refused \(invalid_argument/);
    expect(h.rb.sessions()).toEqual([]);
    expect((await h.call('send_event', message)).text).toContain('request deploy:r1');
    // A request the agent opened itself is not a tool call's.
    h.rb.session('S').signal({ type: 'need_approval', payload: { reason: 'other' } });
    for (const [id, why] of [
      ['deploy:r9', '"deploy:r9" is not a tool-call request of this session'],
      ['deploy:r2', '"deploy:r2" is not a tool-call request of this session'],
    ]) {
      const refused = await h.call('send_event', { ...message, approval_request: id });
      expect(refused.text).toBe(`refused (approval_refused): ${why}; send_event did not run`);
    }
    const notText = await h.call('send_event', { ...message, approval_request: 5 });
    expect(notText.text).toMatch(
      /^refused \(invalid_argument\): approval_request must be a request id/,
    );
    // An unguarded tool takes no approval_request.
    const unguarded = await h.call('signal', { type: 'progress', approval_request: 'deploy:r1' });
    expect(unguarded.text).toMatch(/^refused \(invalid_argument\)/);
    expect(requests().map((request) => `${request.id} ${request.status}`)).toEqual([
      'deploy:r1 open',
      'deploy:r2 open',
    ]);
    await h.stop();
  });

  it('the approval tools refuse a missing token or reason and a session they do not have, answering nothing', async () => {
    const h = await serve(true);
    expect((await h.call('send_event', message)).text).toContain('request deploy:r1');
    const noToken = await h.call('approve_request', { request_id: 'deploy:r1' });
    expect(noToken.text).toMatch(/^refused \(invalid_argument\): approve_request: token/);
    const noReason = await h.call('reject_request', { request_id: 'deploy:r1', token: TOKEN });
    expect(noReason.text).toMatch(/^refused \(invalid_argument\): reject_request: reason/);
    const elsewhere = await h.call('approve_request', {
      session_id: 'nobody',
      request_id: 'deploy:r1',
      token: TOKEN,
    });
    expect(elsewhere.text).toBe('refused (unknown_session): no session "nobody" to answer in');
    expect(h.rb.sessions()).toEqual(['S']);
    const stale = await h.call('approve_request', { request_id: 'deploy:r7', token: TOKEN });
    expect(stale.text).toMatch(/^refused \(stale_answer\)/);
    expect(h.rb.session('S').view().functions[0]?.requests[0]?.status).toBe('open');
    await h.stop();
  });

  it("extend_request moves an open request's deadline under the token; refusals move nothing", async () => {
    const h = await serve(true);
    expect((await h.call('send_event', message)).text).toContain('request deploy:r1');
    const request = () => h.rb.session('S').view().functions[0]?.requests[0];
    for (const [args, refusal] of [
      [
        { request_id: 'deploy:r1', timeoutMs: 60_000 },
        /^refused \(invalid_argument\): extend_request: token/,
      ],
      [
        { request_id: 'deploy:r1', token: 'guessed-token-000000', timeoutMs: 60_000 },
        /^refused \(invalid_argument\): extend_request: the token is not the host's/,
      ],
      [
        { request_id: 'deploy:r1', token: TOKEN, timeoutMs: 0 },
        /^refused \(invalid_argument\): extend_request: timeoutMs/,
      ],
      [{ request_id: 'deploy:r7', token: TOKEN, timeoutMs: 60_000 }, /^refused \(stale_answer\)/],
    ] as const) {
      const refused = await h.call('extend_request', args);
      expect(refused.isError, JSON.stringify(args)).toBe(true);
      expect(refused.text).toMatch(refusal);
      expect(request()?.expiresAt).toBeUndefined();
    }
    const before = Date.now();
    const moved = await h.call('extend_request', {
      request_id: 'deploy:r1',
      token: TOKEN,
      timeoutMs: 60_000,
      by: 'ana',
    });
    expect(moved.isError).toBe(false);
    expect(moved.text).toMatch(/^request deploy:r1 now expires \d{4}-/);
    expect(request()).toMatchObject({ status: 'open', extendedBy: 'ana' });
    expect(request()?.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(request()?.expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
    await h.stop();
  });
});
