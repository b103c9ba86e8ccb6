// `rolebox loop` and `show` as a new user meets them: what each worker produced, under
// its round's note and in `show`; `--json` lines; `loop -` reading the task from stdin;
// SIGTERM leaving the loop for `resume` with exit 143.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { readLoopTextFromStdin, STDIN_TEXT_MAX_BYTES } from '../src/cli/commands/loop.js';
import {
  ROUND_OUTPUT_LINES,
  type RoundShown,
  roundJson,
  roundOutputLines,
} from '../src/cli/round-output.js';
import { isRoleboxError } from '../src/errors.js';
import { type CliProcess, runCli, startCli } from './support/cli.js';
import { killTaskGroups, killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const fixtures = join(import.meta.dirname, 'fixtures');

let dir: string;
const cli = (...args: string[]) => runCli(args, { cwd: dir });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-cli-loop-'));
});

afterEach(async () => {
  await killTracked();
  killTaskGroups(join(dir, '.rolebox', 'tasks'));
  await rm(dir, { recursive: true, force: true });
});

/** Every stdout line parsed as JSON (a line that is not JSON fails the test). */
function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON line on stdout: ${line}`);
      }
    });
}

/** Waits (bounded) until `file` exists with some content. */
async function untilWritten(file: string): Promise<void> {
  for (let i = 0; i < 4_000; i++) {
    if (existsSync(file) && readFileSync(file, 'utf8').trim() !== '') return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`${file} was never written`);
}

describe('rolebox loop shows what each worker produced', () => {
  it('prints the output under each round note, and the tail with the file when it is long', async () => {
    const worker =
      'cat > /dev/null; echo "answer of round $ROLEBOX_ROUND"; [ "$ROLEBOX_ROUND" = 2 ] && seq 1 100; true';
    const result = await cli('loop', '|loop:2| write', '--worker', worker, '--delay', '0');
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    const first = lines.findIndex((line) => line.startsWith('[loop-progress round 1/2 completed'));
    expect(lines[first + 1]).toBe('  │ answer of round 1');
    expect(lines[first + 2]).toMatch(/^\[loop-progress round 2\/2 completed, task=t_\w+/);
    // Round 2 wrote 101 lines: the last ones are shown, and where the rest is.
    const task = /round 2\/2 completed, task=(t_\w+)/.exec(result.stdout)?.[1];
    const file = `.rolebox/tasks/${task}/stdout`;
    expect(lines[first + 3]).toBe(
      `  │ … the last ${ROUND_OUTPUT_LINES} line(s) of 310 B; all of it is in ${file}`,
    );
    expect(lines.slice(first + 4, first + 4 + ROUND_OUTPUT_LINES)).toEqual(
      Array.from({ length: ROUND_OUTPUT_LINES }, (_, i) => `  │ ${91 + i}`),
    );
    expect(await readFile(join(dir, file), 'utf8')).toMatch(/^answer of round 2\n1\n2\n/);
    expect(lines[first + 4 + ROUND_OUTPUT_LINES]).toBe('[loop-progress loop complete]');
  });

  it('a failed round shows what it wrote on stdout, after the error note', async () => {
    const result = await cli(
      'loop',
      '|loop:2| x',
      '--worker',
      'echo half done; echo broken >&2; exit 3',
      '--delay',
      '0',
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('[loop-progress error: exit code 3: broken]\n  │ half done\n');
  });

  it('roundOutputLines: no output, the end of a long line, an output the dispatcher cut', () => {
    const shown: RoundShown = {
      session: 's',
      loop: 'l',
      round: 1,
      task: 't_1',
      status: 'completed',
      text: '',
      truncated: false,
      dropped: false,
      file: '.rolebox/tasks/t_1/stdout',
    };
    expect(roundOutputLines(shown)).toEqual(['  │ (no output)']);
    const long = `${'a'.repeat(10_000)}z`;
    const [head, line] = roundOutputLines({ ...shown, text: long, bytes: 10_001 });
    expect(head).toBe(
      '  │ … the last 1 line(s) of 9.8 KiB; all of it is in .rolebox/tasks/t_1/stdout',
    );
    expect(line).toMatch(/^ {2}│ a+z$/);
    expect((line as string).length).toBeLessThan(4_100);
    expect(
      roundOutputLines({
        ...shown,
        text: 'end',
        bytes: 20 * 1024 * 1024,
        truncated: true,
        dropped: true,
      }),
    ).toEqual([
      '  │ … the last 1 line(s) of 20.0 MiB; only its end was kept, in .rolebox/tasks/t_1/stdout',
      '  │ end',
    ]);
    expect(roundJson({ ...shown, text: 'x', bytes: 2, truncated: true })).toEqual({
      type: 'round',
      session: 's',
      loop: 'l',
      round: 1,
      task: 't_1',
      status: 'completed',
      output: { text: 'x', bytes: 2, truncated: true },
      file: '.rolebox/tasks/t_1/stdout',
    });
  });
});

describe('rolebox loop --json', () => {
  it('prints one JSON object per line: each note, each round with its output, the result; nothing else', async () => {
    const worker = 'cat > /dev/null; echo "answer $ROLEBOX_ROUND"';
    const result = await cli('loop', '|loop:2| go', '--worker', worker, '--delay', '0', '--json');
    expect(result.code, result.stderr).toBe(0);
    const lines = jsonLines(result.stdout);
    expect(lines.map((line) => line.type)).toEqual([
      'note',
      'note',
      'round',
      'note',
      'round',
      'note',
      'result',
    ]);
    const [started, note1, round1, , round2, end, outcome] = lines;
    const session = started?.session;
    const loop = started?.loop;
    expect(session).toMatch(/^s_/);
    expect(loop).toMatch(/^loop_/);
    expect(started).toEqual({
      type: 'note',
      session,
      loop,
      text: '[loop-progress loop started: 2 rounds, inherit mode]',
    });
    expect(note1).toEqual({
      type: 'note',
      session,
      loop,
      round: 1,
      text: expect.stringMatching(/^\[loop-progress round 1\/2 completed, task=t_\w+, /),
    });
    expect(round1).toEqual({
      type: 'round',
      session,
      loop,
      round: 1,
      task: expect.stringMatching(/^t_/),
      status: 'completed',
      durationMs: expect.any(Number),
      output: { text: 'answer 1', bytes: 9, truncated: false },
      file: `.rolebox/tasks/${round1?.task}/stdout`,
    });
    expect(round2).toMatchObject({ round: 2, output: { text: 'answer 2' } });
    expect(end?.text).toBe(
      `[loop-progress loop complete]\nRounds: r1:${round1?.task}(${((round1?.durationMs as number) / 1000).toFixed(1)}s,completed), r2:${round2?.task}(${((round2?.durationMs as number) / 1000).toFixed(1)}s,completed)`,
    );
    expect(outcome).toEqual({
      type: 'result',
      session,
      loop,
      phase: 'complete',
      rounds: 2,
      total: 2,
      summary: 'answer 2',
      exitCode: 0,
    });
    // The human progress is on stderr, not mixed into the JSON.
    expect(result.stderr).toMatch(/» round 1\/2 running/);
  });

  it('a failed loop: the error note names its round, the round its error, the result exit 1', async () => {
    const result = await cli('loop', '|loop:2| x', '--worker', 'echo broken >&2; exit 3', '--json');
    expect(result.code).toBe(1);
    const lines = jsonLines(result.stdout);
    expect(lines.slice(1)).toEqual([
      expect.objectContaining({
        type: 'note',
        round: 1,
        text: '[loop-progress error: exit code 3: broken]',
      }),
      expect.objectContaining({
        type: 'round',
        round: 1,
        status: 'error',
        output: { text: '', bytes: 0, truncated: false },
        error: 'exit code 3: broken',
      }),
      expect.objectContaining({
        type: 'result',
        phase: 'error',
        error: 'exit code 3: broken',
        exitCode: 1,
      }),
    ]);
  });
});

describe('rolebox loop - (the loop command from stdin)', () => {
  it('runs the loop it reads, task lines and all', async () => {
    const result = await runCli(['loop', '-', '--worker', 'cat', '--delay', '0'], {
      cwd: dir,
      input: '|loop:1| summarise\nthe second line of the task\n',
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('  │ summarise\n  │ the second line of the task\n');
  });

  it('empty stdin: a usage error naming what it expects, exit 2, nothing written', async () => {
    const result = await runCli(['loop', '-', '--worker', 'cat'], { cwd: dir, input: '\n' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^rolebox: loop - found nothing on stdin; it expects the loop command there, e\.g\. echo "\|loop:3\| summarise the logs" \| rolebox loop - --worker <command> \[invalid_argument\]$/m,
    );
    expect(result.stdout).toBe('');
    expect(existsSync(join(dir, '.rolebox'))).toBe(false);
  });

  it('readLoopTextFromStdin refuses a terminal, an empty stream and too much', async () => {
    const refused = async (stream: NodeJS.ReadableStream & { isTTY?: boolean }) => {
      const error = await readLoopTextFromStdin(stream).catch((e: unknown) => e);
      expect(isRoleboxError(error, 'invalid_argument')).toBe(true);
      return (error as Error).message;
    };
    expect(await refused(Object.assign(Readable.from([]), { isTTY: true }))).toMatch(
      /^loop - reads the loop command from stdin, but stdin is a terminal; pipe it in/,
    );
    expect(await refused(Readable.from([' \n\t']))).toMatch(/^loop - found nothing on stdin/);
    expect(
      await refused(Readable.from([Buffer.alloc(STDIN_TEXT_MAX_BYTES), Buffer.from('x')])),
    ).toBe(
      `loop - read more than ${STDIN_TEXT_MAX_BYTES} bytes from stdin; a loop command is at most that`,
    );
    expect(await readLoopTextFromStdin(Readable.from(['|loop:2| a\n', 'b\n\n']))).toBe(
      '|loop:2| a\nb',
    );
  });
});

describe('rolebox show <session>', () => {
  it('shows the session, its loop and every round with its output; --json the same as data', async () => {
    const worker = 'cat > /dev/null; echo "answer $ROLEBOX_ROUND"';
    const ran = await cli(
      'loop',
      '|loop:2| go',
      '--worker',
      worker,
      '--delay',
      '0',
      '--session',
      'mine',
    );
    expect(ran.code, ran.stderr).toBe(0);
    const shown = await cli('show', 'mine');
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 6)).toEqual([
      'session:   mine',
      'phase:     idle',
      'functions: -',
      `worker:    ${worker}`,
      expect.stringMatching(/^loop: {6}loop_\w+ complete, round 2\/2, inherit mode$/),
      'task:      go',
    ]);
    expect(lines.slice(6)).toEqual([
      '',
      expect.stringMatching(/^round 1\/2: completed in \d+\.\ds \(task t_\w+\)$/),
      '  │ answer 1',
      '',
      expect.stringMatching(/^round 2\/2: completed in \d+\.\ds \(task t_\w+\)$/),
      '  │ answer 2',
    ]);

    const json = JSON.parse((await cli('show', 'mine', '--json')).stdout);
    expect(json).toEqual({
      session: 'mine',
      phase: 'idle',
      functions: [],
      loop: {
        id: expect.stringMatching(/^loop_/),
        phase: 'complete',
        round: '2/2',
        total: 2,
        mode: 'inherit',
        task: 'go',
        startedAt: expect.any(Number),
        updatedAt: expect.any(Number),
      },
      worker,
      rounds: [1, 2].map((round) =>
        expect.objectContaining({
          round,
          status: 'completed',
          output: { text: `answer ${round}`, bytes: 9, truncated: false },
          file: expect.stringMatching(/^\.rolebox\/tasks\/t_\w+\/stdout$/),
        }),
      ),
    });
  });

  it('a session that is not stored: a message naming it, exit 2', async () => {
    await cli('loop', '|loop:1| go', '--worker', 'cat', '--delay', '0');
    const result = await cli('show', 'nope');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^rolebox: no session "nope" in "\.rolebox\/state\.db" \(rolebox status lists them\) \[unknown_session\]$/m,
    );
    expect(result.stdout).toBe('');
  });
});

describe('rolebox loop on SIGTERM', () => {
  it('leaves at once with exit 143, everything saved; resume --json finishes it in JSON lines', async () => {
    const worker =
      'cat > /dev/null; echo $$ > "$GATES/started-$ROLEBOX_ROUND"; while [ ! -f "$GATES/gate" ]; do sleep 0.02; done; echo "answer $ROLEBOX_ROUND"';
    const env = { GATES: dir };
    const child: CliProcess = startCli(
      ['loop', '|loop:2| step', '--worker', worker, '--delay', '0', '--json'],
      { cwd: dir, env },
    );
    await child.line(/» round 1\/2 running/);
    await untilWritten(join(dir, 'started-1'));
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(143);
    expect(child.stderr()).not.toMatch(/^\s+at /m);
    // Like the first Ctrl-C, it says how to go on: last, once the store is closed.
    expect(child.stderr().trimEnd().split('\n').at(-1)).toBe(
      '» left on SIGTERM with everything saved; `rolebox resume` goes on',
    );
    const left = jsonLines(child.stdout());
    expect(left.at(-1)).toMatchObject({ type: 'result', phase: 'awaiting_worker', exitCode: 143 });
    expect((await cli('status')).stdout).toMatch(/loop_\w+ awaiting_worker 1\/2/);

    await writeFile(join(dir, 'gate'), '');
    const resumed = await runCli(['resume', '--json'], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const lines = jsonLines(resumed.stdout);
    expect(lines.map((line) => line.type)).toEqual([
      'note',
      'round',
      'note',
      'round',
      'note',
      'result',
    ]);
    expect(lines[1]).toMatchObject({ round: 1, output: { text: 'answer 1' } });
    expect(lines.at(-1)).toMatchObject({ type: 'result', phase: 'complete', exitCode: 0 });
  });
});

describe('a round that spans a restart', () => {
  it("after resume, its duration is the worker's run, not the time nobody watched, and its note says so", async () => {
    // The worker runs about a second; the loop is gone (SIGTERM) while it runs, and resume
    // comes 4 s later: the observed span is 4 s or more, the worker's run far less.
    const worker =
      'cat > /dev/null; echo $$ > "$GATES/started-$ROLEBOX_ROUND"; sleep 1; echo "answer $ROLEBOX_ROUND"';
    const env = { GATES: dir };
    const child: CliProcess = startCli(['loop', '|loop:1| step', '--worker', worker, '--json'], {
      cwd: dir,
      env,
    });
    await untilWritten(join(dir, 'started-1'));
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(143);
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const resumed = await runCli(['resume', '--json'], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const lines = jsonLines(resumed.stdout);
    const round = lines.find((line) => line.type === 'round');
    expect(round).toMatchObject({ round: 1, output: { text: 'answer 1' } });
    const ran = round?.durationMs as number;
    expect(ran).toBeGreaterThanOrEqual(900);
    expect(ran).toBeLessThan(3_500);
    const note = lines.find(
      (line) => line.type === 'note' && /round 1\/1 completed/.test(String(line.text)),
    );
    expect(note?.text).toMatch(
      new RegExp(`duration=${(ran / 1000).toFixed(1)}s, across a restart\\]$`),
    );
  });
});

describe('--json of the other commands', () => {
  it('replay --json prints the report as data: ok, or the divergence', async () => {
    const ok = await cli('replay', join(fixtures, 'approval-workflow.run.json'), '--json');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({
      ok: true,
      replayed: expect.any(Number),
      total: expect.any(Number),
    });
    const run = JSON.parse(await readFile(join(fixtures, 'approval-workflow.run.json'), 'utf8'));
    run.functions = run.functions.map((definition: { name: string }) =>
      definition.name === 'awaiting-approval' ? { ...definition, observe: [] } : definition,
    );
    await writeFile(join(dir, 'changed.run.json'), JSON.stringify(run));
    const diverged = await cli('replay', 'changed.run.json', '--json');
    expect(diverged.code).toBe(1);
    expect(JSON.parse(diverged.stdout)).toMatchObject({
      ok: false,
      divergence: { index: expect.any(Number), diff: expect.any(Array) },
    });
  });

  it('inspect --json says where it listens in one JSON line, and stops on SIGTERM', async () => {
    const child = startCli(['inspect', '--port', '0', '--json'], { cwd: dir });
    const listening = JSON.parse(await child.line(/^\{/));
    expect(listening).toEqual({
      type: 'listening',
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/),
      wsUrl: `ws://127.0.0.1:${listening.port}`,
      port: expect.any(Number),
      token: expect.stringMatching(/^[\w-]{32}$/),
    });
    expect((await fetch(listening.url)).status).toBe(200);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(child.stdout().trimEnd().split('\n')).toHaveLength(1);
  });

  it('restate serve --json says where the endpoint listens in one JSON line, and stops on SIGTERM', async () => {
    const child = startCli(['restate', 'serve', '--port', '0', '--json'], { cwd: dir });
    const listening = JSON.parse(await child.line(/^\{/));
    expect(listening).toEqual({
      type: 'listening',
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      pid: child.process.pid,
    });
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(child.stdout().trimEnd().split('\n')).toHaveLength(1);
  });
});
