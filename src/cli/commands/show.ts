import { CommandDispatcher } from '../../adapters/command-dispatcher.js';
import { formatDuration } from '../../loop/notes.js';
import type { LoopState } from '../../loop/types.js';
import type { PendingEffect } from '../../session/runtime-types.js';
import { approvalLines } from '../approval-output.js';
import { OK_EXIT_CODE } from '../exit-codes.js';
import { latestWorkerIn, loopRunIn } from '../loop-runs.js';
import type { Output } from '../output.js';
import {
  type RoundShown,
  readRound,
  roundFields,
  roundOutputLines,
  SHOW_OUTPUT_LINES,
} from '../round-output.js';
import { formatTable, readStoredSession, roundLabel, type StoredSession } from './status.js';

/** Options of `rolebox show`. */
export interface ShowOptions {
  readonly store: string;
  readonly tasks: string;
  readonly json?: boolean;
}

/** A stored session with its loop's rounds and what each worker produced. */
export interface ShownSession extends StoredSession {
  readonly worker?: string;
  readonly rounds: readonly RoundShown[];
}

/**
 * Reads session `sessionId` from the store and each round of its loop (the one that runs,
 * else the last one) with its worker's output from the tasks folder. Starts nothing.
 * Throws: as {@link readStoredSession}.
 */
export async function readShownSession(
  sessionId: string,
  options: Pick<ShowOptions, 'store' | 'tasks'>,
): Promise<ShownSession> {
  const stored = await readStoredSession(options.store, sessionId);
  const { loop } = stored;
  // The worker of the loop shown (never one recorded for another loop of the session).
  const slots = (stored.slots as Record<string, unknown> | null) ?? undefined;
  const worker = loop ? loopRunIn(slots, loop.id)?.worker : latestWorkerIn(slots);
  if (!loop) return { ...stored, ...(worker ? { worker } : {}), rounds: [] };
  // Only read: it never runs the command (its tasks were run by `rolebox loop`).
  const dispatcher = new CommandDispatcher({ command: worker ?? 'true', stateDir: options.tasks });
  const where = { session: sessionId, loop: loop.id };
  const rounds: RoundShown[] = [];
  for (const record of loop.rounds)
    rounds.push(
      record.status === 'running'
        ? {
            ...where,
            round: record.round,
            task: record.workerTaskId,
            status: record.status,
            text: '',
            truncated: false,
            dropped: false,
          }
        : await readRound(dispatcher, where, record),
    );
  return { ...stored, ...(worker ? { worker } : {}), rounds };
}

/** `rolebox show <session>`: the session, its loop, its rounds with their output. Returns the exit code. */
export async function runShowCommand(
  sessionId: string,
  options: ShowOptions,
  output: Output,
): Promise<number> {
  const shown = await readShownSession(sessionId, options);
  if (options.json) {
    output.out(JSON.stringify(showJson(shown), null, 2));
    return OK_EXIT_CODE;
  }
  output.out(formatShownSession(shown).join('\n'));
  return OK_EXIT_CODE;
}

/** The JSON document of `rolebox show --json`. */
export function showJson(shown: ShownSession): Record<string, unknown> {
  const { loop } = shown;
  return {
    ...shown.status,
    ...(shown.worker === undefined ? {} : { worker: shown.worker }),
    loop: loop ? loopJson(loop) : null,
    rounds: shown.rounds.map(roundFields),
    // Like `worker`: only there when there is one (a session with no effects reads as before).
    ...(shown.pendingEffects.length === 0
      ? {}
      : { pendingEffects: shown.pendingEffects.map(effectFields) }),
    // The same: only there when the session has approval requests, open ones first.
    ...(shown.approvals.length === 0 ? {} : { approvals: shown.approvals }),
  };
}

/** One pending effect as `show` lists it: what it asks for, where it stands. */
export function effectFields(entry: PendingEffect): Record<string, unknown> {
  return {
    id: entry.id,
    type: entry.effect.type,
    status: entry.status,
    attempts: entry.attempts,
    ...(entry.lastError === undefined ? {} : { lastError: entry.lastError }),
    ...(entry.nextAttemptAt === undefined ? {} : { nextAttemptAt: entry.nextAttemptAt }),
  };
}

/** The effects part of `rolebox show`: a table of the pending effects, if there are any. */
function effectLines(pending: readonly PendingEffect[]): string[] {
  if (pending.length === 0) return [];
  const table = formatTable(
    ['ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'LAST ERROR'],
    pending.map((entry) => [
      entry.id,
      entry.effect.type,
      entry.nextAttemptAt === undefined
        ? entry.status
        : `${entry.status} (next attempt at ${new Date(entry.nextAttemptAt).toISOString()})`,
      String(entry.attempts),
      // One line per effect: a multi-line error keeps its first line.
      entry.lastError === undefined ? '-' : firstLine(entry.lastError),
    ]),
  );
  return [
    '',
    `effects:   ${pending.length} not settled`,
    ...table.split('\n').map((line) => `  ${line}`),
  ];
}

function loopJson(loop: LoopState): Record<string, unknown> {
  return {
    id: loop.id,
    phase: loop.phase,
    round: roundLabel(loop),
    total: loop.total,
    mode: loop.mode,
    task: loop.basePrompt,
    startedAt: loop.startedAt,
    updatedAt: loop.updatedAt,
    ...(loop.errorReason === undefined ? {} : { error: loop.errorReason }),
  };
}

/**
 * The text of `rolebox show`: a header of fields, then each round with its output, then the
 * effects the session emitted and has not settled, then its approval requests (open first).
 */
export function formatShownSession(shown: ShownSession): string[] {
  return [
    ...sessionLines(shown),
    ...effectLines(shown.pendingEffects),
    ...approvalLines(shown.approvals),
  ];
}

/** The header and the loop's rounds of {@link formatShownSession}. */
function sessionLines(shown: ShownSession): string[] {
  const { status, loop } = shown;
  const field = (name: string, value: string) => `${`${name}:`.padEnd(11)}${value}`;
  const lines = [
    field('session', status.session),
    field(
      'phase',
      status.waiting ? `${status.phase} (waiting for ${status.waiting})` : status.phase,
    ),
    field(
      'functions',
      status.functions
        .map((fn) => `${fn.name}=${fn.phase}${fn.live ? '' : ' (no longer live)'}`)
        .join(', ') || '-',
    ),
  ];
  if (shown.worker) lines.push(field('worker', shown.worker));
  if (!loop) {
    lines.push(field('loop', '- (none ran in this session)'));
    return lines;
  }
  lines.push(
    field('loop', `${loop.id} ${loop.phase}, round ${roundLabel(loop)}, ${loop.mode} mode`),
    field('task', firstLine(loop.basePrompt)),
  );
  if (loop.errorReason) lines.push(field('error', loop.errorReason));
  for (const round of shown.rounds) {
    const took = round.durationMs === undefined ? '' : ` in ${formatDuration(round.durationMs)}`;
    lines.push(
      '',
      `round ${round.round}/${loop.total}: ${round.status}${took} (task ${round.task})`,
    );
    lines.push(
      ...(round.status === 'running'
        ? ['  │ (still running)']
        : roundOutputLines(round, SHOW_OUTPUT_LINES)),
    );
  }
  return lines;
}

/** The first line of a task, marked when there is more. */
function firstLine(text: string): string {
  const [first = ''] = text.split('\n');
  return first.length < text.length ? `${first} …` : first;
}
