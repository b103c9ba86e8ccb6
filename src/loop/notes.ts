import { LOOP_PROGRESS_MARKER } from './constants.js';
import type { LoopMode, RoundRecord } from './types.js';

/** `12.5s`: a duration in seconds with one decimal. */
export function formatDuration(ms: number | undefined): string {
  return ms === undefined ? '?s' : `${(ms / 1000).toFixed(1)}s`;
}

/**
 * `[loop-progress loop started: 3 rounds, inherit mode]`; a clamped loop adds
 * `, clamped from <requested>` before the bracket.
 */
export function loopStartedNote(total: number, mode: LoopMode, clampedFrom?: number): string {
  const clamped = clampedFrom === undefined ? '' : `, clamped from ${clampedFrom}`;
  return `${LOOP_PROGRESS_MARKER} loop started: ${total} rounds, ${mode} mode${clamped}]`;
}

/**
 * `[loop-progress round 1/3 completed, session=abc123, duration=12.5s]`: the session the
 * worker ran in. A worker that runs in no session of its own (a shell command: the
 * dispatcher reports its task id as its session) is named by its task instead:
 * `task=t_abc123`.
 */
export function roundCompletedNote(
  round: number,
  total: number,
  worker:
    | string
    | {
        readonly workerSessionId: string;
        readonly workerTaskId: string;
        readonly acrossRestart?: boolean;
      },
  durationMs: number | undefined,
): string {
  // A round collected after a restart: its duration is the worker's run, and the note says
  // the round spanned the restart.
  const across = typeof worker !== 'string' && worker.acrossRestart ? ', across a restart' : '';
  const label =
    typeof worker === 'string'
      ? `session=${worker}`
      : worker.workerSessionId === worker.workerTaskId
        ? `task=${worker.workerTaskId}`
        : `session=${worker.workerSessionId}`;
  return `${LOOP_PROGRESS_MARKER} round ${round}/${total} completed, ${label}, duration=${formatDuration(durationMs)}${across}]`;
}

/**
 * `Rounds: r1:abc123(12.5s,completed), r2:def456(10.2s,completed)`; `Rounds: none` for a
 * loop stopped before its first round.
 */
export function roundsLine(rounds: readonly RoundRecord[]): string {
  if (rounds.length === 0) return 'Rounds: none';
  const items = rounds.map(
    (record) =>
      `r${record.round}:${record.workerSessionId}(${formatDuration(record.durationMs)},${record.status})`,
  );
  return `Rounds: ${items.join(', ')}`;
}

/**
 * The closing note: `[loop-progress loop complete]` (or `cancelled`, `interrupted`), a
 * newline, then the {@link roundsLine}.
 */
export function loopEndedNote(
  outcome: 'complete' | 'cancelled' | 'interrupted',
  rounds: readonly RoundRecord[],
): string {
  return `${LOOP_PROGRESS_MARKER} loop ${outcome}]\n${roundsLine(rounds)}`;
}

/** `[loop-progress error: <reason>]` */
export function loopErrorNote(reason: string): string {
  return `${LOOP_PROGRESS_MARKER} error: ${reason}]`;
}
