import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemorySnapshotStore } from '../src/index.js';
import { ScriptedDispatcher } from '../src/testing/index.js';
import { boot } from './support/persistence.js';

// Records written by rolebox 0.1 (loop machine version 1: a loop invoked actors for its I/O)
// restore on this code (version 2: the I/O is effects the runtime performs). The fixture
// was written by the 0.1 code: one loop awaiting its worker, one in the inter-round delay.
const STORED = join(import.meta.dirname, 'fixtures', 'stored-0.1', 'loops-in-flight.json');

function storedBy01() {
  const { records, tasks } = JSON.parse(readFileSync(STORED, 'utf8')) as {
    records: Record<string, unknown>;
    tasks: { taskId: string; key: string; status: string }[];
  };
  const store = new MemorySnapshotStore();
  for (const [id, envelope] of Object.entries(records))
    store.records.set(id, JSON.stringify(envelope));
  return { store, tasks };
}

describe('stores written by rolebox 0.1', () => {
  it('restore: the loops go on where they were, their invoked actors replaced by effects', async () => {
    const { store } = storedBy01();
    const v1 = JSON.parse(store.records.get('awaiting') as string);
    expect(v1.machineVersions.loop).toBe(1);
    const dispatcher = new ScriptedDispatcher();
    // The dispatcher the 0.1 process used: task-1 still runs, task-2 finished while it was down.
    await dispatcher.dispatchRound(
      { loopId: 'x', round: 1, originSessionId: 'awaiting', agent: 'default', prompt: '' },
      'loop_xb728i2zmord:1',
    );
    await dispatcher.dispatchRound(
      { loopId: 'y', round: 1, originSessionId: 'waiting', agent: 'default', prompt: '' },
      'loop_qvjqfhqxzgcs:1',
    );
    dispatcher.complete('task-2', 'first draft');
    const b = await boot({ store, dispatcher, limits: { interRoundDelayMs: 2_000 } }, 1_000);
    expect(b.report).toEqual({ restored: ['awaiting', 'waiting'], failed: [] });
    expect(b.rb.session('awaiting').view().loop).toMatchObject({
      phase: 'awaiting_worker',
      current: 1,
    });
    // The waiting loop's delay deadline is re-armed from its context and fires.
    expect(b.rb.session('waiting').view().loop).toMatchObject({ phase: 'dispatching', current: 2 });
    await b.advance(2_000);
    expect(dispatcher.tasks.map((task) => task.key)).toContain(
      `${b.rb.session('waiting').view().loop?.id}:2`,
    );
    // The awaiting loop is watched again: its worker's end advances it.
    dispatcher.complete('task-1', 'survey done');
    await b.advance(0);
    expect(b.rb.session('awaiting').view().loop).toMatchObject({ current: 2 });
    // Saved again, the records are current.
    await b.rb.flush();
    const saved = JSON.parse(store.records.get('awaiting') as string);
    expect(saved.machineVersions.loop).toBe(2);
    const loopChild = Object.values(
      saved.snapshot.children as Record<string, { src: string; snapshot: { children: object } }>,
    ).find((child) => child.src === 'loop');
    expect(loopChild?.snapshot.children).toEqual({});
  });
});
