import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { createRolebox } from '../src/index.js';
import { launchChromium } from './support/chromium.js';
import { type CliProcess, runCli, startCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { publishScreenshot } from './support/screenshots.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const OUTPUT = join(import.meta.dirname, '..', 'test-output');
const FIXTURE = join(import.meta.dirname, 'fixtures', 'approval-workflow.run.json');
const APPROVAL_FN = 'fn:approval:awaiting-approval';

let dir: string;
let browser: Browser;
let cli: CliProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-browse-'));
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

/** A store with sessions `writer` (waiting for its intake) and `reader` (idle), and one record `broken` that is no snapshot. */
async function storeWithSessions(name: string): Promise<string> {
  const path = join(dir, name);
  const store = new SqliteSnapshotStore(path);
  const rb = createRolebox({ store });
  await rb.start();
  const writer = await rb.openSession({ id: 'writer' });
  writer.send({
    type: 'session_started',
    availableSkills: [{ name: 'write' }],
    initialSkill: 'write',
    intakePrompt: 'What shall I write?',
  });
  await rb.openSession({ id: 'reader' });
  await rb.stop();
  await store.save([{ id: 'broken', data: '{"format":"rolebox.snapshot", "not": "a snapshot"' }]);
  await store.close();
  return path;
}

async function openPage(
  url: string,
  viewport = { width: 1440, height: 900 },
): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(url);
  await page.locator('#connection[data-connection="open"]').waitFor();
  return { page, errors };
}

/** Sets the recorded value of actor `id` in a system snapshot (wherever it is nested). */
function setRecordedValue(tree: unknown, id: string, value: unknown): boolean {
  const children = (tree as { children?: Record<string, { snapshot?: { value?: unknown } }> })
    ?.children;
  for (const [childId, child] of Object.entries(children ?? {})) {
    if (childId === id && child.snapshot) {
      child.snapshot.value = value;
      return true;
    }
    if (setRecordedValue(child.snapshot, id, value)) return true;
  }
  return false;
}

describe('rolebox inspect --store', () => {
  it('lists the stored sessions on stdout and in the page, opens one read-only, and shows a corrupt record as unreadable', async () => {
    const store = await storeWithSessions('page.db');
    cli = startCli(['inspect', '--port', '0', '--store', store], { cwd: dir });
    const url = (await cli.line(/^inspector: /)).slice('inspector: '.length);
    expect(cli.stdout()).toContain('3 stored session(s) in');
    expect(cli.stdout()).toMatch(/^ {2}writer {2}\{"waiting_user":"intake"\}$/m);
    expect(cli.stdout()).toMatch(/^ {2}reader {2}idle$/m);
    expect(cli.stdout()).toMatch(/^ {2}broken {2}unreadable: /m);

    const { page, errors } = await openPage(url);
    const writer = page.locator('#tree [data-actor="session:writer"]');
    await writer.waitFor();
    await page.locator('#tree [data-actor="session:reader"]').waitFor();
    await writer.click();
    await page.locator('#chart .state-node[data-state-key="intake"][data-active="true"]').waitFor();
    await expect.poll(() => page.locator('#context').textContent()).toContain('"writer"');
    expect(await page.locator('#source-note').textContent()).toBe('stored, read-only');
    // A stored session takes no commands: no controls.
    expect(await page.locator('#controls').isHidden()).toBe(true);

    const broken = page.locator('#tree [data-actor="session:broken"]');
    expect(await broken.textContent()).toContain('unreadable');
    await broken.click();
    await expect
      .poll(() => page.locator('#source-note').textContent())
      .toMatch(/^stored, read-only · unreadable: /);
    await mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'inspector-store.png') });
    expect(errors).toEqual([]);
  });

  it('points from a stored session to the same session live in a running app, which takes commands', async () => {
    const store = await storeWithSessions('live.db');
    cli = startCli(['inspect', '--port', '0', '--store', store], { cwd: dir });
    const url = (await cli.line(/^inspector: /)).slice('inspector: '.length);
    const wsUrl = /apps stream to (ws:\/\/\S+)/.exec(await cli.line(/^apps stream to /))?.[1];
    const live = createRolebox({ inspect: { url: wsUrl as string } });
    await live.start();
    try {
      await live.openSession({ id: 'writer' });
      const { page, errors } = await openPage(url);
      const stored = page.locator('#tree [data-actor="session:writer"][data-app="1"]');
      await stored.click();
      const open = page.locator('#open-live');
      await open.waitFor();
      expect(await page.locator('#source-note').textContent()).toMatch(
        /^stored, read-only · live in app 2: open it$/,
      );
      await open.click();
      await page.locator('#controls').waitFor();
      expect(await page.locator('#source-note').isHidden()).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await live.stop();
    }
  });

  it('with --json, lists the stored sessions as one {"type":"stored"} line after the listening one', async () => {
    const store = await storeWithSessions('json.db');
    cli = startCli(['inspect', '--port', '0', '--json', '--store', store], { cwd: dir });
    const line = JSON.parse(await cli.line(/^\{"type":"stored"/));
    expect(line).toEqual({
      type: 'stored',
      sessions: [
        { id: 'broken', error: expect.stringContaining('stored record "broken"') },
        { id: 'reader' },
        { id: 'writer' },
      ],
    });
    expect(JSON.parse(cli.stdout().split('\n')[0] as string)).toMatchObject({ type: 'listening' });
  });

  it('refuses a store that does not exist, and a file that is no store, with exit 2 and nothing started', async () => {
    const missing = await runCli(['inspect', '--port', '0', '--store', 'nowhere.db'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      'rolebox: --store: no store at "nowhere.db" [invalid_argument]',
    );
    expect(missing.stdout).toBe('');
    await writeFile(join(dir, 'garbage.db'), 'this is not sqlite at all, just text\n'.repeat(200));
    const garbage = await runCli(['inspect', '--port', '0', '--store', 'garbage.db'], {
      cwd: dir,
    });
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toMatch(
      /rolebox: --store "garbage\.db" is not a rolebox store: .*file is not a database \[invalid_argument\]/,
    );
    expect(garbage.stdout).toBe('');
  });
});

