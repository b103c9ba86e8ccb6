import { isTerminalLoopPhase, type LoopPhase } from '../loop/types.js';
import type { Rolebox } from '../rolebox/rolebox.js';

/** One MCP progress report (`notifications/progress` params, less the token). */
export interface LoopProgress {
  /** The rounds of the loop that have ended (0 when it starts); it only grows. */
  readonly progress: number;
  /** The rounds the loop runs. */
  readonly total: number;
  /** The loop's note that reported it (`[loop-progress round 1/3 completed, …]`). */
  readonly message: string;
}

/** How a followed loop ended: its phase and the rounds it ran, or `undefined` when no longer followed. */
export type LoopOutcome = { readonly phase: LoopPhase; readonly rounds: number } | undefined;

/**
 * Follows loop `loopId` of session `sessionId` until it ends, reporting each round that
 * ends (the round's note) through `report`, after a first report of 0 rounds. Progress
 * only grows, as MCP requires: a note that does not end a further round (the loop's
 * closing note) is not reported; the outcome says how it ended. Stops following, answering
 * `undefined`, when `signal` aborts (the client cancelled the call or went away); the loop
 * goes on regardless (it is the session's, and `stop_loop` stops it).
 * Expects: the loop was started in this tick (its notes are delivered after the command
 * that caused them, so none is missed).
 */
export function followLoopProgress(
  rb: Rolebox,
  target: { readonly sessionId: string; readonly loopId: string; readonly total: number },
  report: (progress: LoopProgress) => void,
  signal: AbortSignal,
): Promise<LoopOutcome> {
  const { sessionId, loopId, total } = target;
  let reported = 0;
  report({ progress: 0, total, message: `loop started: ${loopId}` });
  return new Promise<LoopOutcome>((resolve) => {
    const offNote = rb.on('note', (note) => {
      if (note.sessionId !== sessionId || note.loopId !== loopId) return;
      if (note.round === undefined || note.round <= reported) return;
      reported = note.round;
      report({ progress: reported, total, message: note.text });
    });
    const offFinished = rb.on('loop_finished', (event) => {
      if (event.sessionId === sessionId && event.loopId === loopId) finish(event.phase);
    });
    const onAbort = () => finish(undefined);
    let done = false;
    const finish = (phase: LoopPhase | undefined) => {
      if (done) return;
      done = true;
      offNote();
      offFinished();
      signal.removeEventListener('abort', onAbort);
      resolve(phase === undefined ? undefined : { phase, rounds: roundsOf(rb, sessionId, loopId) });
    };
    signal.addEventListener('abort', onAbort);
    if (signal.aborted) onAbort();
    // Ended already (a loop refused at its first round): nothing more will come.
    const phase = loopPhaseOf(rb, sessionId, loopId);
    if (phase !== undefined && isTerminalLoopPhase(phase)) finish(phase);
  });
}

/** The loop as the session shows it now: the running one, else the one that just ended. */
function loopOf(rb: Rolebox, sessionId: string, loopId: string) {
  try {
    const loop = rb.session(sessionId).view().loop;
    return loop?.id === loopId ? loop : undefined;
  } catch {
    return undefined; // the session was closed or passivated meanwhile
  }
}

function loopPhaseOf(rb: Rolebox, sessionId: string, loopId: string): LoopPhase | undefined {
  return loopOf(rb, sessionId, loopId)?.phase;
}

function roundsOf(rb: Rolebox, sessionId: string, loopId: string): number {
  return loopOf(rb, sessionId, loopId)?.rounds.length ?? 0;
}
