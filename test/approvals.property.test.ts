// The approval gate under random interleavings (issue 25, SPEC §9): pausing signals, answers
// (unnamed, named, naming a stale request, carrying a stale seenVersion), idles, messages,
// other signals and restarts. Checked against a model of the requests after every step:
// never a gate open while a request is unanswered, every refusal changes nothing, and the
// requests in the view are exactly the model's.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createRolebox,
  defineFunction,
  MemorySnapshotStore,
  type SessionHandle,
} from '../src/index.js';
import { SimulatedClock, seededIdSource } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { fuzzSettings } from './support/fuzz.js';

type Step =
  | { kind: 'pause'; type: 'need_approval' | 'blocked' | 'need_clarification' }
  | { kind: 'answer' }
  | { kind: 'named'; n: number }
  | { kind: 'stale_version' }
  | { kind: 'reject'; n: number }
  | { kind: 'idle' }
  | { kind: 'message' }
  | { kind: 'progress' }
  | { kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('pause' as const),
    type: fc.constantFrom(
      'need_approval' as const,
      'blocked' as const,
      'need_clarification' as const,
    ),
  }),
  fc.constant({ kind: 'answer' as const }),
  fc.record({ kind: fc.constant('named' as const), n: fc.integer({ min: 1, max: 5 }) }),
  fc.constant({ kind: 'stale_version' as const }),
  fc.record({ kind: fc.constant('reject' as const), n: fc.integer({ min: 1, max: 5 }) }),
  fc.constant({ kind: 'idle' as const }),
  fc.constant({ kind: 'message' as const }),
  fc.constant({ kind: 'progress' as const }),
  fc.constant({ kind: 'restart' as const }),
);

const DEPLOY = defineFunction({ name: 'deploy', gate: 'signal_observed(answer)' });

async function open(store: MemorySnapshotStore) {
  const rb = createRolebox({
    store,
    clock: new SimulatedClock(1_000),
    ids: seededIdSource(5),
    functions: [DEPLOY],
  });
  await rb.start();
  return rb;
}

function deployOf(session: SessionHandle) {
  const fn = session.view().functions.find((candidate) => candidate.name === 'deploy');
  if (!fn) throw new Error('deploy is not in the view');
  return fn;
}

/** The model: each request's status, in order; what the code must agree with. */
type Model = ('open' | 'answered' | 'rejected')[];

/** Applies one step to the session and the model, checking what a refusal must be. */
function apply(session: SessionHandle, model: Model, current: Step): void {
  switch (current.kind) {
    case 'pause':
      session.signal({ type: current.type });
      model.push('open');
      return;
    case 'answer': {
      session.signal({ type: 'answer' });
      const oldest = model.indexOf('open');
      if (oldest >= 0) model[oldest] = 'answered';
      return;
    }
    case 'named':
    case 'reject': {
      const id = `deploy:r${current.n}`;
      const call = () =>
        current.kind === 'named' ? session.approve(id) : session.reject(id, { reason: 'no' });
      if (model[current.n - 1] !== 'open') {
        const before = session.view();
        expect(errorOf(call).code).toBe('stale_answer');
        expect(session.view()).toEqual(before);
        return;
      }
      call();
      model[current.n - 1] = current.kind === 'named' ? 'answered' : 'rejected';
      return;
    }
    case 'stale_version': {
      const { version } = deployOf(session);
      if (version === 0 || !model.includes('open')) return;
      const before = session.view();
      const refused = errorOf(() =>
        session.signal({ type: 'answer', payload: { seenVersion: version - 1 } }),
      );
      expect(refused.code).toBe('stale_approval');
      expect(session.view()).toEqual(before);
      return;
    }
    case 'idle':
      session.idle();
      return;
    case 'message':
      session.message('any news?');
      return;
    case 'progress':
      session.signal({ type: 'progress' });
      return;
    case 'restart':
      return;
  }
}

describe('approval gate, random interleavings', () => {
  it('never opens while a request is unanswered; refusals change nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 14 }), async (steps) => {
        let store = new MemorySnapshotStore();
        let rb = await open(store);
        let session = await rb.openSession({ id: 'S' });
        session.activate('deploy');
        const model: Model = [];
        for (const current of steps) {
          if (current.kind === 'restart') {
            await rb.flush();
            const copy = new MemorySnapshotStore();
            for (const [id, data] of store.records) copy.records.set(id, data);
            await rb.stop();
            store = copy;
            rb = await open(store);
            session = rb.session('S');
          }
          apply(session, model, current);
          const fn = deployOf(session);
          expect(fn.requests.map((request) => request.status)).toEqual(model);
          if (model.includes('open')) expect(fn.phase).toBe('gated');
          // Once a request was made, the gate is open only when the last one was answered.
          if (fn.phase === 'active' && model.length > 0) expect(model.at(-1)).toBe('answered');
        }
        await rb.stop();
      }),
      fuzzSettings(40),
    );
  }, 120_000);
});
