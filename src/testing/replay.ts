import { readFile, writeFile } from 'node:fs/promises';
import { type AnyActorRef, createActor } from 'xstate';
import type { MachineFactories } from '../../machines/system.machine.js';
import { createSystemMachine } from '../../machines/system.machine.js';
import { LOOP_CHILD_ID, SYSTEM_ACTOR_ID } from '../base/actor-ids.js';
import { checkOptionNames } from '../base/option-names.js';
import { type ConditionRegistry, defaultConditionRegistry } from '../condition/registry.js';
import { describeValue, RoleboxError } from '../errors.js';
import { FunctionCatalog } from '../function/catalog.js';
import type { FunctionDefinition } from '../function/definition.js';
import {
  comparableSnapshot,
  parseRecordedRun,
  type RecordedRun,
  reviveEvent,
} from '../persistence/journal.js';
import {
  shardsOfRun,
  upgradeRecordedRun,
  upgradeRecordedSessions,
} from '../persistence/run-migrations.js';
import { REQUESTS_KEY } from '../signal/approval-requests.js';
import type { RoleboxLimits } from '../system/limits.js';
import { registryReportOf } from '../system/loop-registry-reports.js';
import { SimulatedClock } from './simulated-clock.js';

/** Options of {@link replay}. */
export interface ReplayOptions {
  /** Definitions to replay with (default: those recorded in the run). */
  readonly functions?: readonly FunctionDefinition[];
  /** The registry the definitions' conditions come from (default: the process-wide one). */
  readonly conditions?: ConditionRegistry;
  /** Replacement machine factories: replay the run on changed machines. */
  readonly machines?: MachineFactories;
  /** Limits (default: those recorded in the run). */
  readonly limits?: RoleboxLimits;
  /**
   * Called after each replayed journal entry with the system's snapshot as replayed (in the
   * form compared with the recorded one): `rolebox replay --inspect` shows it at a divergence.
   */
  readonly onStep?: (index: number, actual: unknown) => void;
}

const REPLAY_OPTION_NAMES = Object.keys({
  functions: true,
  conditions: true,
  machines: true,
  limits: true,
  onStep: true,
} satisfies Record<keyof ReplayOptions, true>);

/** Where a replay first differed from the recording. */
export interface Divergence {
  /** The index of the journal entry after which the snapshots differ. */
  readonly index: number;
  /** That entry's event type and target. */
  readonly event: string;
  readonly target: string;
  /** The actor whose snapshot differs first (`loop:…`, `fn:…`, `session:…`, `rolebox`). */
  readonly actor: string;
  /** Readable differences: `path: expected …, got …` (at most 12). */
  readonly diff: readonly string[];
}

/** What a replay found. */
export interface ReplayReport {
  /** True when every snapshot matched. */
  readonly ok: boolean;
  /** Journal entries replayed (up to and including the divergence). */
  readonly replayed: number;
  readonly total: number;
  readonly divergence?: Divergence;
}

/**
 * Re-drives a recorded run on the current code: restores its initial snapshot, then sends
 * each recorded outside event (nothing external runs: the dispatcher's answers and timer
 * firings come from the journal) and compares the persisted snapshot after each with the
 * recorded one. Stops at the first divergence.
 *
 * Use when: a test must prove that code changes did not change behaviour on real runs.
 */
export function replay(run: RecordedRun, options: ReplayOptions = {}): ReplayReport {
  checkOptionNames(options, REPLAY_OPTION_NAMES, 'replay options');
  const parsed = parseRecordedRun(run);
  const catalog = new FunctionCatalog(options.functions ?? parsed.functions, options.conditions);
  const machine = createSystemMachine({
    catalog,
    conditions: options.conditions ?? defaultConditionRegistry,
    limits: options.limits ?? parsed.limits,
    clock: new SimulatedClock(),
    externalActors: 'recorded',
    shards: shardsOfRun(parsed),
    ...(options.machines ? { factories: options.machines } : {}),
  });
  // A run recorded before sessions moved under shards, or before their children had local
  // ids, replays in today's shape.
  const checked = upgradeRecordedSessions(
    upgradeRecordedRun(parsed, createActor(machine).getPersistedSnapshot()),
  );
  const actor = createActor(machine, {
    systemId: SYSTEM_ACTOR_ID,
    snapshot: checked.initial as never,
  });
  let failure: unknown;
  actor.subscribe({ error: (error) => (failure = error) });
  actor.start();
  const relay = new LoopReportRelay(actor);
  relay.listen();
  const total = checked.journal.length;
  try {
    for (const [index, entry] of checked.journal.entries()) {
      const target = entry.target === SYSTEM_ACTOR_ID ? actor : actor.system.get(entry.target);
      const fail = (actorId: string, diff: string[]): ReplayReport => ({
        ok: false,
        replayed: index + 1,
        total,
        divergence: {
          index,
          event: String(entry.event.type),
          target: entry.target,
          actor: actorId,
          diff,
        },
      });
      if (!target)
        return fail(entry.target, [
          `actor ${entry.target} does not exist at this point of the replay`,
        ]);
      target.send(reviveEvent(entry.event));
      relay.listen();
      if (failure !== undefined)
        return fail(SYSTEM_ACTOR_ID, [
          `the system failed: ${(failure as Error).message ?? String(failure)}`,
        ]);
      const actual = comparableSnapshot(actor.getPersistedSnapshot());
      options.onStep?.(index, actual);
      const differences = diffJson(entry.after, actual);
      if (differences.length > 0)
        return fail(
          actorOf(differences[0]?.path ?? '', actual),
          differences.slice(0, 12).map((difference) => formatDifference(difference, actual)),
        );
    }
    return { ok: true, replayed: total, total };
  } finally {
    actor.stop();
  }
}

