import { describe, expect, it } from 'vitest';
import { followLoops } from '../src/cli/output.js';
import { RoleboxError } from '../src/index.js';
import type { HostEvent } from '../src/rolebox/host-events.js';

/** followLoops on a fake event source, with a save the test ends. */
function follow() {
  let handler: (event: HostEvent) => void = () => {};
  const out: string[] = [];
  const err: string[] = [];
  let endSave: (() => void) | undefined;
  const saving: Promise<void>[] = [];
  const follower = followLoops(
    (on) => {
      handler = on;
      return () => {};
    },
    () => 3,
    { out: (text) => out.push(text), err: (text) => err.push(text) },
    () => {
      const save = new Promise<void>((resolve) => (endSave = resolve));
      saving.push(save);
      return save;
    },
  );
  const note = (sessionId: string, text: string): HostEvent => ({
    type: 'note',
    sessionId,
    loopId: `loop_${sessionId}`,
    text,
  });
  /** Resolves once the drain has asked for its n-th save. */
  const saveAsked = async (n: number) => {
    while (saving.length < n) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return {
    emit: (event: HostEvent) => handler(event),
    note,
    out,
    err,
    saveAsked,
    endSave: () => endSave?.(),
    follower,
  };
}

describe('followLoops', () => {
  it("does not print the lines of a session dropped while their save was answered (another process owns it now); the other sessions' lines are printed", async () => {
    const run = follow();
    run.emit(run.note('S', 'note of S'));
    run.emit(run.note('T', 'note of T'));
    run.emit({
      type: 'round_started',
      sessionId: 'S',
      loopId: 'loop_S',
      round: 2,
      taskId: 't_2',
      workerSessionId: 't_2',
    });
    await run.saveAsked(1);
    // The save was refused for S: the rolebox dropped it and said so before the save ended.
    run.emit({
      type: 'error',
      sessionId: 'S',
      error: new RoleboxError('session_owned_elsewhere', 'session "S" is owned elsewhere now', {
        sessionId: 'S',
      }),
    });
    run.endSave();
    await run.follower.printed();
    expect(run.out).toEqual(['note of T']);
    expect(run.err).toEqual([]);
    // Later lines of S (the session taken back here) are printed again.
    run.emit(run.note('S', 'later note of S'));
    await run.saveAsked(2);
    run.endSave();
    await run.follower.printed();
    expect(run.out).toEqual(['note of T', 'later note of S']);
    run.follower.stop();
  });
});
