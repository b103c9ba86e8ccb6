// `rolebox send <session> <command> [args...]`: one row of the command table run on a stored
// session. Through `main` in this process (what the launcher runs) and, where another
// command reads what it stored, through the real `rolebox` process.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteSnapshotStore } from '../src/adapters/sqlite-snapshot-store.js';
import { FAILURE_EXIT_CODE, USAGE_EXIT_CODE } from '../src/cli/exit-codes.js';
import { main } from '../src/cli/main.js';
import type { Output } from '../src/cli/output.js';
import { SEND_COMMANDS, sendUsage } from '../src/cli/send-commands.js';
import { createRolebox } from '../src/index.js';
import {
  ARTIFACT_COMMAND_ROWS,
  type CommandRows,
  SESSION_COMMAND_ROWS,
} from '../src/rolebox/command-table.js';
import { ROLEBOX_BIN, runCli } from './support/cli.js';
import { killTaskGroups, killTracked, PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const APPROVAL = `---
name: approval
gate: user_approval()
continue_until: signal_observed(answer)
---
Ask for approval, wait for the user, then answer.
`;

let dir: string;
let store: string;
let functions: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rolebox-send-'));
  store = join(dir, 'state.db');
  functions = join(dir, 'functions');
  await mkdir(functions);
  await writeFile(join(functions, 'approval.md'), APPROVAL);
});

afterEach(async () => {
  await killTracked();
  killTaskGroups(join(dir, '.rolebox', 'tasks'));
  await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
});

/** Stores a new session `id`, as a host would. */
async function storeSession(id: string): Promise<void> {
  const sqlite = new SqliteSnapshotStore(store);
  const rb = createRolebox({ store: sqlite, saveDebounceMs: 0 });
  await rb.start();
  await rb.openSession({ id });
  await rb.flush();
  await rb.stop();
  await sqlite.close();
}

/** The stored record of session `id`, as it is now (undefined when there is none). */
async function recordOf(id: string): Promise<string | undefined> {
  const sqlite = new SqliteSnapshotStore(store);
  try {
    return await sqlite.load(id);
  } finally {
    await sqlite.close();
  }
}

