import { describe, expect, it } from 'vitest';
import { CommandPath, type CommandPathSteps } from '../src/runtime/command-path.js';
import type { SystemEmitted } from '../src/session/emitted.js';

/** A command path whose steps record what they were handed, in order. */
function recordingPath(overrides: Partial<CommandPathSteps> = {}) {
  const log: string[] = [];
  const steps: CommandPathSteps = {
    requireUsable: () => log.push('check'),
    activate: (sessionId) => {
      log.push(`activate ${sessionId}`);
      return true;
    },
    markUsed: (ids) => log.push(`used ${[...ids].sort().join(',')}`),
    markForSaving: (ids) => log.push(`mark ${[...ids].sort().join(',')}`),
    performLoopNeeds: (request) => log.push(`needs ${request.loopId}`),
    cascadeCancel: (request) => log.push(`cascade ${request.loops.map((l) => l.loopId)}`),
    reconcileNewLoop: (sessionId) => log.push(`reconcile ${sessionId}`),
    reportToRegistry: (report) => {
      log.push(`report ${report.type}`);
      return true;
    },
    markRegistryForSaving: () => log.push('mark registry'),
    deliver: (events) => log.push(`deliver ${events.map((e) => e.type).join(',')}`),
    ...overrides,
  };
  return { path: new CommandPath(steps), log };
}

const loopStarted: SystemEmitted = { type: 'loop_started', sessionId: 's1', loopId: 'l1' };
const needs: SystemEmitted = { type: 'loop_effects', sessionId: 's1', loopId: 'l1', effects: [] };
const roundStarted: SystemEmitted = {
  type: 'round_started',
  sessionId: 's1',
  loopId: 'l1',
  round: 1,
  taskId: 't1',
  workerSessionId: 'w1',
};

describe('CommandPath', () => {
  it('runs a command in order: collect, mark sessions, perform requests, mark registry, deliver', () => {
    const { path, log } = recordingPath();
    path.noteSession('s0');
    const emitted = path.run(() => {
      path.collect(needs);
      path.collect(roundStarted);
      path.collect(loopStarted);
    });
    expect(emitted.map((e) => e.type)).toEqual(['round_started', 'loop_started']);
    expect(log).toEqual([
      'used s0,s1',
      'mark s0,s1',
      'needs l1',
      'report system.loop_worker',
      'reconcile s1',
      'mark registry',
      'deliver round_started,loop_started',
    ]);
  });

  it('does not mark the registry when no report reached it (a stopped root)', () => {
    const { path, log } = recordingPath({ reportToRegistry: () => false });
    path.run(() => path.collect(roundStarted));
    expect(log).not.toContain('mark registry');
    expect(log.at(-1)).toBe('deliver round_started');
  });

  it('collects a command sent while one runs with it, and performs its requests once', () => {
    const { path, log } = recordingPath();
    path.run(() => {
      path.collect(loopStarted);
      path.run(() => path.collect(needs));
    });
    // The inner command delivers its own (no) events at once, but its requests wait for the
    // outermost command to finish.
    expect(log).toEqual([
      'deliver ',
      'used s1',
      'mark s1',
      'reconcile s1',
      'needs l1',
      'deliver loop_started',
    ]);
  });

  it('delivers the events of a command a step sends before the outer command’s', () => {
    const holder: { path?: CommandPath } = {};
    const { path, log } = recordingPath({
      reconcileNewLoop: (sessionId) => {
        log.push(`reconcile ${sessionId}`);
        if (sessionId === 's1')
          holder.path?.run(() =>
            holder.path?.collect({ ...loopStarted, loopId: 'l2', sessionId: 's2' }),
          );
      },
    });
    holder.path = path;
    path.run(() => path.collect(loopStarted));
    expect(log.filter((line) => line.startsWith('deliver'))).toEqual([
      'deliver loop_started',
      'deliver loop_started',
    ]);
    expect(log.indexOf('reconcile s2')).toBeLessThan(log.lastIndexOf('deliver loop_started'));
    expect(log).toContain('mark s2');
  });

  it('handles what an actor emits outside any command as a command of its own', () => {
    const { path, log } = recordingPath();
    path.collect(needs);
    path.collect(loopStarted);
    expect(log).toEqual(['needs l1', 'used s1', 'mark s1', 'reconcile s1', 'deliver loop_started']);
  });
});
