import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LOOP_PHASES, STOP_LOOP_SIGNAL } from '../src/index.js';
import { expandStopLoopCommand, shouldCancelLoop } from '../src/loop/cancellation.js';
import { normalizePrompt, portableSha256Hex, promptFingerprint } from '../src/loop/fingerprint.js';
import {
  formatDuration,
  loopEndedNote,
  loopErrorNote,
  loopStartedNote,
  roundCompletedNote,
  roundsLine,
} from '../src/loop/notes.js';
import { parseLoopCommand } from '../src/loop/parse-loop-command.js';
import {
  addWorkerSession,
  checkLoopRegistration,
  finishLoop,
  LOOP_REGISTRY_BUCKETS,
  type LoopRegistration,
  type LoopRegistrations,
  type LoopRegistry,
  loopRegistryBucketOf,
  loopRegistryOf,
  registeredLoops,
  registrationOf,
  withoutLoops,
} from '../src/loop/registry.js';
import { buildRoundPrompt, summarizeRound } from '../src/loop/round-prompt.js';
import { errorOf } from './support/errors.js';

describe('parseLoopCommand (SPEC §3.1)', () => {
  it.each([
    [
      '|loop:3| analyse the proposals',
      {
        iterations: 3,
        requested: 3,
        clamped: false,
        mode: 'inherit',
        task: 'analyse the proposals',
      },
    ],
    [
      '|loop| analyse',
      { iterations: 5, requested: 5, clamped: false, mode: 'inherit', task: 'analyse' },
    ],
    [
      '|loop:| analyse',
      { iterations: 5, requested: 5, clamped: false, mode: 'inherit', task: 'analyse' },
    ],
    ['|loop:5,fresh| repeat', { iterations: 5, mode: 'fresh' }],
    ['|loop:5,inherit| repeat', { iterations: 5, mode: 'inherit' }],
    ['|loop:3,mode=fresh| x', { iterations: 3, mode: 'fresh' }],
    ['|loop:iterations=3,mode=inherit| x', { iterations: 3, mode: 'inherit' }],
    ['|loop:mode=fresh,iterations=2| x', { iterations: 2, mode: 'fresh' }],
    ['|loop:_0=4,_1=fresh| x', { iterations: 4, mode: 'fresh' }],
    ['|loop:mode=off| x', { iterations: 5, mode: 'fresh' }],
    ['|loop: 2 , FRESH | x', { iterations: 2, mode: 'fresh' }],
    ['|loop:1| x', { iterations: 1 }],
    ['|loop:50| x', { iterations: 50, clamped: false }],
    ['|loop:51| x', { iterations: 50, requested: 51, clamped: true }],
    ['|loop:100| x', { iterations: 50, requested: 100, clamped: true }],
    ['|loop:2| multi\nline task', { task: 'multi\nline task' }],
  ])('%j', (text, expected) => {
    expect(parseLoopCommand(text)).toMatchObject(expected);
  });

  it.each([
    ['on', 'inherit'],
    ['true', 'inherit'],
    ['inherit', 'inherit'],
    ['fresh', 'fresh'],
    ['no-inherit', 'fresh'],
    ['off', 'fresh'],
    ['false', 'fresh'],
  ])('mode alias %s → %s', (alias, mode) => {
    expect(parseLoopCommand(`|loop:2,${alias}| x`).mode).toBe(mode);
    expect(parseLoopCommand(`|loop:2,mode=${alias}| x`).mode).toBe(mode);
  });

  it('honours configured defaults and caps', () => {
    expect(parseLoopCommand('|loop| x', { defaultIterations: 2 }).iterations).toBe(2);
    expect(parseLoopCommand('|loop:9| x', { maxIterations: 8 })).toMatchObject({
      iterations: 8,
      requested: 9,
      clamped: true,
    });
  });

  it.each([
    ['|loop:three| x', 'iterations must be a whole number, got "three"'],
    ['|loop:fresh| x', 'iterations must be a whole number, got "fresh"'],
    ['|loop:2.5| x', 'iterations must be a whole number, got "2.5"'],
    ['|loop:-1| x', 'iterations must be a whole number, got "-1"'],
    ['|loop:0| x', 'iterations must be at least 1, got 0'],
    ['|loop:9007199254740992| x', 'iterations must be at most 9007199254740991'],
    [`|loop:${'9'.repeat(30)}| x`, 'iterations must be at most 9007199254740991'],
    [
      '|loop:3,sideways| x',
      'mode must be inherit (on, true) or fresh (no-inherit, off, false), got "sideways"',
    ],
    ['|loop:3,mode=| x', 'mode must be inherit'],
    ['|loop:3,fresh,extra| x', 'too many parameters ("extra")'],
    ['|loop:3,rounds=2| x', 'unknown parameter "rounds"'],
    ['|loop:3,iterations=4| x', 'iterations given twice'],
    ['|loop:3,,fresh| x', 'an empty parameter'],
    ['|loop:3|', 'the loop needs a task'],
    ['|loop:3|    ', 'the loop needs a task'],
    ['loop:3 x', 'expected "|loop:N| task"'],
    ['|signal| type=answer', 'expected a "|loop|" call'],
  ])('%j is refused: %s', (text, why) => {
    const error = errorOf(() => parseLoopCommand(text));
    expect(error.code).toBe('malformed_loop_text');
    expect(error.message).toContain(JSON.stringify(text));
    expect(error.message).toContain(why);
  });
});

