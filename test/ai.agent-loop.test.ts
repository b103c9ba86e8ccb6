// examples/agent-loop.ts, run as a user runs it (`npm run example:agent-loop`): generateText
// over the AI SDK's mock model with rolebox's tools, through an approval to completion.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { killTracked, PROCESS_TEST_TIMEOUT_MS, track } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });
afterEach(killTracked);

const root = join(import.meta.dirname, '..');

describe('npm run example:agent-loop', () => {
  it('asks for approval, is approved, answers, and the function completes', async () => {
    const run = promisify((callback: (error: Error | null, stdout: string) => void) => {
      track(
        execFile('npm', ['run', 'example:agent-loop', '--silent'], { cwd: root }, (error, stdout) =>
          callback(error, stdout),
        ),
      );
    });
    expect(await run()).toBe(
      [
        'deploy is gated',
        'model → signal {"type":"need_approval","payload":{"reason":"deploy v2 to production"}}',
        'tool  ← signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request deploy:r1',
        'model: I have asked for approval to deploy v2 to production.',
        'idle → completed [], deploy is gated',
        'user: Approved, go ahead. (deploy is active)',
        'model → signal {"type":"answer","payload":{"deployed":"v2"}}',
        'tool  ← signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition, answered deploy:r1',
        'model: v2 is deployed to production.',
        'idle → completed ["deploy"], deploy is complete',
        '',
      ].join('\n'),
    );
  });
});
