// The inspector page's approvals panel in a real browser (issue 25 item 5), on the demo: the
// approval session's open request with Approve / Reject, a rejection without a reason refused
// on the page, and a click on Approve round-tripping to rolebox, which records who approved
// with the note; the row then shows it answered and the buttons are gone.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CliProcess } from './support/cli.js';
import { startDemoInBrowser, stopDemoInBrowser } from './support/demo-in-browser.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { publishScreenshot } from './support/screenshots.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const OUTPUT = join(import.meta.dirname, '..', 'test-output');

describe('the inspector page: approvals', () => {
  let demo: CliProcess;
  let browser: Browser;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    ({ demo, browser, url, dir } = await startDemoInBrowser('rolebox-approvals-page-', 5));
  });

  afterAll(() => stopDemoInBrowser({ demo, browser, dir }));

  it('approves the open request with a click, and shows who and the note', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(url);
    await page.locator('#connection[data-connection="open"]').waitFor();

    await page.locator('#tree [data-actor="session:approval"]').click();
    await page.locator('#approvals-panel').waitFor({ state: 'visible' });
    const row = page.locator('#approvals li[data-request="awaiting-approval:r1"]');
    await row.waitFor();
    expect(await row.getAttribute('data-status')).toBe('open');
    const cells = () =>
      row.evaluate((item) =>
        ['id', 'status', 'asked', 'opened', 'resolved', 'who', 'actions'].map(
          (name) => item.querySelector(`.${name}`)?.textContent ?? null,
        ),
      );
    expect(await cells()).toEqual([
      'awaiting-approval:r1',
      'open',
      'deploys to production',
      expect.stringMatching(/^opened \d{4}-\d\d-\d\dT/),
      null,
      null,
      'ApproveReject',
    ]);
    expect(await page.locator('#approvals-summary').textContent()).toBe('1 open, 0 resolved');

    // A rejection needs a reason: refused on the page, nothing sent.
    await row.locator('button[data-approval="reject"]').click();
    await page.locator('#command-status.error', { hasText: 'type a reason first' }).waitFor();
    expect(await row.getAttribute('data-status')).toBe('open');

    await page.locator('#approval-by').fill('ana');
    await page.locator('#approval-note').fill('prod window is open');
    await mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'inspector-approvals-open.png') });
    await row.locator('button[data-approval="approve"]').click();
    await page.locator('#command-status.ok', { hasText: 'sent' }).waitFor();
    await expect.poll(() => row.getAttribute('data-status')).toBe('answered');
    await expect.poll(cells).toEqual([
      'awaiting-approval:r1',
      'answered',
      'deploys to production',
      expect.stringMatching(/^opened \d{4}-\d\d-\d\dT/),
      // The page's Approve runs session.approve: the host's approval.
      expect.stringMatching(/^ · answered by host \d{4}-\d\d-\d\dT/),
      ' · ana: prod window is open',
      null,
    ]);
    expect(await page.locator('#approvals-summary').textContent()).toBe('0 open, 1 resolved');
    // Rolebox ran it as session.approve: the demo prints what came from the page.
    await demo.line(
      /from the inspector → fn:approval:awaiting-approval \{"kind":"approve","requestId":"awaiting-approval:r1","by":"ana","note":"prod window is open","seenVersion":\d+\}/,
    );
    await page.screenshot({ path: join(OUTPUT, 'inspector-approvals.png') });
    await publishScreenshot(
      join(OUTPUT, 'inspector-approvals-open.png'),
      'inspector-approvals.png',
    );

    // Another actor with no requests: no panel.
    await page.locator('#tree [data-actor="session:review"]').click();
    await expect.poll(() => page.locator('#approvals-panel').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });
});
