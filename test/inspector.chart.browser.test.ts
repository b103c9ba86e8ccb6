import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CliProcess } from './support/cli.js';
import { startDemoInBrowser, stopDemoInBrowser } from './support/demo-in-browser.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { publishScreenshot } from './support/screenshots.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const OUTPUT = join(import.meta.dirname, '..', 'test-output');

/** Whether every active leaf's box lies inside the chart panel, as the browser draws them. */
async function activeInsidePanel(page: Page): Promise<boolean> {
  const panel = await page.locator('#chart').boundingBox();
  const leaves = await page
    .locator('#chart .state-node.active.atomic > rect')
    .evaluateAll((rects) => rects.map((rect) => rect.getBoundingClientRect().toJSON()));
  if (!panel || leaves.length === 0) return false;
  return leaves.every(
    (box: { left: number; right: number; top: number; bottom: number }) =>
      box.left >= panel.x &&
      box.right <= panel.x + panel.width &&
      box.top >= panel.y &&
      box.bottom <= panel.y + panel.height,
  );
}

/** The smallest on-screen height of a state label. */
function smallestLabel(page: Page): Promise<number> {
  return page
    .locator('#chart .state-node > text')
    .evaluateAll((texts) => Math.min(...texts.map((text) => text.getBoundingClientRect().height)));
}

function viewTransform(page: Page): Promise<string | null> {
  return page.locator('#chart-view').getAttribute('transform');
}

async function select(page: Page, actor: string): Promise<void> {
  const label = page.locator(`#tree [data-actor^="${actor}"]`).first();
  // A finished actor (the function after `answer`) sits in its parent's "n finished" group.
  await label.evaluate((element) => {
    const group = element.closest('details');
    if (group && !group.open) group.querySelector('summary')?.click();
  });
  await label.click();
  await page.locator('#chart .state-node.active.atomic').first().waitFor();
  await expect.poll(() => activeInsidePanel(page)).toBe(true);
}

