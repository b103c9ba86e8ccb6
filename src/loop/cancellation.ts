import { STOP_LOOP_COMMAND, STOP_LOOP_SIGNAL } from './constants.js';
import { isTerminalLoopPhase, type LoopPhase, ORIGIN_OWNED_LOOP_PHASES } from './types.js';

/**
 * Whether a user message cancels the session's loop (SPEC §3.5): only when it carries the
 * stop-loop marker and the loop is `awaiting_worker` or `dispatching`. Never a terminal
 * loop, never one in an origin-owned phase, never for an ordinary message.
 */
export function shouldCancelLoop(
  loop: { readonly phase: LoopPhase },
  messageText: string,
): boolean {
  if (!messageText.includes(STOP_LOOP_SIGNAL)) return false;
  if (isTerminalLoopPhase(loop.phase)) return false;
  if (ORIGIN_OWNED_LOOP_PHASES.has(loop.phase)) return false;
  return loop.phase === 'awaiting_worker' || loop.phase === 'dispatching';
}

/**
 * What the `/stop-loop` command turns a message into: the text with the marker, so that
 * hosts can pass the user's raw input straight through.
 */
export function expandStopLoopCommand(text: string): string {
  return text.trim() === `/${STOP_LOOP_COMMAND}` ? STOP_LOOP_SIGNAL : text;
}
