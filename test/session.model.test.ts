import { describe, expect, it } from 'vitest';
import { createTestModel } from 'xstate/graph';
import type { TimedRuntimeEvent } from '../machines/index.js';
import { RUNTIME_EVENT_TYPES, WAITING_REASON_KINDS } from '../src/index.js';
import {
  RUNTIME_EVENT_SET,
  sendModelEvent,
  serializeSessionState,
  sessionModelEvents,
  sessionModelMachine,
} from './support/session-model.js';
import { sessionHarness } from './support/sessions.js';

// The session machine is the model; a real rolebox driven through session.send() is the
// system under test.
const model = createTestModel(sessionModelMachine, {
  input: { sessionId: 'S', at: 0 },
  events: sessionModelEvents as never,
  filterEvents: (_snapshot, event) => RUNTIME_EVENT_SET.has(event.type),
  serializeState: serializeSessionState as never,
  serializeEvent: (event) => JSON.stringify(event),
});

const STATE_KEYS = [
  'idle',
  'running',
  'done',
  'error',
  ...WAITING_REASON_KINDS.map((kind) => `waiting_user.${kind}`),
];
const paths = model.getShortestPaths();

describe('session machine model', () => {
  it('reaches every phase and every waiting-reason sub-state', () => {
    const reached = new Set<string>();
    for (const path of paths) {
      for (const step of path.steps) {
        const value = step.state.value as string | Record<string, string>;
        reached.add(typeof value === 'string' ? value : `waiting_user.${value.waiting_user}`);
      }
    }
    expect([...reached].sort()).toEqual([...STATE_KEYS].sort());
  });

  for (const path of paths) {
    const route = path.steps
      .slice(1)
      .map(({ event }) => event.type)
      .join(' → ');
    it(`${route || '(opened)'}`, async () => {
      const h = await sessionHarness();
      const expectWhere = (key: string) => () => expect(h.where()).toBe(key);
      await model.testPath(path, {
        states: Object.fromEntries(STATE_KEYS.map((key) => [key, expectWhere(key)])),
        events: Object.fromEntries(
          RUNTIME_EVENT_TYPES.map((type) => [
            type,
            ({ event }: { event: unknown }) =>
              void sendModelEvent(h.session, event as TimedRuntimeEvent),
          ]),
        ),
      });
    });
  }
});