describe('the inspector chart: follow, readable fit, zoom and pan', () => {
  let demo: CliProcess;
  let browser: Browser;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    // Rounds of 3 s: the loop moves while it is looked at, and does so more than once.
    ({ demo, browser, url, dir } = await startDemoInBrowser('rolebox-chart-', 3));
    await mkdir(OUTPUT, { recursive: true });
  });

  afterAll(() => stopDemoInBrowser({ demo, browser, dir }));

  for (const [width, height] of [
    [1280, 720],
    [1440, 900],
  ] as const) {
    it(`keeps the active state in view and readable at ${width}×${height}`, async () => {
      const page = await browser.newPage({ viewport: { width, height } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(url);
      // Attached, not visible: a loop that has finished sits in a folded "finished" group.
      await page.locator('[data-actor^="loop:"]').first().waitFor({ state: 'attached' });
      const tag = `${width}x${height}`;

      // The loop: in view when selected, and again after it moves on.
      await select(page, 'loop:');
      expect(await smallestLabel(page)).toBeGreaterThanOrEqual(10);
      const loopState = await page
        .locator('#chart .state-node.active.atomic')
        .first()
        .getAttribute('data-state-key');
      if (loopState !== 'complete') {
        await expect
          .poll(
            () =>
              page
                .locator('#chart .state-node.active.atomic')
                .first()
                .getAttribute('data-state-key'),
            { timeout: 20_000 },
          )
          .not.toBe(loopState);
        await expect.poll(() => activeInsidePanel(page)).toBe(true);
      }
      await page.screenshot({ path: join(OUTPUT, `inspector-chart-loop-${tag}.png`) });

      // The session chart.
      await select(page, 'session:');
      expect(await smallestLabel(page)).toBeGreaterThanOrEqual(10);
      await page.screenshot({ path: join(OUTPUT, `inspector-chart-session-${tag}.png`) });

      // The function: `answer` completes it (at the first viewport; the second sees it done).
      await select(page, 'fn:approval:awaiting-approval');
      expect(await smallestLabel(page)).toBeGreaterThanOrEqual(10);
      const answer = page.locator('#signal-buttons button[data-send="answer"]');
      if (width === 1280) {
        await answer.click();
        await page.locator('#chart .state-node.final.active[data-state-key="complete"]').waitFor();
        // The edges the transition took are marked: answer from gated, then on to complete.
        await page.locator('#chart .edge.last-edge').first().waitFor();
        expect(
          await page
            .locator('#chart .edge.last-edge')
            .evaluateAll((edges) =>
              edges.map(
                (edge) => `${edge.getAttribute('data-source')}>${edge.getAttribute('data-target')}`,
              ),
            ),
        ).toEqual(expect.arrayContaining(['function.active>function.complete']));
      }
      const complete = page.locator('#chart .state-node[data-state-key="complete"]');
      await expect.poll(() => complete.getAttribute('data-active')).toBe('true');
      await expect.poll(() => activeInsidePanel(page)).toBe(true);
      // A reached final state is drawn as active: solid, thick, coloured.
      const look = await complete.locator('rect').evaluate((rect) => {
        const style = rect.ownerDocument.defaultView?.getComputedStyle(rect);
        if (!style) throw new Error('no window');
        return { width: style.strokeWidth, dash: style.strokeDasharray, stroke: style.stroke };
      });
      expect(Number.parseFloat(look.width)).toBeGreaterThanOrEqual(3);
      expect(look.dash).toBe('none');
      expect(look.stroke).toBe('rgb(46, 204, 113)');
      await page.screenshot({ path: join(OUTPUT, `inspector-chart-function-${tag}.png`) });
      if (width === 1280) {
        await publishScreenshot(
          join(OUTPUT, `inspector-chart-function-${tag}.png`),
          'inspector.png',
        );
        // Export: a standalone SVG (styles inlined) and the CLI's Mermaid text.
        const [svgFile] = await Promise.all([
          page.waitForEvent('download'),
          page.locator('#chart-export-svg').click(),
        ]);
        expect(svgFile.suggestedFilename()).toBe('fn_approval_awaiting-approval.svg');
        const svg = await readFile(await svgFile.path(), 'utf8');
        expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
        expect(svg).toContain('>complete</text>');
        expect(svg).toContain('stroke:rgb(46, 204, 113)');
        expect(svg).not.toContain('transform=');
        await writeFile(join(OUTPUT, 'inspector-chart-export.svg'), svg);
        const [mermaidFile] = await Promise.all([
          page.waitForEvent('download'),
          page.locator('#chart-export-mermaid').click(),
        ]);
        const mermaid = await readFile(await mermaidFile.path(), 'utf8');
        expect(mermaid).toMatch(/^stateDiagram-v2\n/);
        expect(mermaid).toContain('class function,function_complete active');
      }

      // Zoom: the wheel zooms about the cursor, the buttons too; each turns follow off.
      const node = complete.locator('rect');
      const before = await node.boundingBox();
      const transform = await viewTransform(page);
      const chart = await page.locator('#chart').boundingBox();
      if (!before || !chart) throw new Error('no chart drawn');
      await page.mouse.move(chart.x + chart.width / 2, chart.y + chart.height / 2);
      await page.mouse.wheel(0, -300);
      await expect.poll(() => viewTransform(page)).not.toBe(transform);
      const zoomed = await node.boundingBox();
      expect(zoomed?.width).toBeGreaterThan(before.width * 1.2);
      expect(await page.locator('#chart-follow').getAttribute('aria-pressed')).toBe('false');
      const beforeButton = await node.boundingBox();
      await page.locator('#chart-zoom-out').click();
      expect((await node.boundingBox())?.width).toBeLessThan(beforeButton?.width ?? 0);

      // Drag pans: the node moves by the drag.
      const beforeDrag = await node.boundingBox();
      await page.mouse.move(chart.x + 100, chart.y + 100);
      await page.mouse.down();
      await page.mouse.move(chart.x + 180, chart.y + 140, { steps: 4 });
      await page.mouse.up();
      const dragged = await node.boundingBox();
      expect((dragged?.x ?? 0) - (beforeDrag?.x ?? 0)).toBeCloseTo(80, 0);
      expect((dragged?.y ?? 0) - (beforeDrag?.y ?? 0)).toBeCloseTo(40, 0);

      // Keys when the chart has focus: arrows pan, + zooms, 0 fits, f follows again.
      await page.locator('#chart').focus();
      const beforeKey = await viewTransform(page);
      await page.keyboard.press('ArrowLeft');
      expect(await viewTransform(page)).not.toBe(beforeKey);
      await page.keyboard.press('+');
      await page.keyboard.press('0');
      expect(await smallestLabel(page)).toBeGreaterThanOrEqual(10);
      await page.mouse.wheel(0, 2000); // far out, the active state may leave the panel
      await page.keyboard.press('f');
      expect(await page.locator('#chart-follow').getAttribute('aria-pressed')).toBe('true');
      await expect.poll(() => activeInsidePanel(page)).toBe(true);
      // The fit button gives readable text again.
      await page.locator('#chart-fit').click();
      expect(await smallestLabel(page)).toBeGreaterThanOrEqual(10);
      expect(errors).toEqual([]);
      await page.close();
    });
  }
});
