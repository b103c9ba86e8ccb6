import { describe, expect, it } from 'vitest';
import { ARTIFACT_NAME_RULE } from '../src/base/input-limits.js';
import {
  ARTIFACT_STATUSES,
  type ArtifactStatus,
  createRolebox,
  defineFunction,
  MemorySnapshotStore,
  parseCondition,
} from '../src/index.js';
import { ARTIFACT_TRANSITIONS } from '../src/session/artifact-lifecycle.js';
import { SimulatedClock } from '../src/testing/index.js';
import { errorOf } from './support/errors.js';
import { phaseOf, startWith } from './support/rolebox.js';
import { sessionHarness } from './support/sessions.js';

/** Legal status paths from a fresh draft to each status. */
const PATHS: Record<ArtifactStatus, ArtifactStatus[]> = {
  drafted: [],
  under_review: ['under_review'],
  accepted: ['under_review', 'accepted'],
  rejected: ['under_review', 'rejected'],
  revision_requested: ['under_review', 'revision_requested'],
  superseded: ['superseded'],
};

describe('artifact lifecycle (SPEC §4.1): every status change', () => {
  for (const from of ARTIFACT_STATUSES) {
    for (const to of ARTIFACT_STATUSES) {
      const legal = ARTIFACT_TRANSITIONS[from].includes(to);
      it(`${from} → ${to} is ${legal ? 'legal' : 'refused'}`, async () => {
        const h = await sessionHarness();
        const draft = h.session.artifacts.write({ name: 'report', workerId: 'w', content: 'v1' });
        for (const step of PATHS[from]) h.session.artifacts.setStatus(draft.id, step);
        expect(h.session.artifacts.require(draft.id).status).toBe(from);
        if (legal) {
          h.clock.advance(10);
          expect(h.session.artifacts.setStatus(draft.id, to)).toMatchObject({
            id: draft.id,
            status: to,
            updatedAt: 1_010,
          });
        } else {
          const before = h.persisted();
          const error = errorOf(() => h.session.artifacts.setStatus(draft.id, to));
          expect(error.code).toBe('invalid_artifact_transition');
          expect(error.message).toContain(`cannot go from ${from} to "${to}"`);
          expect(h.persisted()).toBe(before);
        }
      });
    }
  }

  it('the legal changes are exactly those of the specification', () => {
    expect(ARTIFACT_TRANSITIONS).toEqual({
      drafted: ['under_review', 'superseded'],
      under_review: ['accepted', 'rejected', 'revision_requested', 'superseded'],
      accepted: ['superseded'],
      rejected: ['superseded'],
      revision_requested: ['superseded'],
      superseded: [],
    });
  });
});