describe('round prompts and summaries (SPEC §3.4)', () => {
  it('inherit mode seeds with the previous summary and the separator', () => {
    expect(buildRoundPrompt({ mode: 'inherit', basePrompt: 'task' })).toBe('task');
    expect(buildRoundPrompt({ mode: 'inherit', basePrompt: 'task', lastSummary: 'found A' })).toBe(
      'found A\n\n---\n\ntask',
    );
  });

  it('fresh mode never seeds', () => {
    expect(buildRoundPrompt({ mode: 'fresh', basePrompt: 'task', lastSummary: 'found A' })).toBe(
      'task',
    );
  });

  it('keeps only the last 8 000 characters of a seed and of a summary', () => {
    const long = `${'a'.repeat(5_000)}${'b'.repeat(5_000)}`;
    const summary = summarizeRound(long);
    expect(summary).toHaveLength(8_000);
    expect(summary).toBe(long.slice(-8_000));
    expect(summarizeRound('short')).toBe('short');
    const prompt = buildRoundPrompt({ mode: 'inherit', basePrompt: 'task', lastSummary: long });
    expect(prompt).toBe(`${long.slice(-8_000)}\n\n---\n\ntask`);
    expect(summarizeRound('x'.repeat(8_000))).toHaveLength(8_000);
  });
});

describe('notes (SPEC §3.4), character for character', () => {
  const rounds = [
    {
      round: 1,
      workerTaskId: 't1',
      workerSessionId: 'abc123',
      startedAt: 0,
      durationMs: 12_500,
      status: 'completed' as const,
    },
    {
      round: 2,
      workerTaskId: 't2',
      workerSessionId: 'def456',
      startedAt: 0,
      durationMs: 10_200,
      status: 'completed' as const,
    },
  ];

  it('start, round, end and error', () => {
    expect(loopStartedNote(3, 'inherit')).toBe(
      '[loop-progress loop started: 3 rounds, inherit mode]',
    );
    expect(loopStartedNote(50, 'fresh', 100)).toBe(
      '[loop-progress loop started: 50 rounds, fresh mode, clamped from 100]',
    );
    expect(roundCompletedNote(1, 3, 'abc123', 12_500)).toBe(
      '[loop-progress round 1/3 completed, session=abc123, duration=12.5s]',
    );
    expect(
      roundCompletedNote(1, 3, { workerSessionId: 'abc123', workerTaskId: 't_1' }, 12_500),
    ).toBe('[loop-progress round 1/3 completed, session=abc123, duration=12.5s]');
    // A worker with no session of its own (a shell command) is named by its task.
    expect(roundCompletedNote(2, 3, { workerSessionId: 't_2', workerTaskId: 't_2' }, 10_200)).toBe(
      '[loop-progress round 2/3 completed, task=t_2, duration=10.2s]',
    );
    expect(roundsLine(rounds)).toBe(
      'Rounds: r1:abc123(12.5s,completed), r2:def456(10.2s,completed)',
    );
    expect(loopEndedNote('complete', rounds)).toBe(
      '[loop-progress loop complete]\nRounds: r1:abc123(12.5s,completed), r2:def456(10.2s,completed)',
    );
    expect(loopEndedNote('cancelled', rounds.slice(0, 1))).toBe(
      '[loop-progress loop cancelled]\nRounds: r1:abc123(12.5s,completed)',
    );
    expect(loopErrorNote('round timeout')).toBe('[loop-progress error: round timeout]');
  });

  it('formats durations with one decimal', () => {
    expect(formatDuration(0)).toBe('0.0s');
    expect(formatDuration(8_149)).toBe('8.1s');
    expect(formatDuration(61_000)).toBe('61.0s');
    expect(formatDuration(undefined)).toBe('?s');
  });
});

