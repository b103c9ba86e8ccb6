import { mkdir, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assign } from 'xstate';
import { createLoopMachine } from '../machines/index.js';
import { SYSTEM_MACHINE_VERSION } from '../machines/system.machine.js';
import { ConditionRegistry, createRolebox, defineFunction } from '../src/index.js';
import {
  type LoopRegistrations,
  type LoopRegistry,
  loopRegistryOf,
  registeredLoops,
} from '../src/loop/registry.js';
import { upgradeRecordedRun } from '../src/persistence/run-migrations.js';
import {
  formatReplayReport,
  type RecordedRun,
  readRunFile,
  replay,
  ScriptedDispatcher,
  SimulatedClock,
  seededIdSource,
  settle,
  writeRunFile,
} from '../src/testing/index.js';
import { errorOf, rejectionOf } from './support/errors.js';

const fixtures = join(import.meta.dirname, 'fixtures');
const names = (await readdir(fixtures)).filter((name) => name.endsWith('.run.json')).sort();

describe('recorded runs replay clean on the current code', () => {
  it('there are the seven fixtures', () => {
    expect(names).toEqual([
      'approval-workflow.run.json',
      'cancelled-loop.run.json',
      'loop-interrupted-by-restart.run.json',
      // Recorded on system machine 3 (a flat loop registry): nested loops, a recursive loop
      // refused, a cascading cancel, a tree dropped.
      'nested-loops-system-3.run.json',
      'passivated-restore.run.json',
      'session-review-cycle.run.json',
      'three-round-loop.run.json',
    ]);
  });

  for (const name of names) {
    it(name, async () => {
      const run = await readRunFile(join(fixtures, name));
      expect(run.journal.length).toBeGreaterThan(0);
      const report = replay(run);
      expect(formatReplayReport(report)).toBe(
        `replay ok: ${run.journal.length} event(s), every snapshot matched`,
      );
    });
  }
});

describe('a run recorded when the root spawned every shard at start (system machine 2)', () => {
  it('replays with the empty shards gone and a restore into one handed to the root', async () => {
    // Recorded on system machine 2 with 4 shards: `first` is passivated, then activated by
    // its answer; the runtime handed that restore straight to its shard, empty by then.
    const run = await readRunFile(join(fixtures, 'passivated-restore.run.json'));
    expect(run.machineVersions.system).toBe(2);
    const restore = run.journal.findIndex((entry) => entry.event.type === 'shard.spawn');
    expect(run.journal[restore]?.target).toBe('shard:1');
    const shardsIn = (snapshot: unknown) =>
      Object.keys((snapshot as { children: object }).children).filter((id) =>
        id.startsWith('shard:'),
      );
    expect(shardsIn(run.initial)).toEqual(['shard:0', 'shard:1', 'shard:2', 'shard:3']);
    const upgraded = upgradeRecordedRun(run, {});
    expect(upgraded.machineVersions.system).toBe(SYSTEM_MACHINE_VERSION);
    expect(shardsIn(upgraded.initial)).toEqual([]);
    expect(upgraded.journal[restore]).toMatchObject({
      target: 'rolebox',
      event: { type: 'system.restore_session', sessionId: 'first' },
    });
    // Only the shards holding a session are left in each recorded snapshot.
    expect(upgraded.journal.map((entry) => shardsIn(entry.after))).toEqual(
      run.journal.map((entry) =>
        shardsIn(entry.after).filter(
          (id) =>
            Object.keys(
              (entry.after as { children: Record<string, { snapshot: { children: object } }> })
                .children[id]?.snapshot.children ?? {},
            ).length > 0,
        ),
      ),
    );
    expect(replay(run).ok).toBe(true);
  });
});

describe('a run recorded when the root kept its loop registry flat (system machine 3 and before)', () => {
  type Root = { context: { loopRegistry: unknown } };
  const registryIn = (snapshot: unknown) => (snapshot as Root).context.loopRegistry;

  it('replays with the registry in buckets, each recorded registration where it was', async () => {
    const run = await readRunFile(join(fixtures, 'three-round-loop.run.json'));
    const flat = run.journal
      .map((entry) => registryIn(entry.after) as { loops: LoopRegistrations })
      .find((registry) => Object.keys(registry.loops).length > 0);
    if (!flat) throw new Error('the fixture registers no loop');
    // Recorded on system machine 1: its sessions go under shards of a new root.
    const rb = createRolebox();
    await rb.start();
    const upgraded = upgradeRecordedRun(run, rb.system.getPersistedSnapshot());
    await rb.stop();
    const bucketed = upgraded.journal.map((entry) => registryIn(entry.after) as LoopRegistry);
    expect(bucketed.every((registry) => 'buckets' in registry && !('loops' in registry))).toBe(
      true,
    );
    expect(bucketed.map((registry) => registeredLoops(registry))).toContainEqual(flat.loops);
    expect(replay(run).ok).toBe(true);
  });

  it('brings a journaled registry replacement into buckets too', () => {
    const loops: LoopRegistrations = {
      L: {
        originSessionId: 'S',
        rootLoopId: 'L',
        fingerprint: 'a'.repeat(64),
        workerSessionIds: ['W'],
        finished: false,
      },
    };
    const root = { context: { shards: 4, loopRegistry: { loops } }, children: {} };
    const run = {
      machineVersions: { system: 3, session: 6, function: 2, loop: 3 },
      initial: root,
      journal: [
        {
          target: 'rolebox',
          event: { type: 'system.set_loop_registry', loopRegistry: { loops } },
          after: root,
        },
      ],
    } as unknown as RecordedRun;
    const [entry] = upgradeRecordedRun(run, {}).journal;
    expect(entry?.event.loopRegistry).toEqual(loopRegistryOf(loops));
    expect(registryIn(entry?.after)).toEqual(loopRegistryOf(loops));
  });
});

