import { z } from 'zod';
import { describeValue, RoleboxError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { SnapshotStore } from '../ports/snapshot-store.js';

/** The `format` of a stored pipeline guard-state record. */
export const PIPELINE_STATE_FORMAT = 'rolebox.pipeline.state';

const stateRecordSchema = z.object({
  format: z.literal(PIPELINE_STATE_FORMAT),
  version: z.literal(1),
  expiresAt: z.number(),
  value: z.unknown(),
});

/**
 * Values with a time to live kept as records of a SnapshotStore under one `$`-prefix (session
 * restore skips `$` records, so the rolebox's own store is fine). What an in-memory
 * `ExpiringMap` is to one process, this is across restarts: a value written before a crash is
 * read after it until it expires.
 *
 * Reads and writes of one key are serialised in this process, so a read-then-write (a dedupe
 * mark, a lane touch) is atomic for one pipeline per store; several processes writing the same
 * store need a backend with a compare-and-set of its own (Redis) behind the same interfaces.
 * Expired records read as missing and are deleted: at once when read, and all of them once per
 * as many writes as there were records at the last sweep (at least 1024), so the table does
 * not grow with keys that went quiet and a sweep costs O(1) per write on average.
 */
export class StoredExpiringRecords<T> {
  readonly #store: SnapshotStore;
  readonly #prefix: string;
  readonly #clock: Clock;
  readonly #parse: (value: unknown) => T | undefined;
  /** The last operation on each key still running: the next one on that key waits for it. */
  readonly #tails = new Map<string, Promise<unknown>>();
  #writesUntilSweep = 1024;
  #sweeping: Promise<void> | undefined;

  /**
   * Records under `prefix` (it should start with `$`); `parse` checks a stored value and
   * answers undefined when it is not one (the record is then refused as corrupt).
   */
  constructor(
    store: SnapshotStore,
    prefix: string,
    clock: Clock,
    parse: (value: unknown) => T | undefined,
  ) {
    this.#store = store;
    this.#prefix = prefix;
    this.#clock = clock;
    this.#parse = parse;
  }

  /**
   * Runs `update` on the live value of `key` (undefined when none) with no other operation on
   * that key in between; what it answers as `value` is written with `ttlMs` (or the key is
   * deleted, for `undefined`, or left alone, when `write` is false). Answers `result`.
   * Throws: `invalid_pipeline_record` naming a stored record that is not one of ours.
   */
  update<R>(
    key: string,
    update: (current: T | undefined) => {
      readonly result: R;
      readonly write?: boolean;
      readonly value?: T;
      readonly ttlMs?: number;
    },
  ): Promise<R> {
    const run = async (): Promise<R> => {
      const current = await this.#read(key);
      const next = update(current);
      if (next.write === false) return next.result;
      const id = this.#id(key);
      if (next.value === undefined) await this.#store.delete([id]);
      else {
        const expiresAt = this.#clock.now() + (next.ttlMs ?? 0);
        const record = { format: PIPELINE_STATE_FORMAT, version: 1, expiresAt, value: next.value };
        await this.#store.save([{ id, data: JSON.stringify(record) }]);
        this.#countWrite();
      }
      return next.result;
    };
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const done = previous.then(run, run);
    const tail = done.catch(() => {});
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return done;
  }

  /** The live value of `key`, or undefined (expired or never written). */
  get(key: string): Promise<T | undefined> {
    return this.update(key, (current) => ({ result: current, write: false }));
  }

  /** Deletes every expired record under the prefix; answers how many live ones are left. */
  async sweep(): Promise<number> {
    const now = this.#clock.now();
    const expired: string[] = [];
    let live = 0;
    for (const record of await this.#store.loadByPrefix(this.#prefix)) {
      const stored = readRecord(record.id, record.data);
      if (stored.expiresAt <= now) expired.push(record.id);
      else live += 1;
    }
    if (expired.length > 0) await this.#store.delete(expired);
    return live;
  }

  async #read(key: string): Promise<T | undefined> {
    const id = this.#id(key);
    const data = await this.#store.load(id);
    if (data === undefined) return undefined;
    const stored = readRecord(id, data);
    if (stored.expiresAt <= this.#clock.now()) {
      await this.#store.delete([id]);
      return undefined;
    }
    const value = this.#parse(stored.value);
    if (value === undefined)
      throw new RoleboxError(
        'invalid_pipeline_record',
        `stored pipeline state ${describeValue(id)} holds a value that is not one: ${describeValue(stored.value)}`,
        { id },
      );
    return value;
  }

  #countWrite(): void {
    if (--this.#writesUntilSweep > 0 || this.#sweeping) return;
    this.#sweeping = this.sweep()
      .then((live) => {
        this.#writesUntilSweep = Math.max(1024, live);
      })
      // A record a sweep cannot read stays (it is refused when its key is read); try again later.
      .catch(() => {
        this.#writesUntilSweep = 1024;
      })
      .finally(() => {
        this.#sweeping = undefined;
      });
  }

  // Any text is a key: encoded, `a:b` + `c` and `a` + `b:c` stay apart and no key reaches
  // outside the prefix.
  #id(key: string): string {
    return `${this.#prefix}${encodeURIComponent(key)}`;
  }
}

/** Parses one stored record. Throws: `invalid_pipeline_record` naming it. */
function readRecord(id: string, data: string): z.infer<typeof stateRecordSchema> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new RoleboxError(
      'invalid_pipeline_record',
      `stored pipeline state ${describeValue(id)} is not JSON`,
      { id },
    );
  }
  const result = stateRecordSchema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new RoleboxError(
      'invalid_pipeline_record',
      `stored pipeline state ${describeValue(id)} is malformed: ${issue?.path.join('.') || '(record)'}: ${issue?.message}`,
      { id },
    );
  }
  return result.data;
}
