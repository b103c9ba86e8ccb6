import { chartFromConfig } from './chart.js';
import { activeChartStateIds } from './chart-export.js';
import type { InspectorServer, SourceActor } from './server.js';
import { actorsOfSnapshot, type MachineDefinitions, machineKindOf } from './snapshot-actors.js';

/** One recorded step of a run: the event that entered the system, and the snapshot after it. */
export interface ReplayedEntry {
  readonly at: number;
  readonly target: string;
  readonly event: { readonly type: string };
  readonly after: unknown;
}

/** Where the replay first differed from the recording (as `replay()` reports it). */
export interface ReplayedDivergence {
  /** The journal index of the entry after which the snapshots differ. */
  readonly index: number;
  readonly event: string;
  readonly target: string;
  /** The systemId of the actor that differs first. */
  readonly actor: string;
  readonly diff: readonly string[];
  /** The system's snapshot as replayed after that entry (what the current code produced). */
  readonly actual?: unknown;
}

/** What {@link addReplaySource} plays. */
export interface ReplaySourceOptions {
  /** The app's name in the page (`replay run.json`). */
  readonly name: string;
  /** The system's persisted snapshot before the first entry. */
  readonly initial: unknown;
  readonly journal: readonly ReplayedEntry[];
  readonly divergence?: ReplayedDivergence;
  readonly definitions: MachineDefinitions;
}

/** The replay as the page steps through it. */
export interface ReplaySource {
  /** The position shown: 0 before the first event, k after event k (of `total`). */
  position(): number;
  readonly total: number;
  /** Shows the system after event `position` (clamped to 0…total). */
  seek(position: number): void;
}

const SYSTEM_ID = 'rolebox';

/**
 * Plays a recorded run in the inspector as a read-only app: the page steps through it
 * with `{"type":"replay","action":"seek","to":k}` or `{"type":"replay","action":"step","by":±1}`
 * (anything else is dropped with a logged reason), and every page gets
 * `{"type":"replay","position","total","event","seqs","divergence"}` after each move (`seqs`:
 * each recorded event's number in the page's event log, where they are all listed). At the
 * divergence the actors show the snapshot the current code produced, and the message
 * names the diverging actor with its expected (recorded) and actual active states.
 */
export function addReplaySource(
  server: InspectorServer,
  options: ReplaySourceOptions,
): ReplaySource {
  const { journal, divergence, definitions } = options;
  const total = journal.length;
  let position = 0;
  let shown = new Set<string>();
  const atDivergence = (k: number) =>
    divergence !== undefined && divergence.actual !== undefined && k === divergence.index + 1;
  const systemAt = (k: number): unknown =>
    k === 0
      ? options.initial
      : atDivergence(k)
        ? divergence?.actual
        : (journal[k - 1] as ReplayedEntry).after;
  const actorsAt = (k: number): SourceActor[] =>
    actorsOfSnapshot(SYSTEM_ID, systemAt(k), definitions);

  let app = 0;
  /** Each journal entry's number in the event log (null: dropped), for the page's rows. */
  let seqs: (number | null)[] = [];
  const divergenceView = divergence && {
    step: divergence.index + 1,
    index: divergence.index,
    event: divergence.event,
    target: divergence.target,
    actor: divergence.actor,
    diff: divergence.diff,
    ...statesOf(divergence, journal, definitions),
  };
  const positionMessage = () =>
    JSON.stringify({
      type: 'replay',
      app,
      position,
      total,
      event:
        position === 0
          ? null
          : {
              index: position - 1,
              type: (journal[position - 1] as ReplayedEntry).event.type,
              target: (journal[position - 1] as ReplayedEntry).target,
              at: (journal[position - 1] as ReplayedEntry).at,
              seq: seqs[position - 1] ?? null,
            },
      seqs,
      divergence: divergenceView ?? null,
      atDivergence: atDivergence(position),
    });

  const handle = server.addSource({
    kind: 'replay',
    name: options.name,
    pageMessage: positionMessage,
    onPageFrame: (frame) => {
      if (frame.action === 'seek') {
        if (
          !Number.isSafeInteger(frame.to) ||
          (frame.to as number) < 0 ||
          (frame.to as number) > total
        )
          return `replay seek to ${JSON.stringify(frame.to)}: not a whole number from 0 to ${total}`;
        seek(frame.to as number);
        return undefined;
      }
      if (frame.action === 'step') {
        if (frame.by !== 1 && frame.by !== -1)
          return `replay step by ${JSON.stringify(frame.by)}: only 1 or -1`;
        seek(position + frame.by);
        return undefined;
      }
      return `replay action ${JSON.stringify(frame.action)?.slice(0, 40)}: not seek or step`;
    },
  });
  app = handle.app;
  // The recorded events fill the page's event log (before any actor exists, so that no
  // snapshot of a later seek is taken for "the snapshot after" them).
  seqs = journal.map((entry) => handle.event(entry.target, entry.event, entry.at) ?? null);

  const seek = (to: number) => {
    position = Math.max(0, Math.min(total, to));
    const next = actorsAt(position);
    const ids = new Set(next.map((actor) => actor.sessionId));
    handle.forget([...shown].filter((id) => !ids.has(id)));
    for (const actor of next) {
      if (shown.has(actor.sessionId)) handle.snapshot(actor.sessionId, actor.snapshot);
      else handle.actor(actor);
    }
    shown = ids;
    handle.broadcast(positionMessage());
  };
  seek(0);
  return { position: () => position, total, seek };
}

/** The diverging actor's active state ids, recorded and replayed (empty when it has no chart). */
function statesOf(
  divergence: ReplayedDivergence,
  journal: readonly ReplayedEntry[],
  definitions: MachineDefinitions,
): { expected: string[]; actual: string[] } {
  const kind = machineKindOf(divergence.actor);
  const definition = kind ? definitions[kind] : undefined;
  const chart = definition ? chartFromConfig(definition) : undefined;
  if (!chart) return { expected: [], actual: [] };
  const valueIn = (system: unknown) => {
    const actor = actorsOfSnapshot(SYSTEM_ID, system, definitions).find(
      (candidate) => candidate.sessionId === divergence.actor,
    );
    return (actor?.snapshot as { value?: unknown } | undefined)?.value;
  };
  // The root is always active: it says nothing about where the two differ.
  const states = (system: unknown) =>
    system === undefined
      ? []
      : activeChartStateIds(chart, valueIn(system)).filter((id) => id !== chart.root.id);
  return {
    expected: states(journal[divergence.index]?.after),
    actual: states(divergence.actual),
  };
}
