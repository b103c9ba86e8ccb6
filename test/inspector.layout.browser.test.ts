// The inspector page at a laptop's 1280×720 and at 1440×900, measured by DOM geometry on a
// running demo (issue 27 items 8, 9, 11, 13): no label wider than its box, `fit` that does
// something and shows the whole chart, the active state inside the panel, a finished loop
// offering no commands, and a first view that says what to do.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CliProcess } from './support/cli.js';
import { startDemoInBrowser, stopDemoInBrowser } from './support/demo-in-browser.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const OUTPUT = join(import.meta.dirname, '..', 'test-output');

/**
 * The page's text boxes whose content is wider than the box (scrollWidth > clientWidth), and
 * the panels that overflow sideways. Run in the page (a string: the tests have no DOM types).
 */
const CLIPPED_LABELS = `(() => {
  const selectors = ['#tree .actor', '#tree .app', '#tree summary', '#pipeline-runs li',
    '#pipeline-runs .run', '#chart-title', '#replay-position', '#replay-divergence',
    '#source-note', '#controls-note', '#command-status', '#travel-text', '#tree-panel',
    '#side-panel', '#chart-header'];
  const clipped = [];
  for (const selector of selectors)
    for (const element of document.querySelectorAll(selector)) {
      if (element.offsetParent === null) continue; // not shown
      if (element.scrollWidth > element.clientWidth)
        clipped.push(selector + ' "' + element.textContent.trim().slice(0, 60) + '" ' +
          element.scrollWidth + ' > ' + element.clientWidth);
    }
  return clipped;
})()`;

/**
 * The chart's state labels that do not lie inside their box with 4 px to spare, in chart
 * coordinates; a leaf's label measured bold, as it is drawn when active.
 */
const CHART_LABELS_OUTSIDE = `(() => {
  const outside = [];
  for (const node of document.querySelectorAll('#chart .state-node')) {
    const rect = node.querySelector(':scope > rect');
    const text = node.querySelector(':scope > text');
    if (node.classList.contains('atomic')) text.style.fontWeight = '700';
    const label = text.getBBox();
    text.style.fontWeight = '';
    const x = Number(rect.getAttribute('x'));
    const y = Number(rect.getAttribute('y'));
    const width = Number(rect.getAttribute('width'));
    const height = Number(rect.getAttribute('height'));
    if (label.x < x + 4 || label.x + label.width > x + width - 4 || label.y < y ||
        label.y + label.height > y + height)
      outside.push(node.dataset.stateId + ': label ' + Math.round(label.width) + ' px in a ' +
        width + ' px box');
  }
  return outside;
})()`;

/** The number of the given boxes that lie outside the chart panel as drawn on screen. */
const outsideChart = (selector: string) => `(() => {
  const panel = document.getElementById('chart').getBoundingClientRect();
  return [...document.querySelectorAll(${JSON.stringify(selector)})].filter((element) => {
    const box = element.getBoundingClientRect();
    return box.left < panel.left - 0.5 || box.right > panel.right + 0.5 ||
      box.top < panel.top - 0.5 || box.bottom > panel.bottom + 0.5;
  }).length;
})()`;

/** The smallest on-screen height of a state label. */
const SMALLEST_LABEL = `Math.min(...[...document.querySelectorAll('#chart .state-node > text')]
  .map((text) => text.getBoundingClientRect().height))`;

const ACTIVE_LEAVES = '#chart .state-node.active.atomic > rect';

async function activeLeavesInside(page: Page): Promise<boolean> {
  const count = await page.locator(ACTIVE_LEAVES).count();
  return count > 0 && (await page.evaluate<number>(outsideChart(ACTIVE_LEAVES))) === 0;
}

function viewTransform(page: Page): Promise<string | null> {
  return page.locator('#chart-view').getAttribute('transform');
}

/** Selects the first actor whose name starts with `prefix` (opening its "finished" group). */
async function select(page: Page, prefix: string): Promise<void> {
  const label = page.locator(`#tree [data-actor^="${prefix}"]`).first();
  await label.evaluate((element) => {
    const group = element.closest('details');
    if (group && !group.open) group.querySelector('summary')?.click();
  });
  await label.click();
  await page.locator('#chart .state-node').first().waitFor();
  await expect.poll(() => page.locator('#chart-title').textContent()).toContain(prefix);
  await expect.poll(() => activeLeavesInside(page)).toBe(true);
}

/** Clicks `fit` and waits for the view to settle on the next frame. */
async function pressFit(page: Page): Promise<string | null> {
  await page.locator('#chart-fit').click();
  await page.evaluate('new Promise((resolve) => requestAnimationFrame(resolve))');
  return viewTransform(page);
}

