// inspect: { url } delivers what a short script did: `rb.stop()` right after the work flushes
// the frames still buffered (within a bound), and an inspector that cannot be reached is
// warned about once instead of silently losing the session.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createRolebox, defineFunction } from '../src/index.js';
import { STOP_FLUSH_MS } from '../src/rolebox/inspector-connection.js';

const answered = 'signal_observed(answer)';
const approval = defineFunction({ name: 'approval', gate: answered, continue_until: answered });

/** Runs the README's approval script against `url` and stops at once, as a script does. */
async function runScript(url: string): Promise<void> {
  const rb = createRolebox({ functions: [approval], inspect: { url } });
  await rb.start();
  const session = await rb.openSession({ id: 'script' });
  session.activate('approval');
  session.tool('|signal| type=need_approval, payload={"reason": "prod"}');
  session.tool('|signal| type=answer, payload={"approved": true}');
  session.idle();
  await rb.stop();
}

const warnings: string[] = [];
const onWarning = (warning: Error) => warnings.push(warning.message);
process.on('warning', onWarning);
afterEach(() => {
  warnings.length = 0;
});

describe('inspect: { url } delivery', () => {
  it('rb.stop() right after the work still delivers the session, up to its complete function', async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    const frames: string[] = [];
    let closed: Promise<unknown> = Promise.resolve();
    server.on('connection', (socket) => {
      socket.on('message', (data) => frames.push(String(data)));
      closed = once(socket, 'close');
    });
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      await runScript(url);
      // Closing is the last thing stop() does: the server has every frame once it sees it.
      await closed;
      const events = frames.map((frame) => JSON.parse(frame) as Record<string, unknown>);
      expect(events[0]).toMatchObject({ type: 'rolebox.app' });
      const actors = events.filter((event) => event.type === '@xstate.actor');
      const fn = actors.find((event) => /"id":"function"/.test(String(event.definition)));
      expect(fn).toBeDefined();
      const values = events
        .filter((event) => event.type === '@xstate.snapshot' && event.sessionId === fn?.sessionId)
        .map((event) => (event.snapshot as { value?: unknown }).value);
      expect(values).toEqual(expect.arrayContaining(['gated', 'complete']));
      expect(warnings).toEqual([]);
    } finally {
      server.close();
    }
  });

  it('no inspector there: stop() returns within its bound and warns once what was lost', async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    await new Promise((resolve) => server.close(resolve)); // a port nobody listens on now
    const started = Date.now();
    await runScript(`ws://127.0.0.1:${port}`);
    expect(Date.now() - started).toBeLessThan(30 * STOP_FLUSH_MS); // bounded, not hung
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on next tick
    expect(warnings, warnings.join('\n')).toHaveLength(2);
    expect(warnings[0]).toBe(
      `the inspector at ws://127.0.0.1:${port} cannot be reached (is \`rolebox inspect\` running?); retrying every second`,
    );
    expect(warnings[1]).toMatch(
      new RegExp(
        `^the inspector at ws://127\\.0\\.0\\.1:${port} was not reached before the rolebox stopped: \\d+ frame\\(s\\) not delivered$`,
      ),
    );
  });
});
