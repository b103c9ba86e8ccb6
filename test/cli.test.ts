import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { isAlive } from '../src/adapters/command-dispatcher.js';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { readStatus, runStatusCommand } from '../src/cli/commands/status.js';
import type { Output } from '../src/cli/output.js';
import { createRolebox, defineFunction } from '../src/index.js';
import { ScriptedDispatcher, settle } from '../src/testing/index.js';
import { type CliProcess, runCli, startCli } from './support/cli.js';
import { killTaskGroups, killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const fixtures = join(import.meta.dirname, 'fixtures');
const COMMANDS = ['loop', 'resume', 'status', 'show', 'send', 'inspect', 'replay', 'demo', 'mcp'];

let dir: string;
const running: CliProcess[] = [];
const cli = (...args: string[]) => runCli(args, { cwd: dir });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-cli-'));
});

afterEach(async () => {
  running.splice(0);
  await killTracked();
  killTaskGroups(join(dir, '.rolebox', 'tasks'));
  await rm(dir, { recursive: true, force: true });
});

/** Output that keeps what it is given. */
function captured(): Output & { text(): string } {
  const lines: string[] = [];
  return {
    out: (line) => lines.push(line),
    err: (line) => lines.push(line),
    text: () => lines.join('\n'),
  };
}

describe('rolebox --help', () => {
  it('lists every command, and every command has its own help', async () => {
    const top = await cli('--help');
    expect(top.code).toBe(0);
    for (const command of COMMANDS) expect(top.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    for (const command of COMMANDS) {
      const help = await cli(command, '--help');
      expect(help.code, command).toBe(0);
      expect(help.stdout).toContain(`Usage: rolebox ${command}`);
    }
    expect((await cli('loop', '--help')).stdout).toContain('--worker <command>');
  });
});

describe('bad arguments: a message naming the culprit, exit 2, nothing written', () => {
  const cases: [string, string[], RegExp][] = [
    ['no command', [], /Usage: rolebox/],
    ['an unknown command', ['frobnicate'], /rolebox: unknown command 'frobnicate'/],
    ['an unknown option', ['status', '--colour'], /rolebox: unknown option '--colour'/],
    [
      'a loop without --worker',
      ['loop', '|loop:2| x'],
      /rolebox: required option '--worker <command>' not specified/,
    ],
    [
      'a loop without its text',
      ['loop', '--worker', 'cat'],
      /rolebox: missing required argument 'text'/,
    ],
    [
      'malformed loop text',
      ['loop', '|loop:two| x', '--worker', 'cat'],
      /rolebox: cannot parse loop command "\|loop:two\| x".*\[malformed_loop_text\]/,
    ],
    [
      'a negative delay',
      ['loop', '|loop:2| x', '--worker', 'cat', '--delay', '-5'],
      /rolebox: option '--delay <ms>' argument '-5' is invalid/,
    ],
    [
      'a fractional timeout',
      ['loop', '|loop:2| x', '--worker', 'cat', '--round-timeout', '1.5'],
      /'--round-timeout <ms>' argument '1.5' is invalid. expected a whole number ≥ 1/,
    ],
    [
      'a port that is no number',
      ['inspect', '--port', 'abc'],
      /rolebox: option '--port <port>' argument 'abc' is invalid/,
    ],
    [
      'an app origin that is not an origin',
      ['inspect', '--port', '0', '--app-origin', 'localhost:5173'],
      /rolebox: inspector option appOrigins must list origins like http:\/\/localhost:5173, got "localhost:5173" \[invalid_argument\]/,
    ],
    [
      'status of a store that does not exist',
      ['status', '--store', 'nowhere.db'],
      /rolebox: no store at "nowhere.db" \[invalid_argument\]/,
    ],
    ['replay of a missing file', ['replay', 'missing.run.json'], /missing\.run\.json/],
    ['resume with no store', ['resume'], /no store at ".rolebox\/state.db": nothing to resume/],
    [
      'resume with a mistyped --store',
      ['resume', '--store', 'stat.db', '--worker', 'cat'],
      /no store at "stat.db": nothing to resume/,
    ],
  ];
  for (const [name, args, message] of cases) {
    it(name, async () => {
      const result = await cli(...args);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe('');
      expect(existsSync(join(dir, '.rolebox'))).toBe(false);
      expect(existsSync(join(dir, 'stat.db'))).toBe(false);
    });
  }

  it('resume with a store but no worker recorded and no --worker', async () => {
    new SqliteSnapshotStore(join(dir, '.rolebox', 'state.db')).close();
    const result = await cli('resume');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /no worker command is recorded in ".rolebox\/state.db"; pass --worker/,
    );
  });

  it('replay of a file that is not a recorded run', async () => {
    await writeFile(join(dir, 'bad.run.json'), '{"format": "something else"}');
    const result = await cli('replay', 'bad.run.json');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^rolebox: .*bad\.run\.json/m);
  });
});

