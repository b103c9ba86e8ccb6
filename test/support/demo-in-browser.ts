// What the inspector's browser tests share: `rolebox demo` running in a fresh folder with its
// inspector on a free port, and headless Chromium to look at it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from './chromium.js';
import { type CliProcess, startCli } from './cli.js';
import { killTracked } from './processes.js';

/** A running demo, its inspector page's URL, the browser, and the folder it runs in. */
export interface DemoInBrowser {
  readonly demo: CliProcess;
  readonly browser: Browser;
  readonly url: string;
  readonly dir: string;
}

/**
 * Starts `rolebox demo` with rounds of `roundSeconds` in a new folder named from `prefix`,
 * waits for its inspector's URL (and for `ready`, a later line, when given), and launches
 * Chromium. Call {@link stopDemoInBrowser} in `afterAll`.
 */
export async function startDemoInBrowser(
  prefix: string,
  roundSeconds: number,
  ready?: RegExp,
): Promise<DemoInBrowser> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const demo = startCli(['demo', '--port', '0', '--round-seconds', String(roundSeconds)], {
    cwd: dir,
  });
  const url = (await demo.line(/^inspector: /)).slice('inspector: '.length);
  if (ready) await demo.line(ready);
  const browser = await launchChromium();
  return { demo, browser, url, dir };
}

/**
 * Closes the browser, stops the demo with SIGINT (as Ctrl-C would; at most 10 s), kills
 * whatever the test left running and removes the folder. Each part may be missing (a
 * `beforeAll` that failed half way).
 */
export async function stopDemoInBrowser(started: Partial<DemoInBrowser>): Promise<void> {
  await started.browser?.close();
  started.demo?.process.kill('SIGINT');
  await Promise.race([started.demo?.exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  await killTracked();
  if (started.dir) await rm(started.dir, { recursive: true, force: true });
}
