// A second process on a SQLite store, for the ownership tests: reads one JSON command a
// line from stdin, answers one JSON line on stdout ({ id, result } or { id, error }).
//   tsx --conditions=rolebox-source store-child.ts <db> <ownerId>
import { hostname } from 'node:os';
import { createInterface } from 'node:readline';
import { SqliteSnapshotStore } from '../../src/adapters/sqlite-snapshot-store.js';
import { isRoleboxError } from '../../src/errors.js';
import type { SessionLease, StoreOwner } from '../../src/ports/snapshot-store.js';

const [dbPath, ownerId] = process.argv.slice(2) as [string, string];
const store = new SqliteSnapshotStore(dbPath);
const owner: StoreOwner = { ownerId, pid: process.pid, host: hostname() };

/** A command of the test; `go` releases a `race` that waits for it. */
interface Command {
  readonly id: number;
  readonly op: string;
  readonly args: readonly unknown[];
}

let go: (() => void) | undefined;

/** `claim` on `race:<i>` for i < n, every one as fast as possible. */
async function race(prefix: string, n: number): Promise<boolean[]> {
  const won: boolean[] = [];
  for (let i = 0; i < n; i++)
    won.push((await store.claim(`${prefix}${i}`, owner, 60_000, Date.now())).ok);
  return won;
}

/**
 * `n` times: claim `sessionId`; when granted, save a record with the lease and release it.
 * Answers the tokens granted, the saves refused (must be none) and the claims refused.
 */
async function hot(sessionId: string, n: number) {
  const tokens: number[] = [];
  const refusedSaves: number[] = [];
  let contended = 0;
  for (let i = 0; i < n; i++) {
    const claimed = await store.claim(sessionId, owner, 60_000, Date.now());
    if (!claimed.ok) {
      contended++;
      continue;
    }
    tokens.push(claimed.token);
    const lease: SessionLease = { sessionId, token: claimed.token };
    const data = JSON.stringify({ ownerId, token: claimed.token });
    const { refused } = await store.save([{ id: sessionId, data }], [lease], { now: Date.now() });
    if (refused.length > 0) refusedSaves.push(claimed.token);
    await store.release([lease]);
  }
  return { tokens, refusedSaves, contended };
}

async function perform(command: Command): Promise<unknown> {
  const [a, b, c, d] = command.args as [never, never, never, never];
  switch (command.op) {
    case 'owner':
      return owner;
    case 'claim':
      return store.claim(a, owner, b, c);
    case 'renew':
      return store.renew(a, owner, b, c);
    case 'release':
      return store.release(a);
    case 'save':
      return store.save(a, b, c);
    case 'delete':
      return store.delete(a, b, c);
    case 'setWakeUps':
      return store.setWakeUps(a, b, c);
    case 'race':
    case 'hot': {
      // Answer "ready" at once; start only on `go`, so both processes start together.
      await new Promise<void>((resolve) => {
        go = resolve;
        process.stdout.write(`${JSON.stringify({ id: command.id, ready: true })}\n`);
      });
      return command.op === 'race' ? race(a, b) : hot(a, b);
    }
    default:
      throw new Error(`unknown op ${command.op} (${String(d)})`);
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const command = JSON.parse(line) as Command;
  if (command.op === 'go') {
    go?.();
    return;
  }
  perform(command).then(
    (result) => process.stdout.write(`${JSON.stringify({ id: command.id, result })}\n`),
    (error: unknown) =>
      process.stdout.write(
        `${JSON.stringify({
          id: command.id,
          error: {
            code: isRoleboxError(error) ? error.code : undefined,
            message: (error as Error).message,
          },
        })}\n`,
      ),
  );
});
lines.on('close', () => {
  store.close().then(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ id: 0, result: 'started' })}\n`);
