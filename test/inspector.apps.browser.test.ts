// Two apps streaming to one inspector page (issue 27 item 10): the second one's burst of
// events does not push the first one's history out of the event log, every row says whose
// it is, and an app that ran and stopped shows its session instead of folding it away.
// And, in one live app, finished actors fold into "n finished" beside a live one.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type InspectorServer, startInspectorServer } from '../inspector/server.js';
import { createRolebox, defineFunction, type Rolebox } from '../src/index.js';
import { launchChromium } from './support/chromium.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const OUTPUT = join(import.meta.dirname, '..', 'test-output');
/** The rows the page shows per app (inspector/page/state.js). */
const LOG_LIMIT = 400;

/** The event log's rows by the app that reported them, and whether each names its app. */
function rowsByApp(page: Page): Promise<{ app: string; route: string }[]> {
  return page.locator('#log tbody tr.event-row').evaluateAll((rows) =>
    rows.map((row) => ({
      app: row.getAttribute('data-app') ?? '',
      route: row.querySelectorAll('td')[3]?.textContent ?? '',
    })),
  );
}

describe('two apps on one inspector page', () => {
  let server: InspectorServer;
  let browser: Browser;
  let page: Page | undefined;
  const apps: Rolebox[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    await mkdir(OUTPUT, { recursive: true });
  });

  afterEach(async () => {
    await page?.close();
    page = undefined;
    for (const app of apps.splice(0)) await app.stop().catch(() => {});
    await server?.stop();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('folds a finished actor into "1 finished" beside a live one, and shows it when opened', async () => {
    server = await startInspectorServer({ port: 0, log: () => {} });
    const app = createRolebox({
      inspect: { url: server.wsUrl },
      functions: [defineFunction({ name: 'once', continue_until: 'signal_observed(progress)' })],
    });
    apps.push(app);
    await app.start();
    const session = await app.openSession({ id: 'folding' });
    // A live child (the artifact store, spawned with the first artifact) and a finished one.
    session.artifacts.write({ name: 'notes', content: 'x' });
    session.activate('once');
    session.signal({ type: 'progress' });
    session.idle();
    expect(session.view().functions).toEqual([
      expect.objectContaining({ name: 'once', status: 'completed' }),
    ]);
    page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(server.url);
    const group = page.locator('#tree .finished-group');
    await expect.poll(() => group.locator('summary').textContent()).toBe('1 finished');
    const folded = group.locator('[data-actor="fn:folding:once"]');
    expect(await folded.isVisible()).toBe(false);
    expect(await page.locator('#tree [data-actor="artifacts:folding"]').isVisible()).toBe(true);
    await group.locator('summary').click();
    await expect.poll(() => folded.isVisible()).toBe(true);
    expect(errors).toEqual([]);
  });

  for (const [width, height] of [
    [1280, 720],
    [1440, 900],
  ] as const)
    it(`keeps the first app's history when a second one floods the log, at ${width}×${height}`, async () => {
      // A server of its own: each viewport starts with an empty log.
      server = await startInspectorServer({ port: 0, log: () => {} });
      const first = createRolebox({ inspect: { url: server.wsUrl } });
      apps.push(first);
      await first.start();
      await first.openSession({ id: 'first' });
      page = await browser.newPage({ viewport: { width, height } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(server.url);
      await page.locator('#tree [data-actor="session:first"]').waitFor();
      // The first app's rows, once they stop coming.
      let firstRows = 0;
      await expect
        .poll(async () => {
          const before = firstRows;
          firstRows = (await rowsByApp(page as Page)).length;
          return firstRows > 0 && firstRows === before;
        })
        .toBe(true);
      const appOf = (await rowsByApp(page)).map((row) => row.app);
      const firstApp = appOf[0] as string;
      expect(new Set(appOf)).toEqual(new Set([firstApp]));

      // A second app: many sessions, far more rows than the page shows per app.
      const second = createRolebox({ inspect: { url: server.wsUrl } });
      apps.push(second);
      await second.start();
      for (let index = 0; index < 250; index++) await second.openSession({ id: `s${index}` });
      const secondApp = String(Number(firstApp) + 1);
      await expect
        .poll(
          async () => (await rowsByApp(page as Page)).filter((row) => row.app === secondApp).length,
          {
            timeout: 60_000,
          },
        )
        .toBe(LOG_LIMIT);
      const rows = await rowsByApp(page);
      // Every row of the first app is still there, and now says whose it is, as the new ones do.
      expect(rows.filter((row) => row.app === firstApp)).toHaveLength(firstRows);
      for (const row of rows) expect(row.route).toMatch(new RegExp(`^app ${row.app} · `));

      // The second app stops: its actors finished, its sessions are listed, not folded away.
      await second.stop();
      apps.pop();
      const session = page.locator(`#tree [data-app="${secondApp}"][data-actor="session:s0"]`);
      await expect.poll(() => session.isVisible(), { timeout: 30_000 }).toBe(true);
      expect(await page.locator(`#tree .app.gone[data-app="${secondApp}"]`).textContent()).toMatch(
        /· disconnected at \d\d:\d\d:\d\d$/,
      );
      expect(
        await page.locator(`#tree [data-app="${secondApp}"] details:not([open])`).count(),
      ).toBe(0);
      // The first app, still live, is as it was.
      expect(await page.locator('#tree [data-actor="session:first"]').isVisible()).toBe(true);
      await page.screenshot({ path: join(OUTPUT, `inspector-two-apps-${width}x${height}.png`) });
      expect(errors).toEqual([]);
    });
});