describe('a replay on changed code', () => {
  it('reports the first divergence: the event, the actor and a readable diff', async () => {
    const run = await readRunFile(join(fixtures, 'three-round-loop.run.json'));
    // A "regression": summaries lose their last character.
    const report = replay(run, {
      machines: {
        loop: (env) =>
          createLoopMachine(env).provide({
            actions: {
              recordSummary: assign(({ context }, result: { text: string }) => ({
                lastSummary: result.text.slice(0, -1),
                rounds: context.rounds.map((round) =>
                  round.status === 'running' ? { ...round, status: 'completed' as const } : round,
                ),
                activeWorkerTaskId: undefined,
                activeWorkerSessionId: undefined,
              })),
            },
          }),
      },
    });
    expect(report.ok).toBe(false);
    const loopId = run.journal.find((entry) => entry.target.startsWith('loop:'))?.target as string;
    expect(report.divergence).toMatchObject({
      event: 'loop.result_collected',
      target: loopId,
      actor: loopId,
    });
    const firstCollect = run.journal.findIndex(
      (entry) => entry.event.type === 'loop.result_collected',
    );
    expect(report.divergence?.index).toBe(firstCollect);
    expect(report.replayed).toBe(firstCollect + 1);
    expect(report.divergence?.diff).toContain(
      `children.session:loop.snapshot.children.loop.snapshot.context.lastSummary: expected "B is cheapest.", got "B is cheapest"`,
    );
    expect(formatReplayReport(report)).toContain(
      `replay diverged at event ${firstCollect + 1} of ${run.journal.length} (loop.result_collected → ${loopId}; journal index ${firstCollect}), in actor ${loopId}:`,
    );
  });

  it('reports changed definitions too', async () => {
    const run = await readRunFile(join(fixtures, 'approval-workflow.run.json'));
    const report = replay(run, {
      functions: run.functions.map((definition) =>
        definition.name === 'awaiting-approval' ? { ...definition, observe: [] } : definition,
      ),
    });
    expect(report.ok).toBe(false);
    expect(report.divergence?.event).toBe('system.deliver');
    expect(report.divergence?.diff.join('\n')).toContain('artifacts');
  });
});

describe('recording a run in your own tests', () => {
  it('records, writes, reads back and replays', async () => {
    const dispatcher = new ScriptedDispatcher((input) => `answer ${input.round}`);
    const rb = createRolebox({
      clock: new SimulatedClock(0),
      ids: seededIdSource(1),
      dispatcher,
      journal: true,
      limits: { interRoundDelayMs: 0 },
    });
    await rb.start();
    const session = await rb.openSession({ id: 'mine' });
    session.startLoop('|loop:2| check');
    await settle();
    const run: RecordedRun = rb.recordRun();
    expect(run.journal.map((entry) => entry.event.type)).toEqual([
      'system.open_session',
      'system.start_loop',
      // The runtime's answers to the loop's effects: what came from outside.
      'loop.prepared',
      'loop.round_dispatched',
      'loop.worker_terminated',
      'loop.result_collected',
      'loop.round_dispatched',
      'loop.worker_terminated',
      'loop.result_collected',
    ]);
    const path = join(import.meta.dirname, '..', 'test-output', 'mine.run.json');
    await mkdir(dirname(path), { recursive: true });
    await writeRunFile(path, run);
    expect(replay(await readRunFile(path)).ok).toBe(true);
  });

  it('replays a run whose functions use conditions of a registry of their own', async () => {
    const conditions = new ConditionRegistry();
    conditions.register('reviewed', {
      argument: 'none',
      evaluate: (_arg, env) => env.kv.reviewed === true,
    });
    const review = defineFunction(
      { name: 'review', gate: 'reviewed', continue_until: 'reviewed' },
      { conditions },
    );
    const rb = createRolebox({
      functions: [review],
      conditions,
      clock: new SimulatedClock(0),
      ids: seededIdSource(1),
      journal: true,
    });
    await rb.start();
    const session = await rb.openSession({ id: 'r' });
    session.activate('review');
    session.setKv('review', 'reviewed', true);
    session.idle();
    const run = rb.recordRun();
    await rb.stop();
    expect(replay(run, { conditions }).ok).toBe(true);
    // Without it the definitions name a condition the replay does not know: refused whole.
    const error = errorOf(() => replay(run));
    expect(error.code).toBe('invalid_function_definition');
    expect(error.message).toContain('function review: gate: unknown condition "reviewed"');
    expect(errorOf(() => replay(run, { condition: conditions } as never)).message).toBe(
      'replay options: unknown option "condition" (did you mean "conditions"?); known: functions, conditions, machines, limits, onStep',
    );
  });

  it('refuses to record without journal, and refuses files that are not runs', async () => {
    const rb = createRolebox();
    await rb.start();
    expect(() => rb.recordRun()).toThrow('recordRun() needs createRolebox({ journal: true })');
    const notARun = join(import.meta.dirname, '..', 'package.json');
    expect((await rejectionOf(readRunFile(notARun))).message).toContain(
      'is not a rolebox run: format',
    );
    expect((await rejectionOf(readRunFile('/no/such/file.json'))).message).toContain(
      'cannot read run file "/no/such/file.json"',
    );
  });

  it('refuses a run whose session machine is older than any migration reaches', async () => {
    const run = await readRunFile(join(fixtures, 'approval-workflow.run.json'));
    const ancient = { ...run, machineVersions: { ...run.machineVersions, session: 0 } };
    const error = errorOf(() => replay(ancient));
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toContain('session machine version 0 is older than');
  });
});
