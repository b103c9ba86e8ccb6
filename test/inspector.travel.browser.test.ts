import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { type CliProcess, startCli } from './support/cli.js';
import { startDemoInBrowser, stopDemoInBrowser } from './support/demo-in-browser.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { publishScreenshot } from './support/screenshots.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const OUTPUT = join(import.meta.dirname, '..', 'test-output');

interface Entry {
  seq: number;
  app: number;
  sessionId: string;
  type: string;
  snapshot?: { value?: unknown; context?: unknown };
  fork?: { sessionId: string; index: number };
}
interface Actor {
  id: string;
  app: number;
  name: string;
  sessionId: string;
  snapshot?: { value?: unknown; context?: unknown };
}

/** What the server holds now, as a page's first message has it (the per-run token lets us in). */
async function serverView(url: string): Promise<{ actors: Actor[]; events: Entry[] }> {
  const { host, searchParams } = new URL(url);
  const socket = new WebSocket(`ws://${host}/ui?token=${searchParams.get('token')}`);
  try {
    const init = await new Promise<{ actors: Actor[]; events: Entry[] }>((resolve, reject) => {
      socket.once('message', (data) => resolve(JSON.parse(String(data))));
      socket.once('error', reject);
    });
    return init;
  } finally {
    socket.close();
  }
}

/** The key of a state value's first leaf: `{ a: 'b' }` → 'b', 'idle' → 'idle'. */
function leafKey(value: unknown): string {
  if (typeof value === 'string') return value;
  const [key, inner] = Object.entries(value as Record<string, unknown>)[0] ?? ['', undefined];
  return inner === undefined || (typeof inner === 'object' && !Object.keys(inner as object).length)
    ? key
    : leafKey(inner);
}

