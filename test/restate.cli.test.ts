// `rolebox restate dev` and `serve` as a user runs them: a real restate-server from
// node_modules, the built-in shell worker, SIGTERM, and a second start on the same state.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRestateRolebox } from '../src/restate/index.js';
import { runCli, startCli } from './support/cli.js';
import { killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';
import { restateUnavailable, untilServer } from './support/restate.js';

const unavailable = restateUnavailable();
if (unavailable) console.log(`skipping the Restate command tests: ${unavailable}`);

/** True while `pid` runs (a killed process nobody reaped yet is a zombie: not running). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The base dirs of the dev runs: a dev killed by a failed test leaves its server, stopped here. */
const devDirs: string[] = [];
/** Every folder a test made, removed after it. */
const scratchDirs: string[] = [];

afterEach(async () => {
  await killTracked();
  for (const dir of devDirs.splice(0)) {
    const file = join(dir, 'restate', 'restate-server.pid');
    if (!existsSync(file)) continue;
    try {
      process.kill(Number(readFileSync(file, 'utf8').trim()), 'SIGKILL');
    } catch {
      // Stopped with its dev, as it should be.
    }
  }
  for (const dir of scratchDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(unavailable !== undefined)('rolebox restate (the command)', () => {
  it(
    'dev starts a server, serves a shell worker, stops on SIGTERM, starts again where it was, and stops a server a killed dev left',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rolebox-restate-dev-'));
      devDirs.push(dir);
      scratchDirs.push(dir);
      const args = [
        'restate',
        'dev',
        '--base-dir',
        join(dir, 'restate'),
        '--tasks',
        join(dir, 'tasks'),
        '--worker',
        'cat > /dev/null; echo "round $ROLEBOX_ROUND done"',
        '--delay',
        '0',
      ];
      const first = startCli(args, { cwd: dir });
      const ingressUrl = (await first.line(/^ingress: /)).replace(/^ingress: /, '').trim();
      const endpointLine = await first.line(/^rolebox: endpoint /);
      // The host line comes after the ingress line: wait for it, do not read stdout so far.
      expect(await first.line(/^host: /)).toMatch(
        /createRestateRolebox\(\{ ingressUrl: 'http:\/\/127\.0\.0\.1:\d+' \}\)/,
      );
      const rb = createRestateRolebox({ ingressUrl });
      // Without --functions, dev serves the README's approval function (issue 27 item 20),
      // and the curl lines it prints drive it.
      expect(await first.line(/^functions: /)).toContain('approval (built in');
      const tried = await first.line(/rolebox-session\/s1\/tool /);
      const curl = async (handler: string, body: string) =>
        (await fetch(`${ingressUrl}/rolebox-session/s1/${handler}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        }).then((response) => response.json())) as { result: unknown };
      expect(tried).toContain(`-d '["|signal| type=need_approval"]'`);
      await curl('open', '[]');
      await curl('activate', '["approval"]');
      expect((await curl('tool', '["|signal| type=need_approval"]')).result).toMatchObject({
        text: 'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request approval:r1',
      });
      const session = await rb.openSession({ id: 'cli-1' });
      expect((await session.startLoop('|loop:2| say hello')).ok).toBe(true);
      await untilServer(
        async () => (await session.view()).loop?.phase === 'complete',
        'the loop of cli-1 complete',
      );
      const { loop } = await session.view();
      expect(loop?.lastSummary).toBe('round 2 done');
      first.process.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      // The server went with it.
      await expect(
        fetch(`${ingressUrl}/rolebox-session/cli-1/view`, { method: 'POST' }),
      ).rejects.toThrow();

      const second = startCli(args, { cwd: dir });
      // The same ports: the deployment the server knows is the endpoint that serves it.
      expect((await second.line(/^ingress: /)).trim()).toBe(`ingress: ${ingressUrl}`);
      expect(await second.line(/^rolebox: endpoint /)).toBe(endpointLine);
      expect((await rb.session('cli-1').view()).loop?.rounds).toHaveLength(2);
      // Killed outright, dev cannot stop its server: the next dev on the base dir does.
      const left = Number(readFileSync(join(dir, 'restate', 'restate-server.pid'), 'utf8'));
      second.process.kill('SIGKILL');
      await second.exited;
      expect(running(left)).toBe(true);
      const third = startCli(args, { cwd: dir });
      expect(await third.line(/an earlier dev left running/)).toContain(`pid ${left}`);
      expect((await third.line(/^ingress: /)).trim()).toBe(`ingress: ${ingressUrl}`);
      expect((await rb.session('cli-1').view()).loop?.phase).toBe('complete');
      expect(running(left)).toBe(false);
      third.process.kill('SIGTERM');
      expect(await third.exited).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'serve refuses a shell worker and a worker service at once, and bad numbers',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rolebox-restate-serve-'));
      scratchDirs.push(dir);
      const both = await runCli(
        ['restate', 'serve', '--port', '0', '--worker', 'echo', '--workers-service', 'w'],
        { cwd: dir },
      );
      expect(both.code).toBe(2);
      expect(both.stderr).toContain(
        'give --worker (a shell command run here) or --workers-service',
      );
      const port = await runCli(['restate', 'serve', '--processes', 'two'], { cwd: dir });
      expect(port.code).toBe(2);
      expect(port.stderr).toContain('expected a whole number');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
