// startLocalRestateServer leaves nothing behind: a base dir it made itself goes with stop(),
// while kill() (a crash) keeps it, so a server restarted on it finds its state.
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startLocalRestateServer } from '../src/restate/index.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { restateUnavailable } from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable !== undefined)
  console.log(`skipping the local restate-server tests: ${unavailable}`);

describe.skipIf(unavailable !== undefined)('a local restate-server', () => {
  it(
    'stop() removes the base dir it made; kill() keeps it for a restart; a given one is kept',
    async () => {
      const first = await startLocalRestateServer();
      expect(existsSync(first.baseDir)).toBe(true);
      await first.stop();
      expect(existsSync(first.baseDir)).toBe(false);

      const crashed = await startLocalRestateServer();
      await crashed.kill();
      expect(existsSync(crashed.baseDir)).toBe(true);
      const again = await startLocalRestateServer({ baseDir: crashed.baseDir });
      await again.stop();
      expect(existsSync(crashed.baseDir)).toBe(true); // given, so the caller's to remove
      await rm(crashed.baseDir, { recursive: true, force: true });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