/**
 * Does in a replay what the runtime does for a live loop: what a loop emits that the loop
 * registry must know (a round's worker session, a cascade) is reported to the root, in
 * the same step, as the journal expects (it does not record these reports).
 */
class LoopReportRelay {
  readonly #root: AnyActorRef;
  readonly #listened = new WeakSet<AnyActorRef>();

  constructor(root: AnyActorRef) {
    this.#root = root;
  }

  /** Listens to every live loop not listened to yet (loops appear as the run goes on). */
  listen(): void {
    for (const shard of Object.values(childrenOf(this.#root)))
      for (const session of Object.values(childrenOf(shard))) {
        const loopId = (session.getSnapshot() as { context?: { activeLoopId?: unknown } }).context
          ?.activeLoopId;
        const loop = typeof loopId === 'string' ? childrenOf(session)[LOOP_CHILD_ID] : undefined;
        if (!loop || this.#listened.has(loop)) continue;
        this.#listened.add(loop);
        loop.on('*', (emitted) => {
          const report = registryReportOf(emitted);
          if (report) this.#root.send(report);
        });
      }
  }
}

/** An actor's live children, by id. */
function childrenOf(actor: AnyActorRef): Record<string, AnyActorRef> {
  return (actor.getSnapshot() as { children?: Record<string, AnyActorRef> }).children ?? {};
}

/**
 * A replay report as text, for the terminal. Events are counted from 1 there, as
 * `rolebox replay --inspect` shows them ("event 5 of 6"); the journal index is 4.
 */
export function formatReplayReport(report: ReplayReport): string {
  if (report.ok) return `replay ok: ${report.total} event(s), every snapshot matched`;
  const divergence = report.divergence as Divergence;
  return [
    `replay diverged at event ${divergence.index + 1} of ${report.total} (${divergence.event} → ${divergence.target}; journal index ${divergence.index}), in actor ${divergence.actor}:`,
    ...divergence.diff.map((line) => `  ${line}`),
  ].join('\n');
}

/** Writes a recorded run as JSON. */
export async function writeRunFile(path: string, run: RecordedRun): Promise<void> {
  await writeFile(path, `${JSON.stringify(run, null, 1)}\n`);
}

/** Reads and checks a recorded run. Throws: `invalid_argument` naming the file and what is wrong. */
export async function readRunFile(path: string): Promise<RecordedRun> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new RoleboxError(
      'invalid_argument',
      `cannot read run file ${describeValue(path)}: ${(error as Error).message}`,
      { path },
    );
  }
  return parseRecordedRun(value, path);
}

interface Difference {
  readonly path: string;
  /** The same path as keys (an id may hold a dot). */
  readonly keys: readonly string[];
  readonly expected: unknown;
  readonly actual: unknown;
}

function diffJson(
  expected: unknown,
  actual: unknown,
  path = '',
  pathKeys: readonly string[] = [],
): Difference[] {
  if (Object.is(expected, actual)) return [];
  const bothObjects =
    typeof expected === 'object' &&
    expected !== null &&
    typeof actual === 'object' &&
    actual !== null;
  if (!bothObjects || Array.isArray(expected) !== Array.isArray(actual))
    return [{ path: path || '(root)', keys: pathKeys, expected, actual }];
  const keys = new Set([...Object.keys(expected as object), ...Object.keys(actual as object)]);
  const differences: Difference[] = [];
  for (const key of keys) {
    differences.push(
      ...diffJson(
        (expected as Record<string, unknown>)[key],
        (actual as Record<string, unknown>)[key],
        path ? `${path}.${key}` : key,
        [...pathKeys, key],
      ),
    );
    if (differences.length >= 12) break;
  }
  return differences;
}

/**
 * The systemId of the innermost actor on a snapshot path
 * (`children.session:S.snapshot.children.loop.snapshot…` → `loop:L`): child ids are local,
 * so the child's recorded systemId names it (its child id when it has none).
 */
function actorOf(path: string, snapshot: unknown): string {
  let actor = SYSTEM_ACTOR_ID;
  let node = snapshot as { children?: Record<string, { systemId?: unknown; snapshot?: unknown }> };
  for (const [, childId] of path.matchAll(/children\.([^.]+)/g)) {
    const child = node?.children?.[childId as string];
    actor = typeof child?.systemId === 'string' ? child.systemId : (childId as string);
    node = child?.snapshot as typeof node;
  }
  return actor;
}

function formatDifference(difference: Difference, actual: unknown): string {
  // Which shard holds a session is bookkeeping: paths start at the session.
  const path = difference.path.replace(/^children\.shard:\d+\.snapshot\./, '');
  return `${path}: expected ${describeValue(difference.expected)}, got ${describeValue(difference.actual)}${approvalNote(difference, actual)}`;
}

/**
 * ` (approval request deploy:r1)` when a difference is inside a recorded approval request
 * (the audit trail, SPEC §9), so a replay names the request whose record changed; else ''.
 */
function approvalNote(difference: Difference, actual: unknown): string {
  const at = difference.keys.indexOf(REQUESTS_KEY);
  if (at < 0 || at + 1 >= difference.keys.length) return '';
  let node: unknown = actual;
  for (const key of difference.keys.slice(0, at + 2))
    node =
      typeof node === 'object' && node !== null
        ? (node as Record<string, unknown>)[key]
        : undefined;
  const id = (node as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' ? ` (approval request ${id})` : '';
}