describe('the inspector page at 1280×720 and 1440×900, on a running demo', () => {
  let demo: CliProcess;
  let browser: Browser;
  let url: string;
  let dir: string;
  let page: Page | undefined;

  beforeAll(async () => {
    // Rounds of 1 s: the writer's loop of 3 rounds finishes while the page is looked at.
    ({ demo, browser, url, dir } = await startDemoInBrowser('rolebox-layout-', 1));
    await mkdir(OUTPUT, { recursive: true });
  });

  afterEach(async () => {
    await page?.close();
    page = undefined;
  });

  afterAll(() => stopDemoInBrowser({ demo, browser, dir }));

  for (const [width, height] of [
    [1280, 720],
    [1440, 900],
  ] as const) {
    const tag = `${width}x${height}`;

    it(`clips no label, and fit shows the active state and then the whole chart, at ${tag}`, async () => {
      page = await browser.newPage({ viewport: { width, height } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(url);
      // The first view says what to do.
      expect(await page.locator('#chart-hint').textContent()).toContain(
        'Click an actor in the tree',
      );
      await page.locator('#tree [data-actor="fn:approval:awaiting-approval"]').waitFor();
      await page.locator('#pipeline-runs .run').first().waitFor({ timeout: 30_000 });
      expect(await page.evaluate<string[]>(CLIPPED_LABELS)).toEqual([]);
      // A session's artifact store is in the tree, as the README says, without "show helpers".
      await page.locator('#tree [data-actor="artifacts:review"]').waitFor();
      expect(await page.locator('#tree-helpers').isChecked()).toBe(false);
      // A payload opened on the last row of the log is scrolled into view.
      await page.locator('#log-panel').evaluate((panel) => {
        panel.scrollTop = panel.scrollHeight;
      });
      await page.locator('#log tr.event-row').last().locator('.payload-toggle').click();
      const payload = page.locator('#log .payload-row').last();
      await payload.waitFor();
      await expect
        .poll(async () => {
          const shown = await page?.locator('#log-panel').boundingBox();
          const box = await payload.boundingBox();
          return !!shown && !!box && box.y + box.height <= shown.y + shown.height + 0.5;
        })
        .toBe(true);

      for (const actor of ['loop:', 'session:approval', 'fn:approval:awaiting-approval']) {
        await select(page, actor);
        expect(await page.evaluate<string[]>(CLIPPED_LABELS)).toEqual([]);
        expect(await page.evaluate<string[]>(CHART_LABELS_OUTSIDE)).toEqual([]);
        expect(await page.evaluate<number>(SMALLEST_LABEL)).toBeGreaterThanOrEqual(10);
        // The function's chart is small enough to be seen whole, readable, from the start.
        if (actor.startsWith('fn:'))
          expect(await page.evaluate<number>(outsideChart('#chart .state-node > rect'))).toBe(0);
        const first = await viewTransform(page);
        const whole = await pressFit(page);
        // `fit` does something unless the whole chart was in view already…
        const allShown =
          (await page.evaluate<number>(outsideChart('#chart .state-node > rect'))) === 0;
        expect(whole !== first || allShown, `fit on ${actor} changed nothing`).toBe(true);
        // …and shows the whole chart, the active state in it.
        await expect
          .poll(() => page?.evaluate<number>(outsideChart('#chart .state-node > rect')))
          .toBe(0);
        expect(await activeLeavesInside(page)).toBe(true);
        await page.screenshot({
          path: join(OUTPUT, `inspector-fit-whole-${actor.replace(/:.*/, '')}-${tag}.png`),
        });
        // Pressed again: the active part at a readable scale, the active state still in view.
        await pressFit(page);
        expect(await page.evaluate<number>(SMALLEST_LABEL)).toBeGreaterThanOrEqual(10);
        await expect.poll(() => activeLeavesInside(page as Page)).toBe(true);
      }
      await page.screenshot({ path: join(OUTPUT, `inspector-layout-${tag}.png`) });
      expect(errors).toEqual([]);
    });

    it(`a finished loop offers no commands, and an empty message is not sent, at ${tag}`, async () => {
      page = await browser.newPage({ viewport: { width, height } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(url);
      // An empty message is refused in the page, before anything is sent.
      await select(page, 'session:review');
      await page.locator('#message-text').fill('   ');
      await page.locator('#send-message').click();
      expect(await page.locator('#command-status').textContent()).toBe(
        'type a message first: an empty one is not sent',
      );
      // The loop of 3 rounds of 1 s finishes: it sits in its session's "finished" group.
      const loop = page.locator('#tree .actor.finished[data-actor^="loop:"]');
      await loop.waitFor({ state: 'attached', timeout: 60_000 });
      await select(page, 'loop:');
      await page.locator('#controls-note').waitFor();
      expect(await page.locator('#controls-note').textContent()).toMatch(
        /^loop:\S+ has finished \(complete\): it takes no commands$/,
      );
      expect(await page.locator('#signal-buttons button').filter({ visible: true }).count()).toBe(
        0,
      );
      expect(await page.locator('#command-inputs').isHidden()).toBe(true);
      expect(await page.evaluate<string[]>(CLIPPED_LABELS)).toEqual([]);
      // A live actor offers them again.
      await select(page, 'session:writer');
      await page.locator('#signal-buttons button[data-send="idle"]').waitFor();
      expect(await page.locator('#controls-note').isHidden()).toBe(true);
      expect(errors).toEqual([]);
    });
  }
});