describe('shouldCancelLoop (SPEC §3.5): every phase × marker', () => {
  const cancels = new Set(['awaiting_worker', 'dispatching']);
  for (const phase of LOOP_PHASES) {
    it(`${phase}: with the marker ${cancels.has(phase) ? 'cancels' : 'does not cancel'}; without it never`, () => {
      expect(shouldCancelLoop({ phase }, `please stop ${STOP_LOOP_SIGNAL} now`)).toBe(
        cancels.has(phase),
      );
      expect(shouldCancelLoop({ phase }, 'please stop the loop now')).toBe(false);
      expect(shouldCancelLoop({ phase }, '/stop-loop')).toBe(false);
    });
  }

  it('the /stop-loop command expands to the marker; other text is unchanged', () => {
    expect(expandStopLoopCommand('/stop-loop')).toBe(STOP_LOOP_SIGNAL);
    expect(expandStopLoopCommand('  /stop-loop \n')).toBe(STOP_LOOP_SIGNAL);
    expect(expandStopLoopCommand('do not /stop-loop')).toBe('do not /stop-loop');
  });
});

describe('prompt fingerprint', () => {
  it('ignores case and whitespace, nothing else', () => {
    expect(normalizePrompt('  Analyse\n the   PROPOSALS ')).toBe('analyse the proposals');
    expect(promptFingerprint('Analyse the proposals')).toBe(
      promptFingerprint('  analyse   the\tproposals\n'),
    );
    expect(promptFingerprint('analyse the proposals')).not.toBe(
      promptFingerprint('analyse the proposal'),
    );
    expect(promptFingerprint('x')).toMatch(/^[0-9a-f]{64}$/);
    // SHA-256 of "x"
    expect(promptFingerprint('x')).toBe(
      '2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881',
    );
  });

  it('is the digest a browser computes, for any text (node:crypto here, @noble/hashes there)', () => {
    // Registries written by either host must read the same fingerprints: any UTF-16 text,
    // lone surrogates included (both encode one as U+FFFD).
    const text = fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.array(fc.integer({ min: 0, max: 0xffff })).map((units) => String.fromCharCode(...units)),
    );
    fc.assert(
      fc.property(text, (prompt) => {
        expect(promptFingerprint(prompt)).toBe(portableSha256Hex(normalizePrompt(prompt)));
      }),
      { numRuns: 2_000 },
    );
    // A lone surrogate and U+FFFD hash alike on both paths.
    expect(promptFingerprint('a\ud800b')).toBe(portableSha256Hex('a\ufffdb'));
  });
});

