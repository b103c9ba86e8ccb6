import { describe, expect, it } from 'vitest';
import { isRoleboxError } from '../src/errors.js';
import { CommandPath, type CommandPathSteps } from '../src/runtime/command-path.js';
import type { SystemAccess } from '../src/runtime/system-access.js';
import type { SessionCommand } from '../src/session/commands.js';
import type { SystemEmitted } from '../src/session/emitted.js';

/**
 * The actors a path dispatches to: live session actors that log what they are sent and run
 * what a test scripts for it (the events the machines would emit), and a root that logs.
 */
function fakeAccess(log: string[], live: Set<string>, onSend: (sessionId: string) => void) {
  const sessionActor = (sessionId: string) =>
    live.has(sessionId)
      ? {
          send: (command: SessionCommand) => {
            log.push(`send ${sessionId} ${command.type}`);
            onSend(sessionId);
          },
        }
      : undefined;
  return {
    isLive: (sessionId: string) => live.has(sessionId),
    sessionActor,
    root: { send: (event: { type: string }) => log.push(`root ${event.type}`) },
    actor: () => undefined,
  } as unknown as SystemAccess;
}

/** A command path whose steps record what they were handed, in order. */
function recordingPath(
  overrides: Partial<CommandPathSteps> = {},
  options: { live?: string[]; stored?: string[]; onSend?: (sessionId: string) => void } = {},
) {
  const log: string[] = [];
  const live = new Set(options.live ?? ['s0', 's1', 's2']);
  const stored = new Set(options.stored ?? []);
  const access = fakeAccess(log, live, (sessionId) => options.onSend?.(sessionId));
  const steps: CommandPathSteps = {
    requireUsable: () => log.push('check'),
    activate: (sessionId) => {
      log.push(`activate ${sessionId}`);
      if (!stored.has(sessionId)) return false;
      live.add(sessionId);
      return true;
    },
    markUsed: (ids) => log.push(`used ${[...ids].sort().join(',')}`),
    markForSaving: (ids) => log.push(`mark ${[...ids].sort().join(',')}`),
    performLoopNeeds: (request) => log.push(`needs ${request.loopId}`),
    reconcileNewLoop: (sessionId) => log.push(`reconcile ${sessionId}`),
    reportToRegistry: (report) => {
      log.push(`report ${report.type}`);
      return true;
    },
    markRegistryForSaving: () => log.push('mark registry'),
    deliver: (events) => log.push(`deliver ${events.map((e) => e.type).join(',')}`),
    ...overrides,
  };
  return { path: new CommandPath(access, steps), log };
}

const stopLoop: SessionCommand = { type: 'session.stop_loop', now: false, at: 0 };

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
  it('runs a command in order: check, dispatch, collect, mark sessions, perform requests, mark registry, deliver', () => {
    const holder: { path?: CommandPath } = {};
    const { path, log } = recordingPath(
      {},
      {
        onSend: () => {
          holder.path?.collect(needs);
          holder.path?.collect(roundStarted);
          holder.path?.collect(loopStarted);
        },
      },
    );
    holder.path = path;
    const emitted = path.dispatch({ type: 'system.deliver', sessionId: 's0', command: stopLoop });
    expect(emitted.map((e) => e.type)).toEqual(['round_started', 'loop_started']);
    expect(log).toEqual([
      'check',
      'send s0 session.stop_loop',
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

  it('activates a passivated session before dispatching to it', () => {
    const { path, log } = recordingPath({}, { live: [], stored: ['s3'] });
    path.dispatch({ type: 'system.deliver', sessionId: 's3', command: stopLoop });
    expect(log).toEqual([
      'check',
      'activate s3',
      'send s3 session.stop_loop',
      'used s3',
      'mark s3',
      'deliver ',
    ]);
  });

  it('refuses a command to a session that is neither live nor stored, sending nothing', () => {
    const { path, log } = recordingPath({}, { live: [] });
    let thrown: unknown;
    try {
      path.dispatch({ type: 'system.deliver', sessionId: 'nope', command: stopLoop });
    } catch (error) {
      thrown = error;
    }
    expect(isRoleboxError(thrown, 'unknown_session')).toBe(true);
    expect((thrown as Error).message).toContain('"nope"');
    expect(log).toEqual(['check', 'activate nope']);
  });

  it('checks that the rolebox is usable before anything else', () => {
    const { path, log } = recordingPath({
      requireUsable: () => {
        throw new Error('not started');
      },
    });
    expect(() =>
      path.dispatch({ type: 'system.deliver', sessionId: 's0', command: stopLoop }),
    ).toThrow('not started');
    expect(() => path.requireLive('s0')).toThrow('not started');
    expect(() => path.requireSession('s0')).toThrow('not started');
    expect(log).toEqual([]);
  });

  it('cascades a cancelNow to each child loop’s session, activating it, skipping one that is gone', () => {
    const { path, log } = recordingPath({}, { live: ['s1'], stored: ['s2'] });
    path.run(() =>
      path.collect({
        type: 'loop_cascade',
        at: 5,
        loops: [
          { loopId: 'l1', sessionId: 's1' },
          { loopId: 'l2', sessionId: 's2' },
          { loopId: 'l3', sessionId: 'gone' },
        ],
      }),
    );
    expect(log.filter((line) => line.startsWith('send') || line.startsWith('activate'))).toEqual([
      'send s1 session.stop_loop',
      'activate s2',
      'send s2 session.stop_loop',
      'activate gone',
    ]);
  });
});