/** `rolebox send ...args --store <the test's store>`, through `main`. */
async function send(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const output: Output = { out: (line) => out.push(line), err: (line) => err.push(line) };
  const code = await main(['send', ...args, '--store', store], output);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('rolebox send', () => {
  it('runs a command on the stored session: `rolebox show` sees what it changed', async () => {
    await storeSession('s1');
    const activated = await send('s1', 'activate', 'approval', '--functions', functions);
    expect(activated).toEqual({ code: 0, out: 'activate: done (session s1)', err: '' });
    // The session's functions are its definitions': without them it cannot be restored.
    const without = await send('s1', 'idle');
    expect(without.code).toBe(USAGE_EXIT_CODE);
    expect(without.err).toContain(
      `function "approval" is not defined any more; pass --functions <dir> with the session's function definitions [invalid_snapshot]`,
    );
    const shown = await runCli(['show', 's1', '--store', store, '--json'], { cwd: dir });
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout).functions).toEqual([
      { name: 'approval', phase: 'gated', live: true },
    ]);
    // A command's answer is printed as it came back: as JSON for a program.
    const message = await send('s1', 'message', 'hello there', '--json', '--functions', functions);
    expect(message.code).toBe(0);
    expect(JSON.parse(message.out)).toEqual({
      session: 's1',
      command: 'message',
      result: { loopStopped: false },
    });
  });

  it('killed (SIGKILL) once the command is stored, it has printed nothing, and the change is there', async () => {
    await storeSession('s1');
    const killed = await runCli(['send', 's1', 'setSlot', 'mark', '1', '--store', store], {
      cwd: dir,
      env: { ROLEBOX_CRASH_AT: 'send-saved' },
    });
    expect(killed.code).toBe(128 + 9);
    expect(killed.stdout).toBe('');
    const view = JSON.parse((await send('s1', 'view', '--json')).out).result;
    expect(view.slots).toEqual({ mark: 1 });
  });

  it('runs a read: prints the view and the artifacts, and saves nothing of the session', async () => {
    await storeSession('s1');
    const before = await recordOf('s1');
    const view = await send('s1', 'view', '--json');
    expect(view.code).toBe(0);
    expect(JSON.parse(view.out)).toMatchObject({
      session: 's1',
      command: 'view',
      result: { id: 's1', phase: 'idle', functions: [], loop: null },
    });
    const list = await send('s1', 'artifacts.list');
    expect(list).toEqual({ code: 0, out: '[]', err: '' });
    expect(await recordOf('s1')).toBe(before);
  });

  it('takes each argument as JSON, or as text where the parameter is a string', async () => {
    await storeSession('s1');
    expect((await send('s1', 'setSlot', 'plain', 'hello')).code).toBe(0);
    expect((await send('s1', 'setSlot', 'json', '{"n":42}')).code).toBe(0);
    expect((await send('s1', 'setSlot', 'number', '42')).code).toBe(0);
    const written = await send(
      's1',
      'artifacts.write',
      '{"name":"notes","content":"42"}',
      '--json',
    );
    expect(written.code).toBe(0);
    const view = JSON.parse((await send('s1', 'view', '--json')).out).result;
    expect(view.slots).toEqual({ plain: 'hello', json: { n: 42 }, number: 42 });
    expect(view.artifacts).toMatchObject([{ name: 'notes', status: 'drafted' }]);
    // `42` where a string is taken is the text "42" (here an artifact id that does not exist).
    const missing = await send('s1', 'artifacts.require', '42');
    expect(missing.code).toBe(USAGE_EXIT_CODE);
    expect(missing.err).toContain('[unknown_artifact]');
    expect(missing.err).toContain('"42"');
  });

  it.each([
    [['stopLoop', '{"now":"yes"}'], 'send stopLoop: options.now {"now":"yes"} is refused'],
    [['artifacts.setStatus', 'a1', 'done'], 'send artifacts.setStatus: status "done" is refused'],
    [['send', '{"type":"made_up"}'], 'send send: event {"type":"made_up"} is refused'],
    [['message'], 'send message: text is missing (message <text>)'],
    [['setSlot', 'key'], 'send setSlot: value is missing (setSlot <key> <value>)'],
    [['idle', 'now'], 'send idle takes 0 argument(s) (idle), got 1: "now" is one too many'],
  ])(
    'refuses a bad argument %j: invalid_argument naming it, exit 2, nothing saved',
    async (args, message) => {
      await storeSession('s1');
      const before = await recordOf('s1');
      const refused = await send('s1', ...args);
      expect(refused.code).toBe(USAGE_EXIT_CODE);
      expect(refused.out).toBe('');
      expect(refused.err).toContain(message);
      expect(refused.err).toMatch(/\[invalid_argument\]$/);
      expect(await recordOf('s1')).toBe(before);
    },
  );

  it("refuses what the session refuses with the method's code, and saves nothing", async () => {
    await storeSession('s1');
    const before = await recordOf('s1');
    const refused = await send('s1', 'resume', 'approval');
    expect(refused.code).toBe(USAGE_EXIT_CODE);
    expect(refused.err).toMatch(/approval.*\[(unknown_function|function_not_active)\]$/);
    expect(await recordOf('s1')).toBe(before);
  });

  it('refuses an unknown command, listing every command there is', async () => {
    await storeSession('s1');
    const refused = await send('s1', 'approveAll', 'd1');
    expect(refused.code).toBe(USAGE_EXIT_CODE);
    expect(refused.err).toContain(
      'unknown command "approveAll"; the commands are: send, toolCall,',
    );
    for (const name of SEND_COMMANDS.keys()) expect(refused.err).toContain(name);
  });

  it('refuses a session the store does not hold, a closed one included, and creates none', async () => {
    await storeSession('s1');
    expect(await send('s1', 'close')).toEqual({
      code: 0,
      out: 'close: done (session s1)',
      err: '',
    });
    expect(await recordOf('s1')).toBeUndefined();
    for (const id of ['s1', 'nobody']) {
      const refused = await send(id, 'idle');
      expect(refused.code).toBe(USAGE_EXIT_CODE);
      expect(refused.err).toContain(`no session "${id}" in`);
      expect(refused.err).toMatch(/\[unknown_session\]$/);
      expect(await recordOf(id)).toBeUndefined();
    }
    // Nor a store that is not there: it is not created.
    const out: string[] = [];
    const output: Output = { out: (line) => out.push(line), err: (line) => out.push(line) };
    const missing = join(dir, 'missing.db');
    expect(await main(['send', 's1', 'view', '--store', missing], output)).toBe(USAGE_EXIT_CODE);
    expect(out.join('\n')).toContain(`no store at "${missing}"`);
  });

  it('starts no loop without --worker, saying to pass one; a refused loop exits 1', async () => {
    await storeSession('s1');
    const before = await recordOf('s1');
    const refused = await send('s1', 'startLoop', '|loop:2| summarise');
    expect(refused.code).toBe(USAGE_EXIT_CODE);
    expect(refused.err).toContain('pass --worker');
    expect(refused.err).toMatch(/\[no_dispatcher\]$/);
    expect(await recordOf('s1')).toBe(before);
    // The session answers `{ ok: false }` (it runs a loop already): printed, exit 1.
    const tasks = join(dir, '.rolebox', 'tasks');
    const worker = ['--worker', 'sleep 30', '--tasks', tasks];
    const started = await send('s1', 'startLoop', '|loop:2| summarise', ...worker, '--json');
    expect(started.code, started.err).toBe(0);
    const { loopId } = JSON.parse(started.out).result;
    expect(started.err).toContain(`loop ${loopId} started; \`rolebox resume\` runs it`);
    const second = await send('s1', 'startLoop', '|loop:2| again', ...worker, '--json');
    expect(second.code).toBe(FAILURE_EXIT_CODE);
    expect(JSON.parse(second.out).result).toMatchObject({ ok: false });
    // The loop records its worker for `rolebox resume`.
    const view = JSON.parse((await send('s1', 'view', '--json')).out).result;
    expect(view.slots['cli.loop']).toEqual({ loopId, worker: 'sleep 30' });
    expect(view.loop).toMatchObject({ id: loopId });
  });

  it('a loop it starts records its worker: `rolebox resume` runs it to the end, each round once', async () => {
    await storeSession('s1');
    const started = await send('s1', 'startLoop', '|loop:2| say hi', '--worker', 'cat', '--json');
    expect(started.code, started.err).toBe(0);
    const { loopId } = JSON.parse(started.out).result;
    const resumed = await runCli(['resume', '--store', store, '--delay', '0'], { cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('» worker: cat');
    const shown = await runCli(['show', 's1', '--store', store, '--json'], { cwd: dir });
    const show = JSON.parse(shown.stdout);
    expect(show.loop).toMatchObject({ id: loopId, phase: 'complete', round: '2/2' });
    expect(show.rounds.map((round: { round: number }) => round.round)).toEqual([1, 2]);
    expect(new Set(show.rounds.map((round: { task: string }) => round.task)).size).toBe(2);
  });

  it('--help lists every row of the command table with its parameters, then the exit codes', async () => {
    const out: string[] = [];
    const output: Output = { out: (line) => out.push(line), err: (line) => out.push(line) };
    expect(await main(['send', '--help'], output)).toBe(0);
    const help = out.join('\n');
    const rows = [
      ...Object.entries(SESSION_COMMAND_ROWS as CommandRows).map(([method, row]) => ({
        name: method,
        row,
      })),
      ...Object.entries(ARTIFACT_COMMAND_ROWS as CommandRows).map(([method, row]) => ({
        name: `artifacts.${method}`,
        row,
      })),
    ];
    expect(rows.length).toBe(SEND_COMMANDS.size);
    for (const { name, row } of rows) {
      const command = SEND_COMMANDS.get(name);
      expect(command?.row, name).toBe(row);
      const usage = sendUsage(command as NonNullable<typeof command>);
      expect(
        usage
          .split(' ')
          .slice(1)
          .map((part) => part.slice(1, -1)),
      ).toEqual(row.parameters);
      expect(help).toMatch(
        new RegExp(
          `^ {2}${usage.replace(/[.[\]]/g, '\\$&')} +${row.kind === 'read' ? 'read' : 'command'}`,
          'm',
        ),
      );
    }
    expect(help.trimEnd()).toMatch(/Exit codes:(\n {2}\d+ +.*)+$/);
  });

  it("the README's example runs as written", async () => {
    const readme = await readFile(join(import.meta.dirname, '..', 'README.md'), 'utf8');
    const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
      .map((match) => match[1] as string)
      .find((body) => body.includes('rolebox send demo'));
    const lines = (block ?? '')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
    expect(lines.length).toBeGreaterThan(3);
    const rolebox = `"${process.execPath}" "${ROLEBOX_BIN}"`;
    let facts = '';
    for (const line of lines) {
      expect(line).toMatch(/^npx rolebox /);
      const { stdout } = await promisify(execFile)(
        'sh',
        ['-c', line.replace(/^npx rolebox/, rolebox)],
        {
          cwd: dir,
        },
      );
      if (line.includes(' facts --json')) facts = stdout;
    }
    expect(JSON.parse(facts)).toMatchObject({
      session: 'demo',
      command: 'facts',
      result: [{ id: 'art-1', name: 'notes', status: 'accepted' }],
    });
    const gone = await runCli(['send', 'demo', 'view'], { cwd: dir });
    expect(gone.code).toBe(USAGE_EXIT_CODE);
    expect(gone.stderr).toContain('[unknown_session]');
  });
});
