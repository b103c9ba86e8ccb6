// What the `rolebox mcp --require-approval` tests share (test/mcp.approval.test.ts and its
// crash test): the deploy/release definitions, a fresh folder per test, and a client of a
// spawned `rolebox mcp` whose server is killed when the test ends.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach } from 'vitest';
import { ROLEBOX_BIN } from './cli.js';
import { killTracked } from './processes.js';

/** The host's approval token (`ROLEBOX_APPROVAL_TOKEN`) the servers are started with. */
export const TOKEN = 'host-only-token-0123456789';

/** `deploy`: gated on an answer; its send_event calls are the guarded ones. */
const DEPLOY = `---
name: deploy
gate: signal_observed(answer)
continue_until: state_eq(step=done)
---
Deploy, one approved step at a time.
`;
/** `release`: what a guarded call activates. */
const RELEASE = `---
name: release
continue_until: signal_observed(handoff)
---
Release.
`;

/** The send_event arguments that activate `release` (the guarded call of these tests). */
export const activateRelease = { event: { type: 'activate_function', name: 'release' } };

/** A tool's answer: its first text and whether it is an error. */
export interface ToolAnswer {
  readonly text: string;
  readonly isError: boolean;
}

/**
 * Registers, for each test of the file, a fresh folder (`dir()`) holding functions/deploy.md
 * and functions/release.md, and kills the `rolebox mcp` servers its clients spawned when the
 * test ends. `connect(args, env)` starts `rolebox mcp ...args` in that folder and returns its
 * client and `call(tool, args)` (on session S).
 */
export function mcpApprovalFixture(prefix: string) {
  let dir = '';
  const servers: number[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
    await mkdir(join(dir, 'functions'));
    await writeFile(join(dir, 'functions', 'deploy.md'), DEPLOY);
    await writeFile(join(dir, 'functions', 'release.md'), RELEASE);
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
    await rm(dir, { recursive: true, force: true });
  });
  const connect = async (args: readonly string[], env: Record<string, string> = {}) => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [ROLEBOX_BIN, 'mcp', ...args],
      cwd: dir,
      env: { ...process.env, ...env } as Record<string, string>,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'rolebox-approval-test', version: '1.0.0' });
    await client.connect(transport);
    if (transport.pid !== null) servers.push(transport.pid);
    const call = async (name: string, args: Record<string, unknown>): Promise<ToolAnswer> => {
      const result = await client.callTool({ name, arguments: { session_id: 'S', ...args } });
      const [content] = result.content as { type: string; text: string }[];
      return { text: content?.text ?? '', isError: result.isError === true };
    };
    return { client, call };
  };
  return { dir: () => dir, connect };
}
