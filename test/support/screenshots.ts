import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

const DOCS = join(import.meta.dirname, '..', '..', 'docs');

/**
 * Copies a screenshot a test took (under test-output/) to `docs/<name>`, where the README
 * shows it, but only under `npm run screenshots` (ROLEBOX_UPDATE_SCREENSHOTS=1): a plain test
 * run must not leave the checkout's docs changed.
 */
export async function publishScreenshot(taken: string, name: string): Promise<void> {
  if (process.env.ROLEBOX_UPDATE_SCREENSHOTS !== '1') return;
  await mkdir(DOCS, { recursive: true });
  await copyFile(taken, join(DOCS, name));
}