describe('rolebox replay --inspect', () => {
  it('steps through a recorded run: the position and the state change with step and back', async () => {
    cli = startCli(['replay', '--inspect', '--port', '0', FIXTURE], { cwd: dir });
    const url = (await cli.line(/^inspector: /)).slice('inspector: '.length);
    expect(cli.stdout()).toContain('replay ok: 6 event(s)');
    const { page, errors } = await openPage(url);
    const position = page.locator('#replay-position');
    await expect.poll(() => position.textContent()).toBe('event 0 of 6 · before the first event');
    // Before the first event there is no session yet.
    expect(await page.locator('#tree [data-actor="session:approval"]').count()).toBe(0);

    await page.locator('#replay-step').click();
    await expect
      .poll(() => position.textContent())
      .toBe('event 1 of 6 · system.open_session → rolebox');
    await page.locator('#tree [data-actor="session:approval"]').waitFor();

    for (let k = 2; k <= 5; k++) {
      await page.locator('#replay-step').click();
      await expect.poll(() => position.textContent()).toMatch(new RegExp(`^event ${k} of 6`));
    }
    const fn = page.locator(`#tree [data-actor="${APPROVAL_FN}"]`);
    await expect.poll(() => fn.textContent()).toContain('active');
    await fn.click();
    await page.locator('#chart .state-node[data-state-key="active"][data-active="true"]').waitFor();
    expect(await page.locator('#source-note').textContent()).toBe('replayed, read-only');

    await page.locator('#replay-step').click();
    await expect.poll(() => position.textContent()).toMatch(/^event 6 of 6/);
    await page
      .locator('#chart .state-node[data-state-key="complete"][data-active="true"]')
      .waitFor();
    // Back: the function is active again.
    await page.locator('#replay-back').click();
    await expect.poll(() => position.textContent()).toMatch(/^event 5 of 6/);
    await page.locator('#chart .state-node[data-state-key="active"][data-active="true"]').waitFor();
    expect(await page.locator('#replay-divergence').isHidden()).toBe(true);
    // Play runs to the end.
    await page.locator('#replay-play').click();
    await expect.poll(() => position.textContent()).toMatch(/^event 6 of 6/);
    expect(errors).toEqual([]);
  });

  it('shows the first divergence: a red banner naming the event, expected vs actual, the actual state marked on the chart', async () => {
    const run = JSON.parse(await readFile(FIXTURE, 'utf8'));
    // The recording claims the function completed at event 5; the code leaves it active.
    expect(setRecordedValue(run.journal[4].after, APPROVAL_FN, 'complete')).toBe(true);
    const altered = join(dir, 'diverging.run.json');
    await writeFile(altered, JSON.stringify(run));
    cli = startCli(['replay', '--inspect', '--port', '0', altered], { cwd: dir });
    const url = (await cli.line(/^inspector: /)).slice('inspector: '.length);
    // The CLI and the page count events alike: the fifth of six, journal index 4.
    expect(cli.stderr()).toContain(
      'replay diverged at event 5 of 6 (system.deliver → rolebox; journal index 4)',
    );
    // At a laptop's size (the other replay tests use 1440×900).
    const { page, errors } = await openPage(url, { width: 1280, height: 720 });
    await page.locator('#replay-to-divergence').click();
    await expect
      .poll(() => page.locator('#replay-position').textContent())
      .toMatch(/^event 5 of 6/);
    const banner = page.locator('#replay-divergence');
    await banner.waitFor();
    expect(await banner.textContent()).toContain(
      `Diverged at event 5 (system.deliver → rolebox) in ${APPROVAL_FN}`,
    );
    expect(await banner.textContent()).toContain(
      'expected state: function.complete · actual state: function.active',
    );
    expect(await banner.textContent()).toMatch(/value: expected "complete", got "active"/);
    // The difference from the diverging actor's snapshot on (the full path in its tooltip).
    expect(await page.locator('#replay-divergence li').allTextContents()).toEqual([
      'value: expected "complete", got "active"',
    ]);
    // The diverging actor is selected, its actual state highlighted, the recorded one dashed.
    await page
      .locator('#chart .state-node.diverged-actual[data-state-key="active"][data-active="true"]')
      .waitFor();
    expect(
      await page.locator('#chart .state-node.diverged-expected[data-state-key="complete"]').count(),
    ).toBe(1);
    // Nothing in the bar or the banner is wider than its box, and both lie in the chart panel.
    const fits = await page.evaluate(`['#replay', '#replay-position', '#replay-divergence']
      .map((id) => document.querySelector(id))
      .every((element) => element.scrollWidth <= element.clientWidth &&
        element.getBoundingClientRect().right <=
          document.getElementById('chart-panel').getBoundingClientRect().right)`);
    expect(fits).toBe(true);
    // Outlined red, not green.
    expect(
      await page
        .locator('#chart .state-node.diverged-actual > rect')
        .evaluate((rect) => rect.ownerDocument.defaultView?.getComputedStyle(rect).stroke),
    ).toBe('rgb(255, 107, 107)');
    // The log lists the recorded events: the fifth marked viewed and red, the sixth dimmed.
    const rows = page.locator('#log tbody tr.event-row');
    expect(await rows.count()).toBe(6);
    const marks = await rows.evaluateAll((list) =>
      list.map((row) => `${row.cells[4]?.textContent} ${[...row.classList].sort().join(' ')}`),
    );
    expect(marks).toEqual([
      'system.deliver event-row replay-ahead',
      'system.deliver diverged event-row viewing',
      'system.deliver event-row',
      'system.deliver event-row',
      'system.deliver event-row',
      'system.open_session event-row',
    ]);
    await page.screenshot({ path: join(OUTPUT, 'inspector-replay.png') });
    await publishScreenshot(join(OUTPUT, 'inspector-replay.png'), 'inspector-replay.png');
    // A click on the first event's row replays up to it.
    await rows.last().click();
    await expect
      .poll(() => page.locator('#replay-position').textContent())
      .toBe('event 1 of 6 · system.open_session → rolebox');
    await page.locator('#replay-to-divergence').click();
    // Stepping on hides the banner.
    await page.locator('#replay-step').click();
    await expect.poll(() => banner.isHidden()).toBe(true);
    expect(errors).toEqual([]);
    // Ctrl-C ends it with the replay's verdict: 1, it diverged.
    cli.process.kill('SIGINT');
    expect(await cli.exited).toBe(1);
    cli = undefined;
  });
  it('names the difference when the diverging session is in the same state: its context field, the state outlined red', async () => {
    const run = JSON.parse(await readFile(FIXTURE, 'utf8'));
    // The recording claims another idle cycle count at event 5: same state, other context.
    run.journal[4].after.children['session:approval'].snapshot.context.idleCycle = 99;
    const altered = join(dir, 'context.run.json');
    await writeFile(altered, JSON.stringify(run));
    cli = startCli(['replay', '--inspect', '--port', '0', altered], { cwd: dir });
    const url = (await cli.line(/^inspector: /)).slice('inspector: '.length);
    expect(cli.stderr()).toContain('replay diverged at event 5 of 6');
    const { page, errors } = await openPage(url);
    await page.locator('#replay-to-divergence').click();
    const banner = page.locator('#replay-divergence');
    await banner.waitFor();
    expect(await banner.textContent()).toContain(
      'Diverged at event 5 (system.deliver → rolebox) in session:approval',
    );
    expect(await banner.textContent()).toContain(
      'same state in both (session.idle); they differ in context.idleCycle:',
    );
    expect(await page.locator('#replay-divergence li').allTextContents()).toEqual([
      'context.idleCycle: expected 99, got 1',
    ]);
    const idle = page.locator('#chart .state-node.diverged-actual[data-state-key="idle"] > rect');
    await idle.waitFor();
    expect(
      await idle.evaluate((rect) => rect.ownerDocument.defaultView?.getComputedStyle(rect).stroke),
    ).toBe('rgb(255, 107, 107)');
    expect(errors).toEqual([]);
  });
});

describe('the options of browse and replay', () => {
  it('--port and --host of replay need --inspect; --help names the new options', async () => {
    const port = await runCli(['replay', FIXTURE, '--port', '0'], { cwd: dir });
    expect(port.code).toBe(2);
    expect(port.stderr).toContain(
      'rolebox: --port 0 is for --inspect, which was not given [invalid_argument]',
    );
    const notNumber = await runCli(['replay', FIXTURE, '--inspect', '--port', 'x'], { cwd: dir });
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toContain('expected a whole number ≥ 0, got "x"');
    const replayHelp = (await runCli(['replay', '--help'], { cwd: dir })).stdout.replace(
      /\s+/g,
      ' ',
    );
    expect(replayHelp).toContain('--inspect also play the run in an inspector page');
    expect(replayHelp).toContain('(default: 7070)');
    const inspectHelp = (await runCli(['inspect', '--help'], { cwd: dir })).stdout.replace(
      /\s+/g,
      ' ',
    );
    expect(inspectHelp).toContain(
      '--store <file> also list the sessions stored in this SQLite file',
    );
  });
});
