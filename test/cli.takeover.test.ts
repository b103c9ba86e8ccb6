import { describe, expect, it } from 'vitest';
import { followRolebox, waitForLoops } from '../src/cli/commands/loop.js';
import { createRolebox, MemorySnapshotStore } from '../src/index.js';
import {
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
} from '../src/testing/index.js';

// A CLI process that stalled beyond its lease (Ctrl-Z, a stopped VM) while another process
// took its session over must not wait for ever for a loop that now runs elsewhere.

const LEASE_MS = 30_000;

describe('waitForLoops when another process takes the session over', () => {
  it('lets the loop go with a message and exits 1 instead of waiting for ever', async () => {
    const store = new MemorySnapshotStore();
    const dispatcher = new ScriptedDispatcher(); // the worker never ends here
    const clock = new SimulatedClock(0);
    const rb = createRolebox({
      store,
      dispatcher,
      clock,
      ids: seededIdSource(5),
      leaseMs: LEASE_MS,
      idleMs: Number.POSITIVE_INFINITY,
      saveDebounceMs: 0,
    });
    const lines: string[] = [];
    const output = {
      out: (line: string) => lines.push(line),
      err: (line: string) => lines.push(line),
    };
    const follower = followRolebox(rb, output, () => 2);
    await rb.start();
    const session = await rb.openSession({ id: 'S' });
    const started = session.startLoop('|loop:2| step');
    if (!started.ok) throw new Error(started.reason);
    await settle();
    await rb.flush();
    const waiting = waitForLoops(rb, new Map([[started.loopId, 'S']]), output, follower);

    // This process stalls; another one, later, takes the session over.
    const other = createRolebox({
      store,
      dispatcher,
      clock: new SimulatedClock(LEASE_MS + 1),
      leaseMs: LEASE_MS,
      idleMs: Number.POSITIVE_INFINITY,
    });
    await other.start();
    await other.openSession({ id: 'S' });
    // Back from the stall: its next renewal fails, it drops the session, and the wait ends.
    clock.advance(LEASE_MS / 3);
    expect(await waiting).toBe(1);
    expect(lines).toContain(
      `» loop ${started.loopId} is driven by another process now (session S was taken over); this one let it go`,
    );
    expect(rb.sessions()).toEqual([]);
    await other.stop();
    await rb.stop();
  });
});