describe('the loop registry layout (buckets)', () => {
  const registration = (loopId: string): LoopRegistration => ({
    originSessionId: `origin-${loopId}`,
    rootLoopId: loopId,
    fingerprint: 'f'.repeat(64),
    workerSessionIds: [],
    finished: false,
  });
  const many: LoopRegistrations = Object.fromEntries(
    Array.from({ length: 1000 }, (_, i) => [`loop_${i}`, registration(`loop_${i}`)]),
  );

  it('spreads the loops over the buckets and gives back what the record stores', () => {
    const registry = loopRegistryOf(many);
    const sizes = Object.values(registry.buckets).map((bucket) => Object.keys(bucket).length);
    expect(sizes.length).toBe(LOOP_REGISTRY_BUCKETS);
    // 1 000 loops over 64 buckets: none holds a large share (an even spread is 15–16).
    expect(Math.max(...sizes)).toBeLessThan(40);
    expect(registeredLoops(registry)).toEqual(many);
    expect(loopRegistryBucketOf('loop_7')).toBe(loopRegistryBucketOf('loop_7'));
  });

  it('copies one bucket for a round: every other bucket is the one it was', () => {
    const registry = loopRegistryOf(many);
    const next = addWorkerSession(registry, 'loop_42', 'W');
    const touched = loopRegistryBucketOf('loop_42');
    for (const [key, bucket] of Object.entries(next.buckets))
      if (key === touched) expect(bucket).not.toBe(registry.buckets[key]);
      else expect(bucket).toBe(registry.buckets[key]);
    expect(registrationOf(next, 'loop_42')?.workerSessionIds).toEqual(['W']);
    expect(registrationOf(registry, 'loop_42')?.workerSessionIds).toEqual([]);
  });

  it('drops a bucket left empty and keeps loop ids named like Object.prototype keys', () => {
    // A computed key makes an own property (a literal `__proto__:` would set the prototype).
    const named = loopRegistryOf({
      ['__proto__']: registration('__proto__'),
      constructor: registration('constructor'),
    });
    expect(Object.keys(registeredLoops(named)).sort()).toEqual(['__proto__', 'constructor']);
    expect(registrationOf(named, 'constructor')?.rootLoopId).toBe('constructor');
    expect(registrationOf(named, 'toString')).toBeUndefined();
    expect(finishLoop(finishLoop(named, '__proto__'), 'constructor')).toEqual({ buckets: {} });
    expect(withoutLoops(named, ['missing'])).toEqual(named);
  });
});

