import { describe, expect, it } from 'vitest';
import type { HostEvent } from '../src/index.js';
import { phaseOf, startWith } from './support/rolebox.js';

const awaitingApproval = {
  name: 'awaiting-approval',
  description: 'Ask for approval, wait for the human, continue',
  continue_until: 'signal_observed(answer)',
  gate: 'signal_observed(answer)',
  observe: [{ tool: 'signal', capture_payload_as: 'approval-data' }],
};
const emergencyEscalate = {
  name: 'emergency-escalate',
  continue_until: 'signal_observed(escalate)',
  transitions: [{ when: 'signal_observed(escalate)', activate: ['emergency-handler'] }],
};
const emergencyHandler = { name: 'emergency-handler' };

describe('the approval workflow of the signal seed (§4.3)', () => {
  it('need_approval gates, answer opens the gate and satisfies continue_until, the next idle completes', async () => {
    const { rb, session } = await startWith([
      awaitingApproval,
      emergencyEscalate,
      emergencyHandler,
    ]);
    const seen: HostEvent[] = [];
    rb.on('*', (event) => seen.push(event));
    session.activate('awaiting-approval');
    expect(phaseOf(session, 'awaiting-approval')).toBe('gated');

    // Step 1: the agent asks for approval.
    const paused = session.tool(
      '|signal| type=need_approval, payload={"reason": "touches production"}',
    );
    expect(paused.text).toBe(
      'signal: need_approval acknowledged | recorded on 1 function(s) | → paused (gated), request awaiting-approval:r1',
    );
    expect(phaseOf(session, 'awaiting-approval')).toBe('gated');
    expect(session.view().functions[0]?.evidence).toEqual({ paused: true });
    expect(session.idle()).toEqual({
      turn: 1,
      continued: false,
      continuing: [],
      completed: [],
      blocked: [],
      gated: ['awaiting-approval'],
    });

    // Step 2: the human (or an automation) answers.
    const answered = session.tool('|signal| type=answer, payload={"approved": true}');
    expect(answered.text).toBe(
      'signal: answer acknowledged | recorded on 1 function(s) | → satisfies continue_until condition, answered awaiting-approval:r1',
    );
    expect(phaseOf(session, 'awaiting-approval')).toBe('active');
    expect(session.view().artifacts.map((a) => [a.name, a.content])).toEqual([
      ['approval-data', '{"approved":true}'],
    ]);

    // The next idle completes the function; its last state stays readable.
    expect(session.idle()).toEqual({
      turn: 2,
      continued: false,
      continuing: [],
      completed: ['awaiting-approval'],
      blocked: [],
      gated: [],
    });
    expect(phaseOf(session, 'awaiting-approval')).toBe('complete(completed)');
    expect(session.view().functions[0]?.signals).toEqual({
      need_approval: { reason: 'touches production' },
      answer: { approved: true },
    });
    expect(seen.filter((e) => e.type === 'function_completed')).toEqual([
      { type: 'function_completed', sessionId: 'S1', function: 'awaiting-approval' },
    ]);
    expect(session.signal({ type: 'progress' }).recordedOn).toBe(0);
  });

  it('escalate fires the transition that activates emergency-handler, and also satisfies continue_until', async () => {
    const { rb, session } = await startWith([
      awaitingApproval,
      emergencyEscalate,
      emergencyHandler,
    ]);
    const activated: HostEvent[] = [];
    rb.on('function_activated', (event) => activated.push(event));
    session.activate('emergency-escalate');
    expect(phaseOf(session, 'emergency-handler')).toBe('absent');
    session.tool('|signal| type=escalate, payload={"reason": "needs an architect"}');
    expect(phaseOf(session, 'emergency-handler')).toBe('active');
    expect(activated).toEqual([
      { type: 'function_activated', sessionId: 'S1', function: 'emergency-escalate', by: 'host' },
      {
        type: 'function_activated',
        sessionId: 'S1',
        function: 'emergency-handler',
        by: 'function:emergency-escalate',
      },
    ]);
    // The newly activated function starts with its own empty ledger.
    expect(session.view().functions.find((fn) => fn.name === 'emergency-handler')?.signals).toEqual(
      {},
    );
    expect(session.idle().completed).toEqual(['emergency-escalate']);
  });
});

