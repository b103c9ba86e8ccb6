// The inspector page in a real browser shows a session's pending effects with their status
// and attempts (issue 24 item 6): `rolebox inspect --store` on a store whose sessions hold
// some, and no effects panel for an actor that has no outbox.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium } from './support/chromium.js';
import { type CliProcess, startCli } from './support/cli.js';
import { writeStoreWithEffects } from './support/effects-store.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

let dir: string;
let browser: Browser;
let cli: CliProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-effects-page-'));
  browser = await launchChromium();
});

afterEach(async () => {
  cli?.process.kill('SIGINT');
  if (cli) await Promise.race([cli.exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  cli = undefined;
  await killTracked();
});

afterAll(async () => {
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the inspector page: pending effects', () => {
  it("shows a session's pending effects with status and attempts, and hides the panel for other actors", async () => {
    const store = join(dir, 'effects.db');
    await writeStoreWithEffects(store);
    cli = startCli(['inspect', '--port', '0', '--store', store], { cwd: dir });
    const url = (await cli.line(/^inspector: /)).slice('inspector: '.length);
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(url);
    await page.locator('#connection[data-connection="open"]').waitFor();

    const rowsOf = () =>
      page
        .locator('#effects tbody tr')
        .evaluateAll((rows) =>
          rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)),
        );
    await page.locator('#tree [data-actor="session:down"]').click();
    await page.locator('#effects-panel').waitFor({ state: 'visible' });
    await expect
      .poll(rowsOf)
      .toEqual([
        [
          expect.stringMatching(/^down:[0-9a-z]{12}:e1$/),
          'invoke_main_agent',
          'pending (next 1970-01-01T00:01:01.000Z)',
          '1',
          expect.stringContaining('model down'),
        ],
      ]);

    await page.locator('#tree [data-actor="session:poet"]').click();
    await expect
      .poll(rowsOf)
      .toEqual([
        [expect.stringMatching(/^poet:[0-9a-z]{12}:e2$/), 'run_worker', 'pending', '0', ''],
      ]);

    // A function has no outbox: no effects panel.
    await page.locator('#tree [data-actor="fn:poet:note"]').click();
    await expect.poll(() => page.locator('#effects-panel').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });
});