describe('rolebox loop', () => {
  it("runs a real loop with --worker 'cat', prints its notes and progress, and saves it", async () => {
    const result = await cli(
      'loop',
      '|loop:2| summarise the logs',
      '--worker',
      'cat',
      '--delay',
      '0',
    );
    expect(result.stderr).not.toMatch(/^rolebox:/m);
    expect(result.code).toBe(0);
    // The start note too: the command listens before the loop starts.
    expect(result.stdout.split('\n')[0]).toBe(
      '[loop-progress loop started: 2 rounds, inherit mode]',
    );
    expect(result.stdout).toMatch(
      /^\[loop-progress round 1\/2 completed, task=t_\w+, duration=\d+\.\ds\]$/m,
    );
    expect(result.stdout).toMatch(/^\[loop-progress round 2\/2 completed/m);
    expect(result.stdout).toContain('[loop-progress loop complete]');
    expect(result.stderr).toMatch(/» round 1\/2 running \(task t_\w+\) · elapsed \d+\.\ds/);
    expect(result.stderr).toMatch(/» round 2\/2 running/);
    // `cat` answers with the prompt it was given: the round's output is the task text.
    const [taskId] = /task=(t_\w+)/.exec(result.stdout)?.slice(1) ?? [];
    expect(
      await readFile(join(dir, '.rolebox', 'tasks', String(taskId), 'stdout'), 'utf8'),
    ).toContain('summarise the logs');

    const status = await cli('status');
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^SESSION\s+PHASE\s+FUNCTIONS\s+LOOP$/m);
    expect(status.stdout).toMatch(/^s_\w+\s+idle\s+-\s+loop_\w+ complete 2\/2$/m);
    const json = JSON.parse((await cli('status', '--json')).stdout);
    expect(json).toEqual([
      {
        session: expect.stringMatching(/^s_/),
        phase: 'idle',
        functions: [],
        loop: { id: expect.stringMatching(/^loop_/), phase: 'complete', round: '2/2' },
      },
    ]);
  });

  it('exits 1 when a round fails, with the error in the notes', async () => {
    const result = await cli(
      'loop',
      '|loop:3| x',
      '--worker',
      'echo broken >&2; exit 3',
      '--delay',
      '0',
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('[loop-progress error: exit code 3: broken]');
    expect((await cli('status', '--json')).stdout).toContain('"phase": "error"');
  });

  it('Ctrl-C requests stop-loop: the worker is killed, the loop is cancelled, exit 130', async () => {
    const child = startCli(
      ['loop', '|loop:3| nap', '--worker', 'echo $$ > worker.pid; exec sleep 60'],
      { cwd: dir },
    );
    running.push(child);
    await child.line(/» round 1\/3 running/);
    const pidFile = join(dir, 'worker.pid');
    // Until it has content: `>` creates the file before echo writes to it.
    const written = () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '';
    for (let i = 0; i < 4_000 && !written(); i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    const workerPid = Number(await readFile(pidFile, 'utf8'));
    expect(isAlive(workerPid)).toBe(true);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(130);
    expect(child.stderr()).toContain('» stopping (stop-loop)');
    expect(child.stdout()).toContain('[loop-progress loop cancelled]');
    expect(isAlive(workerPid)).toBe(false);
    expect((await cli('status')).stdout).toMatch(/loop_\w+ cancelled 1\/3/);
  });

  it('resume after SIGKILL picks the running round up and finishes without running it twice', async () => {
    const worker = 'while [ ! -f "$GATE" ]; do sleep 0.02; done; echo "round $ROLEBOX_ROUND done"';
    const env = { GATE: join(dir, 'gate') };
    const first = startCli(['loop', '|loop:2| step', '--worker', worker, '--delay', '0'], {
      cwd: dir,
      env,
    });
    running.push(first);
    const started = await first.line(/» round 1\/2 running \(task (t_\w+)\)/);
    const firstTask = /task (t_\w+)/.exec(started)?.[1];
    first.process.kill('SIGKILL');
    expect(await first.exited).toBe(137);
    expect((await cli('status')).stdout).toMatch(/loop_\w+ awaiting_worker 1\/2/);

    await writeFile(env.GATE, '');
    const resumed = await runCli(['resume'], { cwd: dir, env });
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(
      /» resuming loop loop_\w+ in session s_\w+: round 1\/2, awaiting_worker/,
    );
    // It goes on as it was started: the same worker, the same --delay.
    expect(resumed.stderr).toContain(
      `» worker: ${worker} · delay between rounds: 0 ms · round timeout: 15 min (default)`,
    );
    const rounds = /^Rounds: (.*)$/m.exec(resumed.stdout)?.[1] ?? '';
    expect(rounds).toMatch(
      new RegExp(
        `^r1:${firstTask}\\(\\d+\\.\\ds,completed\\), r2:t_\\w+\\(\\d+\\.\\ds,completed\\)$`,
      ),
    );
    expect((await cli('status')).stdout).toMatch(/loop_\w+ complete 2\/2/);
    // Nothing is left to resume.
    const again = await cli('resume');
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('» nothing to resume (no stored loop is running)');
  });
});

describe('rolebox status', () => {
  it('shows functions with their phases, and which are no longer live', async () => {
    const path = join(dir, 'state.db');
    const store = new SqliteSnapshotStore(path);
    const rb = createRolebox({
      store,
      functions: [
        defineFunction({
          name: 'awaiting-approval',
          gate: 'signal_observed(answer)',
          continue_until: 'signal_observed(answer)',
        }),
        defineFunction({ name: 'note-taker', continue_until: 'signal_observed(answer)' }),
      ],
    });
    await rb.start();
    const session = await rb.openSession({ id: 'approval' });
    session.activate('awaiting-approval');
    session.activate('note-taker');
    session.signal({ type: 'need_approval' });
    session.idle();
    session.deactivate('note-taker');
    await rb.stop();
    await store.close();

    const output = captured();
    expect(await runStatusCommand({ store: path }, output)).toBe(0);
    expect(output.text()).toMatch(
      /^approval\s+idle\s+awaiting-approval=gated, note-taker=\w+\*\s+-$/m,
    );
    expect(output.text()).toContain('(* no longer live)');
    expect(await readStatus(path)).toEqual([
      {
        session: 'approval',
        phase: 'idle',
        functions: [
          { name: 'awaiting-approval', phase: 'gated', live: true },
          { name: 'note-taker', phase: expect.any(String), live: false },
        ],
      },
    ]);
  });

  it('shows the loop that runs, not one that finished before it, and a completed function once', async () => {
    const path = join(dir, 'state.db');
    const store = new SqliteSnapshotStore(path);
    const dispatcher = new ScriptedDispatcher((input) =>
      input.loopId === first ? `done ${input.round}` : undefined,
    );
    let first = '';
    const rb = createRolebox({
      store,
      dispatcher,
      limits: { interRoundDelayMs: 0 },
      functions: [defineFunction({ name: 'quick', continue_until: 'signal_observed(answer)' })],
    });
    await rb.start();
    const session = await rb.openSession({ id: 'two-loops' });
    session.activate('quick');
    session.signal({ type: 'answer' });
    session.idle();
    const one = session.startLoop('|loop:1| first job');
    first = one.ok ? one.loopId : '';
    await settle();
    expect(session.view().loop?.phase).toBe('complete');
    const two = session.startLoop('|loop:2| second job');
    await settle();
    await rb.stop();
    await store.close();
    expect(await readStatus(path)).toEqual([
      {
        session: 'two-loops',
        phase: 'idle',
        functions: [{ name: 'quick', phase: 'complete', live: false }],
        loop: { id: two.ok ? two.loopId : '?', phase: 'awaiting_worker', round: '1/2' },
      },
    ]);
  });

  it('lists an unreadable session as such, and the rest normally', async () => {
    const path = join(dir, 'state.db');
    const store = new SqliteSnapshotStore(path);
    await store.save([{ id: 'broken', data: '{"not": "an envelope"}' }]);
    await store.close();
    const output = captured();
    expect(await runStatusCommand({ store: path }, output)).toBe(0);
    expect(output.text()).toMatch(/^broken\s+unreadable: /m);
  });

  it('says so when the store has no sessions', async () => {
    const path = join(dir, 'empty.db');
    await new SqliteSnapshotStore(path).close();
    expect((await cli('status', '--store', 'empty.db')).stdout).toBe(`no sessions in empty.db\n`);
  });
});

describe('rolebox replay', () => {
  it('exits 0 on a recorded run that replays exactly', async () => {
    const result = await cli('replay', join(fixtures, 'approval-workflow.run.json'));
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^replay ok: \d+ event\(s\), every snapshot matched$/m);
  });

  it('exits 1 and prints the report on a divergence', async () => {
    const run = JSON.parse(await readFile(join(fixtures, 'approval-workflow.run.json'), 'utf8'));
    run.functions = run.functions.map((definition: { name: string }) =>
      definition.name === 'awaiting-approval' ? { ...definition, observe: [] } : definition,
    );
    await writeFile(join(dir, 'changed.run.json'), JSON.stringify(run));
    const result = await cli('replay', 'changed.run.json');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/replay diverged at event \d+ \(system\.deliver/);
    expect(result.stderr).toContain('artifacts');
  });
});

describe('rolebox inspect and demo', () => {
  it('inspect serves the page until SIGTERM', async () => {
    const child = startCli(['inspect', '--port', '0'], { cwd: dir });
    running.push(child);
    const url = (await child.line(/^inspector: /)).slice('inspector: '.length);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script');
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
  });

  it('inspect lets in browser apps only from --app-origin, and says what it refused', async () => {
    const child = startCli(['inspect', '--port', '0', '--app-origin', 'http://localhost:5173'], {
      cwd: dir,
    });
    running.push(child);
    const wsUrl = /apps stream to (ws:\/\/\S+)/.exec(
      await child.line(/apps stream to ws:/),
    )?.[1] as string;
    const opens = (origin: string) =>
      new Promise<boolean>((resolve) => {
        const socket = new WebSocket(wsUrl, { origin });
        socket.once('open', () => resolve(true)).once('error', () => resolve(false));
        socket.once('open', () => socket.close());
      });
    expect(await opens('http://localhost:5173')).toBe(true);
    expect(await opens('https://evil.example')).toBe(false);
    await child.line(
      /^» refused a connection: app from browser origin "https:\/\/evil\.example" \(allow it with appOrigins\)$/,
    );
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
  });

  it('loop --inspect streams to a running inspector, or starts one and prints its URL', async () => {
    const inspector = startCli(['inspect', '--port', '0'], { cwd: dir });
    running.push(inspector);
    const pageUrl = new URL((await inspector.line(/^inspector: /)).slice('inspector: '.length));
    const wsUrl = /apps stream to (ws:\/\/\S+)/.exec(
      await inspector.line(/apps stream to ws:/),
    )?.[1] as string;
    const streamed = await cli('loop', '|loop:1| watched', '--worker', 'cat', '--inspect', wsUrl);
    expect(streamed.code).toBe(0);
    expect(streamed.stderr).toContain(`streaming to the inspector at ${wsUrl}`);
    const page = new WebSocket(`${wsUrl}/ui${pageUrl.search}`);
    const init = await new Promise<{ actors: { name: string }[] }>((resolve) =>
      page.once('message', (data) => resolve(JSON.parse(String(data)))),
    );
    page.close();
    expect(init.actors.map((actor) => actor.name)).toEqual(
      expect.arrayContaining([
        'rolebox',
        expect.stringMatching(/^session:s_/),
        expect.stringMatching(/^loop:loop_/),
      ]),
    );

    const own = await cli('loop', '|loop:1| watched', '--worker', 'cat', '--inspect');
    expect(own.code).toBe(0);
    expect(own.stderr).toMatch(/^inspector: http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/m);
  });

  it('demo prints the URL of a page that shows its actors, and stops on Ctrl-C', async () => {
    const child = startCli(['demo', '--port', '0', '--round-seconds', '0'], { cwd: dir });
    running.push(child);
    const url = (await child.line(/^inspector: /)).slice('inspector: '.length);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/);
    expect((await fetch(url)).status).toBe(200);
    await child.line(/» writer: loop loop_\w+ complete/);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
    expect(child.stdout()).toContain('fn:approval:awaiting-approval is gated');
    // Stopping is said, last, once the inspector and the sessions are gone.
    expect(child.stderr().trimEnd().split('\n').at(-1)).toBe(
      '» demo stopped: the inspector is closed and its sessions are gone',
    );
  });
});
