import { isAbsolute, relative } from 'node:path';
import type { LoopState, RoundRecord, RoundStatus } from '../loop/types.js';
import type { Dispatcher } from '../ports/dispatcher.js';
import { DEFAULT_LIMITS } from '../system/limits.js';

/** Most lines of a round's output `rolebox loop` prints under its note; the rest is in the file. */
export const ROUND_OUTPUT_LINES = 10;

/** Most lines of a round's output `rolebox show` prints. */
export const SHOW_OUTPUT_LINES = 40;

/** Most characters of a round's output printed under its note (human mode). */
export const ROUND_OUTPUT_CHARS = 4_000;

/** What one round of a loop produced, as the CLI shows it. */
export interface RoundShown {
  readonly session: string;
  readonly loop: string;
  readonly round: number;
  readonly task: string;
  readonly status: RoundStatus;
  readonly durationMs?: number;
  /** The worker's stdout, or its last part (see `truncated`). */
  readonly text: string;
  /** Bytes the worker wrote to stdout in all, when the dispatcher says. */
  readonly bytes?: number;
  /** True when `text` is not all the worker wrote. */
  readonly truncated: boolean;
  /** True when the dispatcher itself kept only the end of it (the file does not hold it all). */
  readonly dropped: boolean;
  /** Where the worker's stdout is on disk, when the dispatcher keeps it in a file. */
  readonly file?: string;
  /** Why the round failed, or why its output could not be read. */
  readonly error?: string;
}

/** A dispatcher that keeps each task's output in a file (the command dispatcher does). */
type WithOutputFile = Dispatcher & { outputFile?(taskId: string): string };

/** The fields of a round that its record holds. */
function recordFields(
  dispatcher: WithOutputFile,
  where: { readonly session: string; readonly loop: string },
  record: RoundRecord,
) {
  return {
    ...where,
    round: record.round,
    task: record.workerTaskId,
    status: record.status,
    ...(record.durationMs === undefined ? {} : { durationMs: record.durationMs }),
    ...fileOf(dispatcher, record.workerTaskId),
  };
}

/**
 * What the round that just completed produced, from the loop's state alone (no I/O, so it
 * is printed with its note, at once): the loop's summary of it is the end of the worker's
 * text (its last `summaryCharCap` characters), and the record says how much there was. Undefined when the loop's summary is not
 * this round's (it is not the last completed round).
 */
export function roundFromLoop(
  dispatcher: WithOutputFile,
  where: { readonly session: string; readonly loop: string },
  record: RoundRecord,
  loop: LoopState,
  summaryCharCap: number = DEFAULT_LIMITS.summaryCharCap,
): RoundShown | undefined {
  const last = loop.rounds.findLast((round) => round.status === 'completed');
  if (record.status !== 'completed' || last?.round !== record.round) return undefined;
  const text = loop.lastSummary ?? '';
  const bytes = record.output?.bytes;
  const dropped = record.output?.truncated ?? false;
  // The summary is the end of the worker's text, cut at the cap: shorter, it is all of it.
  const truncated = dropped || text.length >= summaryCharCap;
  return {
    ...recordFields(dispatcher, where, record),
    text,
    ...(bytes === undefined ? {} : { bytes }),
    truncated,
    dropped,
  };
}

/**
 * Reads what the round in `record` produced from the dispatcher that ran it. A result that
 * cannot be read is shown with why, never thrown: it must not stop the loop's output.
 */
export async function readRound(
  dispatcher: WithOutputFile,
  where: { readonly session: string; readonly loop: string },
  record: RoundRecord,
): Promise<RoundShown> {
  const base = recordFields(dispatcher, where, record);
  try {
    const result = await dispatcher.getRoundResult(record.workerTaskId);
    const dropped = result.output?.truncated ?? false;
    return {
      ...base,
      text: result.text,
      truncated: dropped,
      dropped,
      ...(result.output ? { bytes: result.output.bytes } : {}),
      ...(result.hadError ? { error: result.errorReason ?? 'the worker failed' } : {}),
    };
  } catch (error) {
    return { ...base, text: '', truncated: false, dropped: false, error: (error as Error).message };
  }
}

function fileOf(dispatcher: WithOutputFile, taskId: string): { file?: string } {
  try {
    const file = dispatcher.outputFile?.(taskId);
    return file === undefined ? {} : { file: displayPath(file) };
  } catch {
    return {};
  }
}

/** A path relative to the working directory when it is under it (what a user typed), else as is. */
export function displayPath(path: string): string {
  const near = relative(process.cwd(), path);
  return near !== '' && !near.startsWith('..') && !isAbsolute(near) ? near : path;
}

/** `512 B`, `4.2 KiB`, `16.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The last `chars` characters of `text`, never starting inside a surrogate pair. */
function lastChars(text: string, chars: number): string {
  if (text.length <= chars) return text;
  let start = text.length - chars;
  const code = text.charCodeAt(start);
  if (code >= 0xdc00 && code <= 0xdfff) start++;
  return text.slice(start);
}

/**
 * The lines printed under a round's note: the last `maxLines` lines (at most
 * {@link ROUND_OUTPUT_CHARS} characters) of what the worker wrote, each behind `  │ `, and
 * first, when some is not shown, how much there is and the file that holds it.
 */
export function roundOutputLines(shown: RoundShown, maxLines = ROUND_OUTPUT_LINES): string[] {
  const gutter = (line: string) => `  │ ${line}`;
  if (shown.text === '')
    return [gutter(shown.error ? `(no output; ${shown.error})` : '(no output)')];
  const lines = shown.text.split('\n');
  const tail = lastChars(lines.slice(-maxLines).join('\n'), ROUND_OUTPUT_CHARS);
  const shownLines = tail.split('\n');
  if (tail.length === shown.text.length && !shown.truncated) return shownLines.map(gutter);
  const total = shown.bytes === undefined ? '' : ` of ${formatBytes(shown.bytes)}`;
  const rest = shown.dropped
    ? `; only its end was kept${shown.file ? `, in ${shown.file}` : ''}`
    : shown.file
      ? `; all of it is in ${shown.file}`
      : '';
  return [
    gutter(`… the last ${shownLines.length} line(s)${total}${rest}`),
    ...shownLines.map(gutter),
  ];
}

/** The `--json` line of a round: `{"type":"round",…}` with the last part of its output. */
export function roundJson(shown: RoundShown): Record<string, unknown> {
  return { type: 'round', session: shown.session, loop: shown.loop, ...roundFields(shown) };
}

/**
 * A round as JSON: number, task, status, duration, its output (`truncated` when the text is
 * not all of it: the rest is in `file`), its error.
 */
export function roundFields(shown: RoundShown): Record<string, unknown> {
  return {
    round: shown.round,
    task: shown.task,
    status: shown.status,
    ...(shown.durationMs === undefined ? {} : { durationMs: shown.durationMs }),
    output: {
      text: shown.text,
      ...(shown.bytes === undefined ? {} : { bytes: shown.bytes }),
      truncated: shown.truncated,
    },
    ...(shown.file === undefined ? {} : { file: shown.file }),
    ...(shown.error === undefined ? {} : { error: shown.error }),
  };
}