describe('checkLoopRegistration (SPEC §3.4)', () => {
  const loops: LoopRegistrations = {
    root: {
      originSessionId: 'S',
      rootLoopId: 'root',
      fingerprint: 'fp-root',
      workerSessionIds: ['W1'],
      finished: false,
    },
    child: {
      originSessionId: 'W1',
      parentLoopId: 'root',
      rootLoopId: 'root',
      fingerprint: 'fp-child',
      workerSessionIds: ['W2'],
      finished: false,
    },
  };
  const registry: LoopRegistry = loopRegistryOf(loops);

  it('accepts a root loop in a free session', () => {
    expect(
      checkLoopRegistration(registry, { originSessionId: 'other', fingerprint: 'fp-root' }, 30),
    ).toEqual({ ok: true });
  });

  it('refuses a second loop in a session with an unfinished one, not after it finished', () => {
    expect(
      checkLoopRegistration(registry, { originSessionId: 'S', fingerprint: 'new' }, 30),
    ).toEqual({
      ok: false,
      reason: 'session S already has a running loop (root)',
    });
    const finished = loopRegistryOf({ ...loops, root: { ...loops.root!, finished: true } });
    expect(
      checkLoopRegistration(finished, { originSessionId: 'S', fingerprint: 'new' }, 30).ok,
    ).toBe(true);
  });

  it('makes a loop started in a worker session of an unfinished loop its child', () => {
    expect(
      checkLoopRegistration(registry, { originSessionId: 'W2', fingerprint: 'fresh-idea' }, 30),
    ).toEqual({
      ok: true,
      parentLoopId: 'child',
      rootLoopId: 'root',
    });
    const childDone = loopRegistryOf({ ...loops, child: { ...loops.child!, finished: true } });
    expect(
      checkLoopRegistration(childDone, { originSessionId: 'W2', fingerprint: 'fresh-idea' }, 30),
    ).toEqual({ ok: true });
  });

  it('picks the same parent among several loops the session works for, whatever their order', () => {
    const working = (workerSessionIds: string[]): LoopRegistration => ({
      originSessionId: 'elsewhere',
      rootLoopId: 'x',
      fingerprint: 'f'.repeat(64),
      workerSessionIds,
      finished: false,
    });
    const request = { originSessionId: 'W', fingerprint: 'new' };
    // The loop whose latest round ran in W, before one where W ran an earlier round.
    const entries: [string, LoopRegistration][] = [
      ['a', working(['W', 'X'])],
      ['z', working(['Y', 'W'])],
    ];
    for (const order of [entries, [...entries].reverse()])
      expect(checkLoopRegistration(loopRegistryOf(Object.fromEntries(order)), request, 30)).toEqual(
        { ok: true, parentLoopId: 'z', rootLoopId: 'x' },
      );
    // Several whose latest round ran there (one worker session reused): the smallest id.
    const pool = Array.from({ length: 12 }, (_, i): [string, LoopRegistration] => [
      `loop_${(i * 7) % 12}`,
      working(['W']),
    ]);
    for (const order of [pool, [...pool].reverse()])
      expect(
        checkLoopRegistration(loopRegistryOf(Object.fromEntries(order)), request, 30),
      ).toMatchObject({ ok: true, parentLoopId: 'loop_0' });
  });

  it('refuses the same prompt as any ancestor', () => {
    expect(
      checkLoopRegistration(registry, { originSessionId: 'W2', fingerprint: 'fp-child' }, 30),
    ).toMatchObject({
      ok: false,
      reason: expect.stringContaining('ancestor loop child'),
    });
    expect(
      checkLoopRegistration(registry, { originSessionId: 'W2', fingerprint: 'fp-root' }, 30),
    ).toMatchObject({
      ok: false,
      reason: expect.stringContaining('ancestor loop root'),
    });
  });

  it('refuses a loop that would make the tree exceed the cap', () => {
    expect(
      checkLoopRegistration(registry, { originSessionId: 'W2', fingerprint: 'new' }, 3).ok,
    ).toBe(true);
    expect(
      checkLoopRegistration(registry, { originSessionId: 'W2', fingerprint: 'new' }, 2),
    ).toMatchObject({
      ok: false,
      reason: 'loop tree limit reached: tree root already has 2 unfinished loops (limit 2)',
    });
  });

  it('counts only the unfinished loops of the tree against the cap (the seed concurrency limit)', () => {
    // The root finished, its child still runs: one loop of the tree is live, so a second fits.
    const rootFinished = loopRegistryOf({ ...loops, root: { ...loops.root!, finished: true } });
    expect(
      checkLoopRegistration(rootFinished, { originSessionId: 'W2', fingerprint: 'new' }, 2),
    ).toEqual({ ok: true, parentLoopId: 'child', rootLoopId: 'root' });
    expect(
      checkLoopRegistration(rootFinished, { originSessionId: 'W2', fingerprint: 'new' }, 1),
    ).toMatchObject({
      ok: false,
      reason: 'loop tree limit reached: tree root already has 1 unfinished loops (limit 1)',
    });
  });

  it('records worker sessions and drops a tree once all its loops have finished', () => {
    const withWorker = addWorkerSession(registry, 'child', 'W3');
    expect(registrationOf(withWorker, 'child')?.workerSessionIds).toEqual(['W2', 'W3']);
    expect(addWorkerSession(withWorker, 'child', 'W3')).toBe(withWorker);
    const rootDone = finishLoop(withWorker, 'root');
    expect(Object.keys(registeredLoops(rootDone)).sort()).toEqual(['child', 'root']);
    expect(registrationOf(rootDone, 'root')?.finished).toBe(true);
    expect(finishLoop(rootDone, 'child')).toEqual({ buckets: {} });
    expect(finishLoop(registry, 'unknown')).toBe(registry);
  });
});
