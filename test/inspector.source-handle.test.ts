// Sources on their own: a source's actors are kept under its own app, read-only, and a
// page's replay frame goes to the source that takes page frames.
import { describe, expect, it } from 'vitest';
import type { InspectorSource } from '../inspector/inspector-types.js';
import { KeptStore } from '../inspector/kept-store.js';
import { addSource, sourceFrame, sourcePageMessages } from '../inspector/sources.js';
import { SimulatedClock } from '../src/testing/simulated-clock.js';

function setup(maxKeptBytes = 1024 * 1024) {
  const logged: string[] = [];
  const toPages: Record<string, unknown>[] = [];
  const log = (message: string) => logged.push(message);
  const broadcast = (text: string) => toPages.push(JSON.parse(text) as Record<string, unknown>);
  const store = new KeptStore({
    historyLimit: 100,
    actorLimit: 100,
    maxKeptBytes,
    maxDepth: 8,
    clock: new SimulatedClock(),
    log,
    broadcast,
  });
  return { store, logged, toPages, log, broadcast };
}

describe('sources', () => {
  it('reports, updates and forgets actors under the source’s own app', () => {
    const { store, toPages, log, broadcast } = setup();
    const handle = addSource(store, { kind: 'store', name: 'store db' }, log, broadcast);
    expect(toPages[0]).toMatchObject({
      type: 'app',
      app: { id: handle.app, source: 'store', connected: true },
    });
    handle.actor({ sessionId: 's1', name: 'session:s1', snapshot: { value: 'a' } });
    handle.snapshot('s1', { value: 'b' });
    expect(store.actors.get(`${handle.app}/s1`)?.snapshot).toBe('{"value":"b"}');
    handle.forget(['s1', 'unknown']);
    expect(store.actors.size).toBe(0);
    expect(toPages.at(-1)).toEqual({ type: 'forget', actors: [`${handle.app}/s1`] });
    handle.broadcast('{"type":"mine"}');
    expect(toPages.at(-1)).toEqual({ type: 'mine' });
  });

  it('logs, naming the source, a record that oversteps a bound', () => {
    const { store, logged, log, broadcast } = setup(500);
    const handle = addSource(store, { kind: 'replay', name: 'run' }, log, broadcast);
    handle.actor({ sessionId: 's', name: 'big', snapshot: 'x'.repeat(1_000) });
    handle.snapshot('nobody', {});
    expect(logged).toEqual([
      expect.stringMatching(
        /^source run: actor "big": \d+ bytes is more than maxKeptBytes \(500\)$/,
      ),
      'source run: snapshot for unknown actor nobody',
    ]);
  });

  it('hands a replay frame to the source that takes page frames, else says why not', () => {
    const { store, log, broadcast } = setup();
    expect(sourceFrame(store, { type: 'replay' })).toBe('no replay running');
    const frames: unknown[] = [];
    const replay: InspectorSource = {
      kind: 'replay',
      name: 'run',
      onPageFrame: (frame) => {
        frames.push(frame);
        return frame.to === 'bad' ? 'bad position' : undefined;
      },
      pageMessage: () => '{"type":"replay_position"}',
    };
    addSource(store, { kind: 'store', name: 'db' }, log, broadcast);
    addSource(store, replay, log, broadcast);
    expect(sourceFrame(store, { type: 'replay', to: 1 })).toBeUndefined();
    expect(sourceFrame(store, { type: 'replay', to: 'bad' })).toBe('bad position');
    expect(frames).toHaveLength(2);
    expect(sourcePageMessages(store)).toEqual(['{"type":"replay_position"}']);
  });
});