describe('gates', () => {
  it('without a gate a pausing signal gates until a terminating signal', async () => {
    const { session } = await startWith([
      { name: 'worker', continue_until: 'signal_observed(answer)' },
    ]);
    session.activate('worker');
    expect(phaseOf(session, 'worker')).toBe('active');
    session.signal({ type: 'blocked' });
    expect(phaseOf(session, 'worker')).toBe('gated');
    session.signal({ type: 'progress' });
    session.signal({ type: 'handoff' });
    expect(phaseOf(session, 'worker')).toBe('gated');
    session.signal({ type: 'revise_needed' });
    expect(phaseOf(session, 'worker')).toBe('active');
  });

  it('without a gate a user message or an explicit resume leaves gated', async () => {
    const { session } = await startWith([{ name: 'worker' }]);
    session.activate('worker');
    session.signal({ type: 'need_clarification' });
    session.message('I meant the staging database');
    expect(phaseOf(session, 'worker')).toBe('active');
    session.signal({ type: 'need_approval' });
    session.resume('worker');
    expect(phaseOf(session, 'worker')).toBe('active');
  });

  it('with a gate only the gate opens it: a user message does not', async () => {
    const { session } = await startWith([{ name: 'approval', gate: 'signal_observed(answer)' }]);
    session.activate('approval');
    session.message('go on');
    expect(phaseOf(session, 'approval')).toBe('gated');
    session.signal({ type: 'escalate' });
    expect(phaseOf(session, 'approval')).toBe('gated');
    session.signal({ type: 'answer' });
    expect(phaseOf(session, 'approval')).toBe('active');
  });

  it('a gate on user_approval() opens when the user writes in the turn', async () => {
    const { session } = await startWith([
      { name: 'confirm', gate: 'user_approval()', continue_until: 'signal_observed(answer)' },
    ]);
    session.activate('confirm');
    expect(phaseOf(session, 'confirm')).toBe('gated');
    session.message('approved');
    expect(phaseOf(session, 'confirm')).toBe('active');
  });

  // Was a level condition (the gate reopened at the next event: issue 25's hole); an answer
  // now approves only the requests made before it (SPEC §9).
  it('an answer before a pausing signal does not reopen the gate; the next answer does', async () => {
    const { session } = await startWith([{ name: 'approval', gate: 'signal_observed(answer)' }]);
    session.activate('approval');
    session.signal({ type: 'answer' });
    session.signal({ type: 'need_approval' });
    expect(phaseOf(session, 'approval')).toBe('gated');
    session.signal({ type: 'progress' });
    expect(phaseOf(session, 'approval')).toBe('gated');
    session.signal({ type: 'answer' });
    expect(phaseOf(session, 'approval')).toBe('active');
  });

  it('a gated function does not complete at idle even when continue_until holds', async () => {
    const { session } = await startWith([
      { name: 'worker', continue_until: 'signal_observed(answer)' },
    ]);
    session.activate('worker');
    session.signal({ type: 'answer' });
    session.signal({ type: 'blocked' });
    expect(session.idle()).toMatchObject({ completed: [], gated: ['worker'] });
    session.resume('worker');
    expect(session.idle()).toMatchObject({ completed: ['worker'] });
  });
});

