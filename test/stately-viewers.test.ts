// `inspect: { stately: { port } }`: a Node rolebox serves Stately viewers, and one that joins
// after the run is told every live actor (definition and current snapshot) before the live
// frames, as @statelyai/inspect's own receiver sees it (issue 27 item 22).
import { createWebSocketReceiver } from '@statelyai/inspect';
import { afterEach, describe, expect, it } from 'vitest';
import { createRolebox, defineFunction, type Rolebox } from '../src/index.js';
import { freePort } from '../src/restate/local-server.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

type Frame = {
  type: string;
  name?: string;
  sessionId: string;
  parentId?: string;
  definition?: string;
  snapshot?: { value?: unknown; status?: string };
};

const answered = 'signal_observed(answer)';
const FUNCTIONS = [defineFunction({ name: 'approval', gate: answered, continue_until: answered })];

let rb: Rolebox | undefined;
afterEach(async () => {
  await rb?.stop();
  rb = undefined;
});

/** A Stately receiver on the rolebox's port, and every frame it got, in order. */
function joinLate(port: number) {
  const frames: Frame[] = [];
  createWebSocketReceiver({ server: `ws://127.0.0.1:${port}` }).subscribe((frame) => {
    frames.push(frame as unknown as Frame);
  });
  return frames;
}

/** Waits (real time: the frames cross a socket) until `check` holds. */
async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`never got: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const announced = (frames: Frame[], name: string) =>
  frames.find((frame) => frame.type === '@xstate.actor' && frame.name === name);

describe('inspect: { stately: { port } } in Node', () => {
  it(
    'tells a viewer that joins after the run every live actor, definition and current state first, then the live frames',
    async () => {
      const port = await freePort();
      rb = createRolebox({ functions: FUNCTIONS, inspect: { stately: { port } } });
      await rb.start();
      // A viewer there from the start: once it has the last frame, the run's frames are all out.
      const early = joinLate(port);
      await until(() => announced(early, 'rolebox') !== undefined, 'the early viewer connected');
      const session = await rb.openSession({ id: 'S1' });
      session.activate('approval');
      session.signal({ type: 'need_approval', payload: { reason: 'prod' } });
      // Enough traffic that a tail of 200 frames would hold no announcement at all.
      for (let i = 0; i < 150; i++) session.setSlot('n', i);
      await until(
        () =>
          early.some(
            (frame) =>
              frame.type === '@xstate.snapshot' &&
              (frame.snapshot as { context?: { slots?: { n?: number } } }).context?.slots?.n ===
                149,
          ),
        'the last frame of the run',
      );

      const late = joinLate(port);
      await until(() => announced(late, 'fn:S1:approval') !== undefined, 'the function announced');
      const fn = announced(late, 'fn:S1:approval') as Frame;
      const sessionActor = announced(late, 'session:S1') as Frame;
      const root = announced(late, 'rolebox') as Frame;
      // Announced with its chart and the state it is in now, not the one it started in.
      expect(JSON.parse(fn.definition as string)).toMatchObject({ states: expect.any(Object) });
      expect(fn.snapshot?.value).toBe('gated');
      expect((sessionActor.snapshot as { context?: { slots?: unknown } }).context?.slots).toEqual({
        n: 149,
      });
      // Parents before children, each under its parent.
      expect(late.indexOf(root)).toBeLessThan(late.indexOf(sessionActor));
      expect(late.indexOf(sessionActor)).toBeLessThan(late.indexOf(fn));
      expect(fn.parentId).toBe(sessionActor.sessionId);
      // Announcements only: no replayed tail of old frames.
      expect(late.every((frame) => frame.type === '@xstate.actor')).toBe(true);

      // Then the live frames.
      session.signal({ type: 'answer' });
      session.idle();
      await until(
        () =>
          late.some(
            (frame) =>
              frame.type === '@xstate.snapshot' &&
              frame.sessionId === fn.sessionId &&
              frame.snapshot?.value === 'complete',
          ),
        'the function complete, live',
      );

      // A session closed since is gone from the system: a later viewer is not told of it.
      await session.close();
      const other = await rb.openSession({ id: 'S2' });
      other.setSlot('k', 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const later = joinLate(port);
      await until(() => announced(later, 'session:S2') !== undefined, 'S2 announced');
      expect(announced(later, 'session:S1')).toBeUndefined();
      expect(announced(later, 'fn:S1:approval')).toBeUndefined();
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'serves a person the page that shows Stately’s inspector, and closes with the rolebox',
    async () => {
      const port = await freePort();
      rb = createRolebox({
        inspect: { stately: { port, url: 'http://127.0.0.1:1/inspect' } },
      });
      await rb.start();
      const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
      expect(page).toContain('"http://127.0.0.1:1/inspect"');
      expect(page).toContain("new WebSocket('ws://' + location.host)");
      await rb.stop();
      rb = undefined;
      await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'warns, once started, when its port is taken, and the rolebox runs on',
    async () => {
      const port = await freePort();
      rb = createRolebox({ inspect: { stately: { port } } });
      await rb.start();
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(warning.message);
      process.on('warning', onWarning);
      const second = createRolebox({ inspect: { stately: { port } } });
      try {
        await second.start();
        await until(() => warnings.length > 0, 'the warning');
        expect(warnings[0]).toContain(`the Stately viewers' port ${port} cannot be used`);
        expect((await second.openSession({ id: 'S1' })).view().phase).toBe('idle');
      } finally {
        process.off('warning', onWarning);
        await second.stop();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
