// The root entry `rolebox` in a browser: it bundles without a Node built-in, and in a real
// page (headless Chromium) it runs the approval workflow and streams its actors to Stately's
// browser inspector — a receiver page of @statelyai/inspect in an iframe, served on localhost.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bundleForBrowser } from './support/browser-bundle.js';
import { launchChromium } from './support/chromium.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const REPO = join(import.meta.dirname, '..');

describe('rolebox bundled for a browser', () => {
  it.each(['rolebox', 'rolebox/machines', 'rolebox/pipeline'])(
    '%s imports no Node built-in',
    async (entry) => {
      const bundle = await bundleForBrowser(`export * from '${entry}';`);
      expect(bundle.nodeBuiltins).toEqual([]);
      expect(bundle.code.length).toBeGreaterThan(10_000);
      // Nor a Node global a bundler does not see (host-process.ts guards the ones it needs).
      const globals = [];
      for (const file of bundle.inputs.filter((name) => !name.endsWith('host-process.ts'))) {
        const code = (await readFile(join(REPO, file), 'utf8'))
          .replace(/\/\*[\s\S]*?\*\//g, '')
          .replace(/\/\/.*$/gm, '');
        for (const match of code.matchAll(
          /(?<![-\w/.])(?:Buffer\.\w+|__dirname|__filename|require\(['"`]|process\.\w+)/g,
        ))
          globals.push(`${file}: ${match[0]}`);
      }
      expect(globals).toEqual([]);
    },
  );

  it('the check finds a built-in when one is imported (rolebox/node is Node-only)', async () => {
    const bundle = await bundleForBrowser(`export * from 'rolebox/node';`);
    expect(bundle.nodeBuiltins).toEqual(
      expect.arrayContaining([expect.stringMatching(/^node:child_process \(imported by src\//)]),
    );
  });
});

/** The app: the README's approval workflow, inspected by Stately's inspector in an iframe. */
const APP = `
import { createRolebox, defineFunction } from 'rolebox';

const iframe = document.createElement('iframe');
document.body.append(iframe);
const answered = 'signal_observed(answer)';
const approval = defineFunction({ name: 'approval', gate: answered, continue_until: answered });
const rb = createRolebox({
  functions: [approval],
  inspect: { stately: { url: location.origin + '/receiver.html', iframe } },
});
await rb.start();
const session = await rb.openSession({ id: 'ticket-7' });
session.activate('approval');
const texts = [
  session.tool('|signal| type=need_approval, payload={"reason": "prod"}').text,
  session.tool('|signal| type=answer, payload={"approved": true}').text,
];
window.result = { texts, completed: session.idle().completed };
`;

/** The inspector side: what @statelyai/inspect's browser receiver is given. */
const RECEIVER = `
import { createBrowserReceiver } from '@statelyai/inspect';

window.received = [];
createBrowserReceiver().subscribe((event) => window.received.push(event));
`;

describe("inspect: { stately } in a real page (Stately's browser inspector)", () => {
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    const [app, receiver] = await Promise.all([bundleForBrowser(APP), bundleForBrowser(RECEIVER)]);
    expect(app.nodeBuiltins).toEqual([]);
    const pages: Record<string, string> = {
      '/app.html': '<!doctype html><body><script type="module" src="/app.js"></script></body>',
      '/app.js': app.code,
      '/receiver.html':
        '<!doctype html><body><script type="module" src="/receiver.js"></script></body>',
      '/receiver.js': receiver.code,
    };
    server = createServer((request, response) => {
      if (request.url === '/favicon.ico') return void response.writeHead(204).end();
      const body = pages[request.url ?? ''];
      if (body === undefined) return void response.writeHead(404).end();
      const type = request.url?.endsWith('.js') ? 'text/javascript' : 'text/html';
      response.writeHead(200, { 'content-type': type }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('runs the approval workflow in the page and the receiver sees the function complete', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const foreign: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(origin)) foreign.push(request.url());
    });
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(`${origin}/app.html`);
    await page
      .waitForFunction(() => (globalThis as { result?: unknown }).result !== undefined)
      .catch((error: Error) => {
        throw new Error(`${error.message}; page errors: ${errors.join(' | ')}`);
      });
    expect(await page.evaluate(() => (globalThis as { result?: unknown }).result)).toEqual({
      texts: [
        'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request approval:r1',
        'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition, answered approval:r1',
      ],
      completed: ['approval'],
    });

    const frame = page.frames().find((candidate) => candidate.url().endsWith('/receiver.html'));
    if (frame === undefined) throw new Error('the inspector iframe was not loaded');
    // The receiver has the function's actor, its definition, and its snapshots up to complete.
    await frame.waitForFunction(() =>
      (
        globalThis as { received?: { type: string; snapshot?: { value?: unknown } }[] }
      ).received?.some(
        (event) => event.type === '@xstate.snapshot' && event.snapshot?.value === 'complete',
      ),
    );
    const seen = await frame.evaluate(() => {
      const events = (
        globalThis as unknown as {
          received: {
            type: string;
            sessionId: string;
            definition?: string;
            snapshot?: { value?: unknown };
            event?: { type?: string };
          }[];
        }
      ).received;
      const actors = events.filter((event) => event.type === '@xstate.actor');
      const fn = actors.find((event) => /"id":"function"/.test(event.definition ?? ''));
      return {
        types: [...new Set(events.map((event) => event.type))].sort(),
        sawRoot: actors.length > 0,
        functionValues: events
          .filter((event) => event.type === '@xstate.snapshot' && event.sessionId === fn?.sessionId)
          .map((event) => event.snapshot?.value),
        signals: events
          .filter((event) => event.type === '@xstate.event')
          .map((event) => event.event?.type)
          .filter((type) => type === 'SIGNAL'),
      };
    });
    expect(seen.types).toEqual(['@xstate.actor', '@xstate.event', '@xstate.snapshot']);
    expect(seen.sawRoot).toBe(true);
    expect(seen.functionValues).toEqual(expect.arrayContaining(['gated', 'complete']));
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
  });
});
