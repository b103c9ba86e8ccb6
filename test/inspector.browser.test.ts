import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CliProcess, startCli } from './support/cli.js';
import { startDemoInBrowser, stopDemoInBrowser } from './support/demo-in-browser.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const OUTPUT = join(import.meta.dirname, '..', 'test-output');

describe('the inspector page in a real browser, on a running demo', () => {
  let demo: CliProcess;
  let browser: Browser;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    // Slow rounds: the loop is still running while the page is looked at.
    ({ demo, browser, url, dir } = await startDemoInBrowser('rolebox-browser-', 5));
  });

  afterAll(() => stopDemoInBrowser({ demo, browser, dir }));

  it('draws the loop and the approval function, and a click on `answer` completes the function', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const foreign: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(new URL(url).origin) && !request.url().startsWith('ws://'))
        foreign.push(request.url());
    });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(url);
    await page.locator('#connection[data-connection="open"]').waitFor();

    // The actor tree: the system, the sessions under it, their functions and loop.
    const loop = page.locator('[data-actor^="loop:"]').first();
    await loop.waitFor();
    // Shards are bookkeeping: sessions are shown right under the system actor.
    expect(await page.locator('#tree [data-actor^="shard:"]').count()).toBe(0);
    expect(
      await page
        .locator('#tree > li > span[data-actor="rolebox"] + ul > li > span')
        .first()
        .getAttribute('data-actor'),
    ).toMatch(/^session:/);
    await loop.click();
    await page.locator('#chart .state-node[data-state-key="awaiting_worker"]').waitFor();
    const loopStates = await page
      .locator('#chart .state-node')
      .evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-state-key')));
    expect(loopStates).toEqual(
      expect.arrayContaining([
        'activating',
        'dispatching',
        'awaiting_worker',
        'summarizing',
        'checking',
        'finalizing',
        'complete',
        'cancelled',
        'error',
      ]),
    );
    expect(await page.locator('#chart .edge').count()).toBeGreaterThan(10);
    expect(await page.locator('#chart .state-node[data-active="true"]').count()).toBeGreaterThan(0);
    await mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'inspector-loop.png') });

    const approval = page.locator('[data-actor="fn:approval:awaiting-approval"]');
    await approval.click();
    const gated = page.locator('#chart .state-node[data-state-key="gated"]');
    await gated.waitFor();
    expect(
      await page
        .locator('#chart .state-node')
        .evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-state-key'))),
    ).toEqual(expect.arrayContaining(['active', 'gated', 'complete']));
    expect(await gated.getAttribute('data-active')).toBe('true');
    expect(
      await page.locator('#chart .edge[data-event^="answer"], #chart .edge text').allTextContents(),
    ).not.toHaveLength(0);

    await page.locator('#signal-buttons button[data-send="answer"]').click();
    await page.locator('#command-status', { hasText: 'sent' }).waitFor();
    await page
      .locator('#chart .state-node[data-state-key="complete"][data-active="true"]')
      .waitFor();
    expect(await gated.getAttribute('data-active')).toBe('false');
    await expect.poll(() => approval.textContent()).toContain('complete');
    await demo.line(
      /from the inspector → fn:approval:awaiting-approval \{"kind":"signal","type":"answer"\}/,
    );
    await demo.line(/approval: awaiting-approval complete/);
    // The demo says what came from the page before what it caused.
    const told = demo.stderr().indexOf('from the inspector → fn:approval:awaiting-approval');
    const recorded = demo.stderr().indexOf('approval: signal answer recorded');
    expect(told).toBeGreaterThanOrEqual(0);
    expect(recorded).toBeGreaterThan(told);

    // The event log shows the signal that came from the page.
    await page.locator('#log tbody tr', { hasText: 'session.signal' }).first().waitFor();

    await page.screenshot({ path: join(OUTPUT, 'inspector-demo.png'), fullPage: true });
    expect(existsSync(join(OUTPUT, 'inspector-demo.png'))).toBe(true);
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('tells two apps with the same names apart: a click reaches only the app that owns the actor', async () => {
    // A second demo streaming to the first one's inspector: the same session and function names.
    const second = startCli(
      ['demo', '--inspect', `ws://${new URL(url).host}`, '--round-seconds', '5'],
      {
        cwd: dir,
      },
    );
    try {
      await second.line(/^streaming to the inspector at ws:/);
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      await page.goto(url);
      const theirs = page.locator('[data-app="2"][data-actor="fn:approval:awaiting-approval"]');
      await theirs.waitFor();
      expect(await page.locator('#tree .app').allTextContents()).toEqual([
        expect.stringMatching(/^app 1 · rolebox demo \(pid \d+\)$/),
        expect.stringMatching(/^app 2 · rolebox demo \(pid \d+\)$/),
      ]);
      await theirs.click();
      await page
        .locator('#chart .state-node[data-state-key="gated"][data-active="true"]')
        .waitFor();
      await page.locator('#signal-buttons button[data-send="answer"]').click();
      await page.locator('#command-status', { hasText: 'sent' }).waitFor();
      await second.line(/from the inspector → fn:approval:awaiting-approval/);
      await second.line(/approval: awaiting-approval complete/);
      // The first demo got only the click of the first test, none of this one.
      expect(demo.stderr().match(/from the inspector → /g)).toHaveLength(1);
      await page.screenshot({ path: join(OUTPUT, 'inspector-two-apps.png'), fullPage: true });
      await page.close();
    } finally {
      second.process.kill('SIGINT');
      await second.exited;
    }
  });

  it('lets no other web page drive the demo: its origin is refused, with the token or without', async () => {
    const { host, search } = new URL(url);
    // Another page on this machine, as any site the user opens would be.
    const elsewhere = createServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'text/html' }).end('<title>elsewhere</title>'),
    );
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/`);
      const tryOpen = (target: string) =>
        page.evaluate(
          (target) =>
            new Promise<string>((resolve) => {
              const socket = new WebSocket(target);
              socket.onopen = () => resolve('open');
              socket.onclose = () => resolve('refused');
            }),
          target,
        );
      expect(await tryOpen(`ws://${host}/ui${search}`)).toBe('refused');
      expect(await tryOpen(`ws://${host}/ui`)).toBe('refused');
      // Nor can it pose as an app and inject actors.
      expect(await tryOpen(`ws://${host}/`)).toBe('refused');
      await demo.line(/» inspector: refused a connection: app from browser origin/);

      // The inspector's own page without its token says what to open.
      await page.goto(new URL('/', url).href);
      await page
        .locator('#connection', { hasText: 'no token: open the URL the inspector printed' })
        .waitFor();
      await page.goto(new URL('/?token=not-the-token', url).href);
      await page.locator('#connection', { hasText: 'refused or not running' }).waitFor();
      expect(await page.locator('[data-actor]').count()).toBe(0);
      await page.close();
    } finally {
      elsewhere.close();
    }
  });
});
