import { SEED_CHAR_CAP, SEED_SEPARATOR, SUMMARY_INPUT_CHAR_CAP } from './constants.js';
import type { LoopMode } from './types.js';

/** The last `cap` characters of `text` (all of it when shorter). */
export function lastChars(text: string, cap: number): string {
  return text.length > cap ? text.slice(-cap) : text;
}

/**
 * The prompt of a round (SPEC §3.4): in inherit mode with a previous summary, the last
 * `seedCharCap` characters of the summary, the separator `\n\n---\n\n`, then the base
 * prompt; otherwise the base prompt.
 */
export function buildRoundPrompt(
  loop: { readonly mode: LoopMode; readonly basePrompt: string; readonly lastSummary?: string },
  seedCharCap: number = SEED_CHAR_CAP,
): string {
  if (loop.mode !== 'inherit' || !loop.lastSummary) return loop.basePrompt;
  return `${lastChars(loop.lastSummary, seedCharCap)}${SEED_SEPARATOR}${loop.basePrompt}`;
}

/** A round's summary: the last `summaryCharCap` characters of the worker's text. */
export function summarizeRound(
  text: string,
  summaryCharCap: number = SUMMARY_INPUT_CHAR_CAP,
): string {
  return lastChars(text, summaryCharCap);
}