describe('edge-triggered transitions', () => {
  it('fire once when the condition turns true, and again only after it turned false', async () => {
    const { rb, session } = await startWith([
      {
        name: 'watcher',
        transitions: [{ when: 'state_eq(stage=review)', activate: ['reviewer'] }],
      },
      { name: 'reviewer' },
    ]);
    const fired: string[] = [];
    rb.on('function_activated', (event) => fired.push(`${event.function}<-${event.by}`));
    session.activate('watcher');
    session.setKv('watcher', 'stage', 'review');
    session.setKv('watcher', 'stage', 'review');
    session.signal({ type: 'progress' });
    expect(fired).toEqual(['watcher<-host', 'reviewer<-function:watcher']);
    session.deactivate('reviewer');
    session.setKv('watcher', 'stage', 'draft');
    expect(phaseOf(session, 'reviewer')).toBe('active(deactivated)');
    session.setKv('watcher', 'stage', 'review');
    expect(fired).toEqual([
      'watcher<-host',
      'reviewer<-function:watcher',
      'reviewer<-function:watcher',
    ]);
    expect(phaseOf(session, 'reviewer')).toBe('active');
  });

  it('when: gate fires when the gate opens, and may deactivate the function itself', async () => {
    const { session } = await startWith([
      {
        name: 'approval',
        gate: 'signal_observed(answer)',
        transitions: [{ when: 'gate', activate: ['execute'], deactivate: ['approval'] }],
      },
      { name: 'execute' },
    ]);
    session.activate('approval');
    expect(phaseOf(session, 'execute')).toBe('absent');
    session.signal({ type: 'answer', payload: { ok: true } });
    expect(phaseOf(session, 'execute')).toBe('active');
    expect(phaseOf(session, 'approval')).toBe('active(deactivated)');
    expect(session.view().functions.find((fn) => fn.name === 'approval')?.signals).toEqual({
      answer: { ok: true },
    });
  });

  it('a condition that already holds at activation fires at activation', async () => {
    const { session } = await startWith([
      { name: 'starter', transitions: [{ when: 'turn_count(0)', activate: ['follower'] }] },
      { name: 'follower' },
    ]);
    session.activate('starter');
    expect(phaseOf(session, 'follower')).toBe('active');
  });
});

describe('evidence and tools', () => {
  it('observe set_evidence marks evidence; evidence_met completes when every required tag is in', async () => {
    const { session } = await startWith([
      {
        name: 'writer',
        continue_until: 'evidence_met()',
        requires_evidence: ['wrote-file', 'ran-tests'],
        observe: [
          { tool: 'write_file', set_evidence: 'wrote-file' },
          { tool: 'run_tests', set_evidence: 'ran-tests' },
        ],
      },
    ]);
    session.activate('writer');
    expect(session.tool('|write_file| path=a.ts')).toEqual({
      kind: 'tool',
      tool: 'write_file',
      observedOn: 1,
      text: 'tool: write_file observed by 1 function(s)',
    });
    expect(session.idle().completed).toEqual([]);
    session.observeTool('run_tests');
    const fn = session.view().functions[0];
    expect(fn?.evidence).toEqual({ 'wrote-file': true, 'ran-tests': true });
    expect(fn?.toolsObserved).toEqual(['write_file', 'run_tests']);
    expect(session.idle().completed).toEqual(['writer']);
  });

  it('tool_observed only counts tools reported since activation', async () => {
    const { session } = await startWith([
      { name: 'reader', continue_until: 'tool_observed(read_file)' },
    ]);
    session.observeTool('read_file');
    session.activate('reader');
    expect(session.idle().completed).toEqual([]);
    session.observeTool('read_file');
    expect(session.idle().completed).toEqual(['reader']);
  });

  it('turn_count counts idle cycles since activation', async () => {
    const { session } = await startWith([
      { name: 'patient', continue_until: 'turn_count(2)', continue_max: 10 },
    ]);
    session.idle();
    session.activate('patient');
    expect(session.idle().completed).toEqual([]);
    expect(session.idle().completed).toEqual(['patient']);
  });

  it("user_approval holds for the message's turn and is forgotten when the turn ends", async () => {
    const { session } = await startWith([
      { name: 'confirm', continue_until: 'user_approval()' },
      { name: 'late', continue_until: 'user_approval()' },
    ]);
    session.activate('confirm');
    session.message('looks good');
    expect(session.idle().completed).toEqual(['confirm']);
    session.activate('late');
    expect(session.idle()).toMatchObject({ completed: [], continued: true });
  });
});