describe('time travel and fork in the inspector page, on a running demo', () => {
  let demo: CliProcess;
  let browser: Browser;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    ({ demo, browser, url, dir } = await startDemoInBrowser(
      'rolebox-travel-',
      5,
      /Ctrl-C to stop/,
    ));
  });

  afterAll(() => stopDemoInBrowser({ demo, browser, dir }));

  const openPage = async (viewport = { width: 1440, height: 900 }): Promise<Page> => {
    const page = await browser.newPage({ viewport });
    await page.goto(url);
    await page.locator('#connection[data-connection="open"]').waitFor();
    return page;
  };

  /** The review session's events whose snapshot after differs from its live state. */
  async function pastOfReview() {
    let review: Actor | undefined;
    let past: Entry[] = [];
    await expect
      .poll(
        async () => {
          const view = await serverView(url);
          review = view.actors.find((actor) => actor.name === 'session:review');
          past = view.events.filter(
            (entry) =>
              entry.sessionId === review?.sessionId &&
              entry.snapshot !== undefined &&
              entry.fork !== undefined &&
              JSON.stringify(entry.snapshot.value) !== JSON.stringify(review?.snapshot?.value),
          );
          return past.length;
        },
        { timeout: 20_000 },
      )
      .toBeGreaterThan(0);
    return { review: review as Actor, past };
  }

  it('shows the snapshot after a clicked event in the chart, title and context; "live" returns', async () => {
    // At a laptop's size (the other tests use 1440×900).
    const page = await openPage({ width: 1280, height: 720 });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const { review, past } = await pastOfReview();
    const entry = past[0] as Entry;
    const pastKey = leafKey(entry.snapshot?.value);
    const liveKey = leafKey(review.snapshot?.value);
    expect(pastKey).not.toBe(liveKey);

    // Newest first by default: the first row has the highest number.
    const seqs = await page
      .locator('#log tr.event-row')
      .evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-seq'))));
    expect(seqs[0]).toBe(Math.max(...seqs));
    // A row opens to show its payload.
    const row = page.locator(`#log tr.event-row[data-seq="${entry.seq}"]`);
    await row.locator('.payload-toggle').click();
    await expect
      .poll(() => page.locator('#log .payload-row pre').first().textContent())
      .toContain(`"type": "${entry.type}"`);

    await row.click();
    const banner = page.locator('#travel-banner');
    await banner.waitFor();
    expect(await page.locator('#travel-text').textContent()).toContain(
      `viewing past event #${entry.seq}`,
    );
    await page
      .locator(`#chart .state-node[data-state-key="${pastKey}"][data-active="true"]`)
      .waitFor();
    expect(
      await page
        .locator(`#chart .state-node[data-state-key="${liveKey}"]`)
        .first()
        .getAttribute('data-active'),
    ).not.toBe('true');
    expect(await page.locator('#chart-title').textContent()).toContain('session:review');
    // The context shown is the past one: every value in it is on the page.
    const pastContext = await page.locator('#context').textContent();
    const leaves: string[] = [];
    const collect = (value: unknown) => {
      if (value !== null && typeof value === 'object') Object.values(value).forEach(collect);
      else leaves.push(JSON.stringify(value));
    };
    collect(entry.snapshot?.context);
    for (const leaf of leaves) expect(pastContext).toContain(leaf);
    // The banner's text and buttons fit in it.
    expect(await banner.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(
      true,
    );
    await page.screenshot({ path: join(OUTPUT, 'inspector-time-travel.png') });
    await publishScreenshot(join(OUTPUT, 'inspector-time-travel.png'), 'inspector-time-travel.png');

    await page.locator('#travel-live').click();
    await page
      .locator(`#chart .state-node[data-state-key="${liveKey}"][data-active="true"]`)
      .waitFor();
    expect(await banner.isHidden()).toBe(true);
    expect(await page.locator('#context').textContent()).not.toBe(pastContext);
    // Follow: oldest first; the session filter keeps that session's rows only.
    await page.locator('#log-follow').check();
    const followed = await page
      .locator('#log tr.event-row')
      .evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-seq'))));
    expect(followed[0]).toBe(Math.min(...followed));
    await page.locator('#log-session').fill('review');
    const sessions = await page
      .locator('#log tr.event-row:not([hidden])')
      .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session')));
    expect(sessions.length).toBeGreaterThan(3);
    expect(new Set(sessions)).toEqual(new Set(['review']));
    await page.locator('#log-session').fill('');

    // A session's artifact store is shown without "show helpers" (the README lists it in the
    // tree); the demo invokes no other helper actor.
    const stores = (await serverView(url)).actors
      .filter((actor) => actor.app === 1 && actor.name.startsWith('artifacts:'))
      .map((actor) => actor.name);
    expect(stores.length).toBeGreaterThan(0);
    const shownNames = () =>
      page
        .locator('#tree .actor')
        .evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-actor')));
    expect(await page.locator('#tree-helpers').isChecked()).toBe(false);
    await expect
      .poll(async () => (await shownNames()).filter((name) => stores.includes(name as string)))
      .toEqual(expect.arrayContaining(stores));
    await page.locator('#tree-helpers').check();
    // The writer's loop, once finished, is listed under its session as it is (marked
    // finished), not folded: nothing live is beside it (the session writes no artifact, so
    // it has no store; finished actors fold only beside live ones).
    await expect
      .poll(
        () =>
          page
            .locator('#tree [data-actor^="loop:"]')
            .first()
            .evaluate((node) => node.classList.contains('finished')),
        // Three rounds of the demo's worker, a few seconds each.
        { timeout: 30_000 },
      )
      .toBe(true);
    expect(await page.locator('#tree .finished-group').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('"fork here" opens a session whose state is the snapshot after that event', async () => {
    const page = await openPage();
    const { past } = await pastOfReview();
    const entry = past[0] as Entry;
    await page.locator(`#log tr.event-row[data-seq="${entry.seq}"]`).click();
    await page.locator('#travel-fork').waitFor();
    await page.locator('#fork-as').fill('review-fork');
    await page.locator('#travel-fork').click();
    await page.locator('#command-status', { hasText: 'sent' }).waitFor();
    const forked = page.locator('#tree [data-actor="session:review-fork"]');
    await forked.waitFor();
    let fork: Actor | undefined;
    await expect
      .poll(async () => {
        fork = (await serverView(url)).actors.find((a) => a.name === 'session:review-fork');
        return fork !== undefined;
      })
      .toBe(true);
    const renamed = (snapshot: unknown) =>
      JSON.parse(JSON.stringify(snapshot).replaceAll('"review"', '"review-fork"'));
    expect(fork?.snapshot?.value).toEqual(entry.snapshot?.value);
    // A fork is a new incarnation: it numbers its effects under a nonce of its own.
    const { effectNonce, ...forkContext } = (fork?.snapshot?.context ?? {}) as {
      effectNonce?: string;
    };
    const { effectNonce: sourceNonce, ...sourceContext } = renamed(entry.snapshot?.context);
    expect(effectNonce).not.toBe(sourceNonce);
    expect(forkContext).toEqual(sourceContext);
    // The page shows it as such.
    await forked.click();
    await page
      .locator(
        `#chart .state-node[data-state-key="${leafKey(entry.snapshot?.value)}"][data-active="true"]`,
      )
      .waitFor();
    // The chart may show the same state for the session it came from a moment before the
    // context panel has switched: wait for the panel itself.
    await expect.poll(() => page.locator('#context').textContent()).toContain('"review-fork"');
    await page.close();
  });

  it('shows two apps apart and marks one that exits as gone, with the time it left', async () => {
    const second = startCli(
      ['demo', '--inspect', `ws://${new URL(url).host}`, '--round-seconds', '5'],
      { cwd: dir },
    );
    const page = await openPage();
    try {
      await second.line(/Ctrl-C to stop/);
      await page.locator('#tree [data-app="2"][data-actor="session:review"]').waitFor();
      await page.locator('#tree [data-app="1"][data-actor="session:review"]').waitFor();
      expect(await page.locator('#tree .app').count()).toBe(2);
    } finally {
      second.process.kill('SIGINT');
      await second.exited;
    }
    const before = Date.now();
    const heading = page.locator('#tree .app.gone[data-app="2"]');
    await heading.waitFor();
    expect(await heading.textContent()).toMatch(/· disconnected at \d\d:\d\d:\d\d$/);
    const leftAt = Number(await heading.getAttribute('data-left-at'));
    expect(Math.abs(leftAt - before)).toBeLessThan(30_000);
    expect(await page.locator('#tree .app[data-app="1"]').getAttribute('class')).toBe('app');
    // A gone app's actors take no commands; the live app's still do.
    // Its actors stopped with it: they sit in the "finished" group.
    await page
      .locator('#tree [data-app="2"][data-actor="fn:approval:awaiting-approval"]')
      .dispatchEvent('click');
    await page.locator('#chart-title', { hasText: 'fn:approval:awaiting-approval' }).waitFor();
    expect(await page.locator('#controls').isHidden()).toBe(true);
    await page.locator('#tree [data-app="1"][data-actor="session:review"]').click();
    await page.locator('#controls').waitFor();
    await page.close();
  });
});
