// A port another process holds, as a new user meets it: `rolebox inspect --port N` says so
// and exits 2; `demo` (what `npm start` runs), which promises a free port, takes one and
// says which. Each test occupies the port with a real listener first.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startInspectorServer } from '../inspector/server.js';
import { listenError } from '../src/base/listen-error.js';
import { startInspectorServerOnFreePort } from '../src/cli/inspector-option.js';
import { isRoleboxError } from '../src/errors.js';
import { runCli, startCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

let dir: string;
const listeners: Server[] = [];

/** A real listener on a port of 127.0.0.1 the OS picked: that port is taken while it lives. */
async function takenPort(): Promise<number> {
  const server = createServer();
  listeners.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-cli-ports-'));
});

afterEach(async () => {
  await killTracked();
  await Promise.all(
    listeners
      .splice(0)
      .map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
  );
  await rm(dir, { recursive: true, force: true });
});

/** True when the text holds a line of a stack trace. */
const hasStack = (text: string) => /^\s+at /m.test(text);

describe('a port in use', () => {
  it('startInspectorServer throws port_in_use naming the port and the address, and the fallback takes a free port', async () => {
    const port = await takenPort();
    const error = await startInspectorServer({ port, log: () => {} }).catch((e: unknown) => e);
    expect(isRoleboxError(error, 'port_in_use')).toBe(true);
    expect((error as Error).message).toBe(`port ${port} is in use on 127.0.0.1`);
    expect((error as { details: unknown }).details).toEqual({ host: '127.0.0.1', port });

    const started = await startInspectorServerOnFreePort(port);
    try {
      expect(started.portInUse).toBe(port);
      expect(started.server.port).not.toBe(port);
      expect((await fetch(started.server.url)).status).toBe(200);
    } finally {
      await started.server.stop();
    }
  });

  it('listenError names an address this machine cannot listen on, and leaves other errors alone', () => {
    const denied = listenError(
      Object.assign(new Error('listen EACCES'), { code: 'EACCES' }),
      '0.0.0.0',
      80,
    );
    expect(isRoleboxError(denied, 'invalid_argument')).toBe(true);
    expect((denied as Error).message).toBe(
      'cannot listen on "0.0.0.0" port 80: permission denied (ports below 1024 need privileges)',
    );
    const other = new Error('something else');
    expect(listenError(other, '127.0.0.1', 1)).toBe(other);
    // A code that is a name on Object.prototype is no listen failure either.
    const odd = Object.assign(new Error('x'), { code: 'constructor' });
    expect(listenError(odd, 'h', 1)).toBe(odd);
  });

  it('rolebox inspect --port <taken>: "rolebox: port N is in use", exit 2, no stack', async () => {
    const port = await takenPort();
    const result = await runCli(['inspect', '--port', String(port)], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(
        `^rolebox: port ${port} is in use on 127\\.0\\.0\\.1; pass another --port, or --port 0 for any free one \\[port_in_use\\]$`,
        'm',
      ),
    );
    expect(hasStack(result.stderr)).toBe(false);
    expect(result.stdout).toBe('');
  });

  it('rolebox inspect --host <an address of no interface here>: a message, exit 2, no stack', async () => {
    const result = await runCli(['inspect', '--port', '0', '--host', '192.0.2.1'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^rolebox: cannot listen on "192\.0\.2\.1" port 0: no interface of this machine has that address \[invalid_argument\]$/m,
    );
    expect(hasStack(result.stderr)).toBe(false);
  });

  it('rolebox demo --port <taken> (what npm start runs) takes a free port and says so', async () => {
    const port = await takenPort();
    const child = startCli(['demo', '--port', String(port), '--round-seconds', '0'], { cwd: dir });
    await child.line(
      new RegExp(`^» port ${port} is in use; the inspector listens on port \\d+ instead$`),
    );
    const url = (await child.line(/^inspector: /)).slice('inspector: '.length);
    expect(new URL(url).port).not.toBe(String(port));
    expect((await fetch(url)).status).toBe(200);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
    expect(hasStack(child.stderr())).toBe(false);
  });

  it('rolebox demo --json --port <taken>: the listening line says which port was in use', async () => {
    const port = await takenPort();
    const child = startCli(['demo', '--json', '--port', String(port), '--round-seconds', '0'], {
      cwd: dir,
    });
    const listening = JSON.parse(await child.line(/^\{"type":"listening"/));
    expect(listening).toEqual({
      type: 'listening',
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/),
      wsUrl: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+$/),
      port: expect.any(Number),
      portInUse: port,
    });
    expect(listening.port).not.toBe(port);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
  });

  it('rolebox restate serve --port <taken>: "rolebox: port N is in use", exit 2, no stack', async () => {
    const port = await takenPort();
    const result = await runCli(['restate', 'serve', '--port', String(port)], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(`^rolebox: port ${port} is in use on 127\\.0\\.0\\.1 \\[port_in_use\\]$`, 'm'),
    );
    expect(hasStack(result.stderr)).toBe(false);
  });

  it('rolebox restate serve --processes 2 --port <taken>: stops with exit 2 instead of starting endpoint processes for ever', async () => {
    const port = await takenPort();
    const result = await runCli(['restate', 'serve', '--processes', '2', '--port', String(port)], {
      cwd: dir,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(`^rolebox: port ${port} is in use on 127\\.0\\.0\\.1`, 'm'),
    );
    expect(result.stderr).not.toContain('starting another');
  });
});