describe('continuations', () => {
  const until = { name: 'until-answer', continue_until: 'signal_observed(answer)' };

  it('ask the host to continue while continue_until does not hold, with cooldowns after the 3rd and 5th', async () => {
    const { rb, session } = await startWith([{ ...until, continue_max: 7 }]);
    const continues: number[] = [];
    const blocks: string[] = [];
    rb.on('continue', (event) => continues.push(event.continuation));
    rb.on('continue_blocked', (event) => blocks.push(`${event.function}:${event.reason}`));
    session.activate('until-answer');
    const outcomes = Array.from({ length: 14 }, () => {
      const report = session.idle();
      return report.continued ? 'continue' : (report.blocked[0]?.reason ?? 'none');
    });
    expect(outcomes).toEqual([
      'continue', // turn 1: #1
      'continue', // turn 2: #2
      'continue', // turn 3: #3 → 1 turn of cooldown
      'cooldown', // turn 4
      'continue', // turn 5: #4
      'continue', // turn 6: #5 → 3 turns of cooldown
      'cooldown', // turn 7
      'cooldown', // turn 8
      'cooldown', // turn 9
      'continue', // turn 10: #6
      'continue', // turn 11: #7 = continue_max
      'function_cap',
      'function_cap',
      'function_cap',
    ]);
    expect(continues).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(blocks.filter((b) => b.endsWith('cooldown'))).toHaveLength(4);
    expect(session.view().functions[0]?.continuations).toBe(7);
  });

  it('stop at continue_max (default 5)', async () => {
    const { session } = await startWith([until], { limits: { continuationCooldowns: {} } });
    session.activate('until-answer');
    const continued = Array.from({ length: 7 }, () => session.idle().continued);
    expect(continued).toEqual([true, true, true, true, true, false, false]);
    expect(session.idle().blocked).toEqual([{ function: 'until-answer', reason: 'function_cap' }]);
  });

  it('grant at most one continuation per idle, serving every function that asked', async () => {
    const { rb, session } = await startWith([
      until,
      { name: 'until-escalate', continue_until: 'signal_observed(escalate)' },
      { name: 'no-condition' },
    ]);
    const continues: HostEvent[] = [];
    rb.on('continue', (event) => continues.push(event));
    for (const name of ['until-answer', 'until-escalate', 'no-condition']) session.activate(name);
    expect(session.idle()).toEqual({
      turn: 1,
      continued: true,
      continuing: ['until-answer', 'until-escalate'],
      completed: [],
      blocked: [],
      gated: [],
    });
    expect(continues).toEqual([
      {
        type: 'continue',
        sessionId: 'S1',
        functions: ['until-answer', 'until-escalate'],
        continuation: 1,
      },
    ]);
    expect(session.view().functions.map((fn) => fn.continuations)).toEqual([1, 1, 0]);
    expect(session.view().continuations).toBe(1);
  });

  it('stop at 25 per session, then report global_cap', async () => {
    const { session } = await startWith([{ ...until, continue_max: 40 }], {
      limits: { continuationCooldowns: {} },
    });
    session.activate('until-answer');
    const reports = Array.from({ length: 27 }, () => session.idle());
    expect(reports.filter((r) => r.continued)).toHaveLength(25);
    expect(reports[25]?.blocked).toEqual([{ function: 'until-answer', reason: 'global_cap' }]);
    expect(session.view().continuations).toBe(25);
  });

  it('the session cap is configurable and counts across functions', async () => {
    const { session } = await startWith(
      [until, { name: 'second', continue_until: 'signal_observed(answer)' }],
      { limits: { continuationsPerSession: 2 } },
    );
    session.activate('until-answer');
    expect(session.idle().continued).toBe(true);
    session.deactivate('until-answer');
    session.activate('second');
    expect(session.idle().continued).toBe(true);
    expect(session.idle().blocked).toEqual([{ function: 'second', reason: 'global_cap' }]);
  });

  it('complete instead of continuing once continue_until holds', async () => {
    const { session } = await startWith([until]);
    session.activate('until-answer');
    expect(session.idle().continued).toBe(true);
    session.signal({ type: 'answer' });
    expect(session.idle()).toMatchObject({ continued: false, completed: ['until-answer'] });
  });
});

describe('deactivation', () => {
  it('stops the actor and keeps its last state readable', async () => {
    const { rb, session } = await startWith([{ name: 'worker' }]);
    session.activate('worker');
    session.signal({ type: 'blocked', payload: { on: 'db' } });
    session.deactivate('worker');
    expect(rb.system.system.get('fn:S1:worker')).toBeUndefined();
    expect(session.view().functions).toEqual([
      expect.objectContaining({
        name: 'worker',
        phase: 'gated',
        status: 'deactivated',
        signals: { blocked: { on: 'db' } },
      }),
    ]);
    session.activate('worker');
    expect(session.view().functions).toEqual([
      expect.objectContaining({ name: 'worker', phase: 'active', status: 'live', signals: {} }),
    ]);
  });
});