describe('artifacts', () => {
  it('a draft is edited in place; a reviewed version is superseded by a new draft', async () => {
    const h = await sessionHarness();
    const first = h.session.artifacts.write({ name: 'report', content: 'v1' });
    h.clock.advance(5);
    const edited = h.session.artifacts.write({
      name: 'report',
      content: 'v1.1',
      summary: 'typo fixed',
    });
    expect(edited).toMatchObject({
      id: first.id,
      content: 'v1.1',
      summary: 'typo fixed',
      status: 'drafted',
      createdAt: 1_000,
      updatedAt: 1_005,
    });
    h.session.artifacts.setStatus(first.id, 'under_review');
    h.session.artifacts.setStatus(first.id, 'accepted');
    const second = h.session.artifacts.write({ name: 'report', content: 'v2' });
    expect(second).toMatchObject({ id: 'art-2', status: 'drafted', content: 'v2' });
    expect(h.session.artifacts.list().map((artifact) => [artifact.id, artifact.status])).toEqual([
      ['art-1', 'superseded'],
      ['art-2', 'drafted'],
    ]);
    // The superseded version is no longer a fact, and the new one is not one yet.
    expect(h.session.facts()).toEqual([]);
  });

  it('facts() never returns an artifact that is not accepted, whatever happens', async () => {
    const h = await sessionHarness();
    // A seeded random walk over writes and legal status changes.
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const names = ['a', 'b', 'c'];
    for (let step = 0; step < 300; step++) {
      const artifacts = h.session.artifacts.list();
      if (random() < 0.3 || artifacts.length === 0) {
        h.session.artifacts.write({
          name: names[Math.floor(random() * names.length)] as string,
          content: `step ${step}`,
        });
      } else {
        const artifact = artifacts[Math.floor(random() * artifacts.length)];
        const next = artifact ? ARTIFACT_TRANSITIONS[artifact.status] : [];
        const to = next[Math.floor(random() * next.length)];
        if (artifact && to) h.session.artifacts.setStatus(artifact.id, to);
      }
      const facts = h.session.facts();
      expect(facts.every((artifact) => artifact.status === 'accepted')).toBe(true);
      expect(facts).toEqual(
        h.session.artifacts.list().filter((artifact) => artifact.status === 'accepted'),
      );
    }
    expect(h.session.artifacts.list().length).toBeGreaterThan(20);
  });

  it('refuses bad input and unknown artifacts, changing nothing', async () => {
    const h = await sessionHarness();
    h.session.artifacts.write({ name: 'report' });
    const before = h.persisted();
    expect(errorOf(() => h.session.artifacts.write({ name: '' })).code).toBe('invalid_argument');
    for (const name of ['ends in a space ', 'has(parens)', 'a,b', '-dash first', 'x'.repeat(129)])
      expect(errorOf(() => h.session.artifacts.write({ name })).code, name).toBe(
        'invalid_argument',
      );
    expect(
      errorOf(() => h.session.artifacts.write({ name: 'ok', content: 42 as never })).message,
    ).toContain('content must be a string');
    expect(errorOf(() => h.session.artifacts.write(null as never)).code).toBe('invalid_argument');
    expect(errorOf(() => h.session.artifacts.setStatus('art-9', 'accepted')).code).toBe(
      'unknown_artifact',
    );
    expect(errorOf(() => h.session.artifacts.setStatus('art-1', 'approved' as never)).code).toBe(
      'invalid_artifact_transition',
    );
    expect(errorOf(() => h.session.artifacts.require('art-9')).message).toContain('"art-9"');
    expect(h.persisted()).toBe(before);
  });

  it('lives in an @xstate/store actor, a child of its session', async () => {
    const h = await sessionHarness();
    h.session.artifacts.write({ name: 'report', content: 'x' });
    const store = h.rb.system.system.get('artifacts:S');
    expect(store?.getSnapshot()).toMatchObject({
      status: 'active',
      context: { nextSeq: 2, artifacts: [{ id: 'art-1', name: 'report' }] },
    });
    const persisted = h.rb.system.system.get('session:S')?.getPersistedSnapshot() as unknown as {
      children: Record<string, { src: string }>;
    };
    expect(persisted.children.artifacts?.src).toBe('artifacts');
  });

  it('is spawned with the first artifact: a session that writes none has no store actor and its record no store child', async () => {
    const store = new MemorySnapshotStore();
    const boot = async () => {
      const rb = createRolebox({ store, clock: new SimulatedClock(1_000) });
      await rb.start();
      return rb;
    };
    const children = () =>
      Object.keys(
        (JSON.parse(store.records.get('S') as string) as { snapshot: { children: object } })
          .snapshot.children,
      );
    const first = await boot();
    const session = await first.openSession({ id: 'S' });
    expect(first.system.system.get('artifacts:S')).toBeUndefined();
    expect(session.artifacts.list()).toEqual([]);
    expect(session.view().artifacts).toEqual([]);
    await first.stop();
    expect(children()).toEqual([]);
    // Restored without one, the session still gets one with its first write.
    const second = await boot();
    const again = second.session('S');
    expect(second.system.system.get('artifacts:S')).toBeUndefined();
    expect(again.artifacts.write({ name: 'report', content: 'x' }).id).toBe('art-1');
    expect(second.system.system.get('artifacts:S')?.getSnapshot()).toMatchObject({
      status: 'active',
      context: { nextSeq: 2 },
    });
    await second.stop();
    expect(children()).toEqual(['artifacts']);
    const third = await boot();
    expect(third.session('S').artifacts.require('art-1')).toMatchObject({ content: 'x' });
    await third.stop();
  });

  it('names may be in any script: a Chinese name is written, captured and matched by artifact_exists', async () => {
    const { session } = await startWith([
      { name: 'capture', observe: [{ tool: 'signal', capture_payload_as: '审批数据' }] },
      {
        name: 'waits',
        gate: 'all(artifact_exists(设计文档), artifact_exists(审批数据))',
        continue_until: 'artifact_exists(设计 文档 v2)',
      },
    ]);
    session.activate('capture');
    session.activate('waits');
    expect(phaseOf(session, 'waits')).toBe('gated');
    expect(session.artifacts.write({ name: '设计文档', content: '草稿' }).name).toBe('设计文档');
    expect(phaseOf(session, 'waits')).toBe('gated');
    session.signal({ type: 'progress', payload: { 结论: '同意' } });
    expect(phaseOf(session, 'waits')).toBe('active');
    expect(session.view().artifacts.map((artifact) => [artifact.name, artifact.content])).toEqual([
      ['设计文档', '草稿'],
      ['审批数据', '{"结论":"同意"}'],
    ]);
    session.artifacts.write({ name: '设计 文档 v2' });
    session.idle();
    expect(phaseOf(session, 'waits')).toBe('complete(completed)');
    for (const name of ['नमस्ते', 'Überblick', 'report-2.md', 'notes/a:b', 'x'.repeat(128)])
      expect(session.artifacts.write({ name }).name).toBe(name);
  });

  it('capture_payload_as and artifact_exists take the same names as write', () => {
    expect(() =>
      defineFunction({ name: 'a', observe: [{ tool: 'signal', capture_payload_as: '数据' }] }),
    ).not.toThrow();
    const capture = errorOf(() =>
      defineFunction({ name: 'a', observe: [{ tool: 'signal', capture_payload_as: 'data ' }] }),
    );
    expect(capture.code).toBe('invalid_function_definition');
    expect(capture.message).toContain('observe.0.capture_payload_as: an artifact name must be');
    const condition = errorOf(() => parseCondition('artifact_exists(a,b)'));
    expect(condition.code).toBe('invalid_condition_argument');
    expect(condition.message).toContain(ARTIFACT_NAME_RULE);
  });
});
