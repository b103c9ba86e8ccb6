// A guarded MCP tool call killed with SIGKILL (ROLEBOX_CRASH_AT) between its approval and
// its answer (issue 25): after the restart the approved call has run exactly once. Killed
// before the save, neither the run nor its record is stored, and the call named again runs;
// killed after it, both are, and the call named again is refused as used.
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { APPROVAL_TOKEN_ENV } from '../src/ai/mcp-approval-tools.js';
import { activateRelease, mcpApprovalFixture, TOKEN } from './support/mcp-approval.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const fixture = mcpApprovalFixture('rolebox-mcp-approval-crash-');

/** A client of `rolebox mcp` guarding send_event on `store.db`, with `env` added. */
async function connect(env: Record<string, string> = {}) {
  const dir = fixture.dir();
  const { client, call } = await fixture.connect(
    [
      ...['--functions', join(dir, 'functions'), '--activate', 'deploy'],
      ...['--store', join(dir, 'store.db'), '--require-approval', 'send_event', '--approval-tools'],
    ],
    { [APPROVAL_TOKEN_ENV]: TOKEN, ...env },
  );
  const functionNames = async () =>
    (
      JSON.parse((await call('session_view', {})).text) as { functions: { name: string }[] }
    ).functions.map((fn) => fn.name);
  return { client, call, functionNames };
}

describe('rolebox mcp: a guarded call killed between its approval and its answer', () => {
  it.each([
    ['mcp-approved-ran', 'runs once when named again after the restart'],
    ['mcp-approved-saved', 'is stored as run: named again, refused as used'],
  ])('killed at %s: %s', async (point) => {
    const first = await connect();
    expect((await first.call('send_event', activateRelease)).text).toContain('request deploy:r1');
    const approved = await first.call('approve_request', { request_id: 'deploy:r1', token: TOKEN });
    expect(approved.isError, approved.text).toBe(false);
    await first.client.close();

    const crashing = await connect({ ROLEBOX_CRASH_AT: point });
    const killed = await crashing
      .call('send_event', { ...activateRelease, approval_request: 'deploy:r1' })
      .then(
        () => 'answered',
        (error: Error) => error.message,
      );
    expect(killed).toMatch(/Connection closed/);

    const after = await connect();
    const named = await after.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r1',
    });
    if (point === 'mcp-approved-ran') {
      // Nothing of the killed run was stored: this is its one run.
      expect(named.isError, named.text).toBe(false);
    } else {
      expect(named.text).toMatch(/^refused \(approval_refused\): deploy:r1 was used already/);
    }
    expect(await after.functionNames()).toEqual(['deploy', 'release']);
    // Either way, once: named again, refused.
    const again = await after.call('send_event', {
      ...activateRelease,
      approval_request: 'deploy:r1',
    });
    expect(again.text).toMatch(/^refused \(approval_refused\): deploy:r1 was used already/);
    await after.client.close();
  });
});
