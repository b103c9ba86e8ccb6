// Debian's Chromium (installed by .ci/run), driven by playwright-core: playwright's own browser
// download cannot run here.
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Where .ci/run installs Chromium. */
export const CHROMIUM = '/usr/bin/chromium';

/** Starts headless Chromium, or throws saying how to install it. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}
