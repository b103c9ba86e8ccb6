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

interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}
/** What the page's code below uses of DOM elements (the tests compile without the DOM lib). */
interface PageElement {
  readonly dataset: Record<string, string | undefined>;
  readonly textContent: string | null;
  readonly hidden: boolean;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement>;
  getBoundingClientRect(): Box;
}
declare const getComputedStyle: (element: PageElement) => { readonly stroke: string };

const overlaps = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

describe('pipeline runs drawn in the inspector page, on a running demo', () => {
  let demo: CliProcess;
  let browser: Browser;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    // Short rounds: the demo's pipeline runs once per completed round.
    ({ demo, browser, url, dir } = await startDemoInBrowser('rolebox-pipeline-browser-', 1));
  });

  afterAll(() => stopDemoInBrowser({ demo, browser, dir }));

  for (const [width, height] of [
    [1280, 720],
    [1440, 900],
  ] as const)
    it(`draws a run's trace as a graph (nodes, statuses, durations), and a click on a node shows its actor's events, at ${width}×${height}`, async () => {
      const page = await browser.newPage({ viewport: { width, height } });
      const tag = `${width}x${height}`;
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(url);
      await page.locator('#connection[data-connection="open"]').waitFor();

      // The demo's release-progress policy runs when a round of the writer's loop completes.
      const run = page.locator('#pipeline-runs .run', { hasText: 'loop.round.completed' }).first();
      await run.waitFor({ timeout: 30_000 });
      expect(await run.textContent()).toMatch(
        /^loop\.round\.completed\d\d:\d\d:\d\d · session:writer · completed · \d+ ms$/,
      );
      // Runs no handler took part in (phase changes) are counted, not listed.
      expect(await page.locator('#pipeline-runs .muted').textContent()).toMatch(
        /^and \d+ run\(s\) not listed: no signal or action took part in them$/,
      );
      await run.click();
      const nodes = page.locator('#pipeline-graph .pipeline-node');
      await nodes.nth(3).waitFor();

      const drawn = await nodes.evaluateAll((elements) =>
        elements.map((element) => {
          const group = element as unknown as PageElement;
          const rect = (group.querySelector('rect') as PageElement).getBoundingClientRect();
          const texts = [...group.querySelectorAll('text')].map((text) => {
            const box = text.getBoundingClientRect();
            return {
              text: text.textContent,
              x: box.x,
              y: box.y,
              width: box.width,
              height: box.height,
            };
          });
          return {
            kind: group.dataset.kind,
            type: group.dataset.type,
            status: group.dataset.status,
            durationMs: group.dataset.durationMs,
            colour: getComputedStyle(group.querySelector('rect') as PageElement).stroke,
            box: { x: rect.x, y: rect.y, width: rect.width, height: rect.height },
            texts,
          };
        }),
      );
      expect(drawn.map(({ kind, type, status }) => ({ kind, type, status }))).toEqual([
        { kind: 'source', type: 'loop.round.completed', status: 'completed' },
        { kind: 'signal', type: 'signal.release.section-drafted', status: 'ok' },
        { kind: 'result', type: 'signal.action.applied', status: 'applied' },
        { kind: 'action', type: 'action.release.announce', status: 'applied' },
      ]);
      for (const node of drawn) {
        // Its duration, as a number, and written on the node.
        expect(node.durationMs).toMatch(/^\d+$/);
        expect(node.texts[1]?.text).toBe(`${node.kind} · ${node.status} · ${node.durationMs} ms`);
        // Green for a run that completed and handlers that succeeded.
        expect(node.colour).toBe('rgb(46, 204, 113)');
        // No label is clipped: each text lies inside its box.
        for (const text of node.texts) {
          expect(text.x).toBeGreaterThanOrEqual(node.box.x);
          expect(text.x + text.width).toBeLessThanOrEqual(node.box.x + node.box.width);
          expect(text.y).toBeGreaterThanOrEqual(node.box.y);
          expect(text.y + text.height).toBeLessThanOrEqual(node.box.y + node.box.height);
          expect(text.height).toBeGreaterThanOrEqual(10);
        }
      }
      // No two nodes overlap, and the chain reads left to right.
      for (const [index, a] of drawn.entries())
        for (const b of drawn.slice(index + 1)) expect(overlaps(a.box, b.box)).toBe(false);
      const xOf = (kind: string) => drawn.find((node) => node.kind === kind)?.box.x as number;
      expect(xOf('source')).toBeLessThan(xOf('signal'));
      expect(xOf('signal')).toBeLessThan(xOf('action'));
      expect(xOf('action')).toBeLessThan(xOf('result'));
      // The graph is in the visible panel.
      const panel = (await page.locator('#chart-panel').boundingBox()) as Box;
      const graphView = (await page.locator('#pipeline-view').boundingBox()) as Box;
      for (const node of drawn) {
        expect(node.box.x).toBeGreaterThanOrEqual(panel.x);
        expect(node.box.x + node.box.width).toBeLessThanOrEqual(panel.x + panel.width);
        // Inside the run's own box too: its last node is not cut off.
        expect(node.box.x).toBeGreaterThanOrEqual(graphView.x);
        expect(node.box.x + node.box.width).toBeLessThanOrEqual(graphView.x + graphView.width);
        expect(node.box.y + node.box.height).toBeLessThanOrEqual(graphView.y + graphView.height);
      }
      await mkdir(OUTPUT, { recursive: true });
      await page.screenshot({ path: join(OUTPUT, `inspector-pipeline-${tag}.png`) });
      if (width === 1280)
        await publishScreenshot(
          join(OUTPUT, `inspector-pipeline-${tag}.png`),
          'inspector-pipeline.png',
        );

      // A click on the source: the loop whose round fed it is selected, the log shows its events.
      await page.locator('#pipeline-graph .pipeline-node[data-kind="source"]').click();
      const selected = page.locator('#tree .actor.selected');
      await selected.waitFor();
      const actor = (await selected.getAttribute('data-actor')) as string;
      expect(actor).toMatch(/^loop:/);
      expect(await page.locator('#pipeline-link').textContent()).toBe(`events of ${actor}`);
      expect(await page.locator('#log-filter').inputValue()).toBe(actor);
      const rows = await page.locator('#log tbody tr').evaluateAll((list) =>
        list.map((row) => ({
          hidden: (row as unknown as PageElement).hidden,
          text: row.textContent ?? '',
        })),
      );
      const visible = rows.filter((row) => !row.hidden);
      expect(visible.length).toBeGreaterThan(0);
      expect(visible.length).toBeLessThan(rows.length);
      for (const row of visible) expect(row.text).toContain(actor);
      // The chart shows the actor, and the graph stays in view above it.
      await page.locator('#chart .state-node[data-state-key="awaiting_worker"]').waitFor();
      await page.evaluate('new Promise((resolve) => requestAnimationFrame(resolve))');
      const view = (await page.locator('#pipeline-view').boundingBox()) as Box;
      const shownPanel = (await page.locator('#chart-panel').boundingBox()) as Box;
      expect(view.x).toBeGreaterThanOrEqual(shownPanel.x);
      expect(view.x + view.width).toBeLessThanOrEqual(shownPanel.x + shownPanel.width);
      expect(view.y).toBeGreaterThanOrEqual(shownPanel.y);
      expect(view.y + view.height).toBeLessThanOrEqual(shownPanel.y + shownPanel.height);
      await page.screenshot({ path: join(OUTPUT, `inspector-pipeline-linked-${tag}.png`) });
      // A signal links to the actor that fed its chain's source (the loop of that round).
      await page.locator('#pipeline-graph .pipeline-node[data-kind="signal"]').click();
      await page.locator('#pipeline-link', { hasText: 'events of loop:' }).waitFor();
      // The graph stays while the chart shows the actor.
      expect(await page.locator('#pipeline-view').isVisible()).toBe(true);
      await page.locator('#pipeline-close').click();
      // Drawn on the next animation frame.
      await page.locator('#pipeline-view').waitFor({ state: 'hidden' });
      expect(errors).toEqual([]);
      await page.close();
    });
});
