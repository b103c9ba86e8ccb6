import { functionActorId } from '../src/base/actor-ids.js';
import type { SourceActor } from './server.js';

/**
 * The machine configs (JSON text, as a live app sends them) the store and replay sources
 * draw their actors' charts from, by kind. The CLI builds them: the inspector imports no
 * machine.
 */
export interface MachineDefinitions {
  readonly system?: string;
  readonly session: string;
  readonly function: string;
  readonly loop: string;
}

/** A persisted snapshot as XState writes it (each child's under `children[id].snapshot`). */
interface PersistedTree {
  readonly status?: unknown;
  readonly value?: unknown;
  readonly context?: unknown;
  readonly error?: unknown;
  readonly children?: Readonly<
    Record<string, { readonly snapshot?: unknown; readonly systemId?: unknown } | undefined>
  >;
}

/** A session's record of a retired function, as the inspector reads it. */
interface RetiredEntry {
  readonly reason?: unknown;
  readonly context?: unknown;
}

/** Which machine draws an actor, by its systemId; undefined for helpers (artifacts, invoked). */
export function machineKindOf(systemId: string): keyof MachineDefinitions | undefined {
  if (systemId === 'rolebox') return 'system';
  if (systemId.startsWith('session:')) return 'session';
  if (systemId.startsWith('fn:')) return 'function';
  if (systemId.startsWith('loop:')) return 'loop';
  return undefined;
}

function asTree(value: unknown): PersistedTree {
  return typeof value === 'object' && value !== null ? (value as PersistedTree) : {};
}

/**
 * The actors of a persisted snapshot tree: `id` for its root, then every rolebox actor
 * below (sessions, functions, loops), each under its nearest shown ancestor. Shards are
 * walked through (bookkeeping); helper actors are left out. Snapshots keep status, value
 * and context: the page needs no more.
 */
export function actorsOfSnapshot(
  id: string,
  persisted: unknown,
  definitions: MachineDefinitions,
  parentId?: string,
): SourceActor[] {
  const actors: SourceActor[] = [];
  const report = (systemId: string, tree: PersistedTree, parent: string | undefined) => {
    const kind = machineKindOf(systemId);
    const definition = kind ? definitions[kind] : undefined;
    actors.push({
      sessionId: systemId,
      name: systemId,
      ...(parent === undefined ? {} : { parentId: parent }),
      ...(definition === undefined ? {} : { definition }),
      snapshot: {
        status: tree.status ?? 'active',
        value: tree.value ?? null,
        context: tree.context ?? null,
        ...(tree.error === undefined ? {} : { error: tree.error }),
      },
    });
    walk(tree, systemId);
    if (kind === 'session') reportCompletedFunctions(systemId, tree);
  };
  // A completed function's actor is stopped (session machine 7): it is drawn from the
  // session's retired record, as it stood when it completed, where it used to be a done
  // child (a run recorded before still has that child: it is drawn once).
  const reportCompletedFunctions = (sessionSystemId: string, tree: PersistedTree) => {
    const retired = (tree.context as { retiredFunctions?: unknown } | null | undefined)
      ?.retiredFunctions;
    if (typeof retired !== 'object' || retired === null) return;
    const sessionId = sessionSystemId.slice('session:'.length);
    const children = Object.values(tree.children ?? {});
    for (const [name, entry] of Object.entries(retired as Record<string, RetiredEntry>)) {
      const systemId = functionActorId(sessionId, name);
      if (entry?.reason !== 'completed' || children.some((child) => child?.systemId === systemId))
        continue;
      const last = { status: 'done', value: 'complete', context: entry.context ?? null };
      report(systemId, last, sessionSystemId);
    }
  };
  const walk = (tree: PersistedTree, parent: string) => {
    for (const [childId, child] of Object.entries(tree.children ?? {})) {
      const childTree = asTree(child?.snapshot);
      // Actors are named by systemId: child ids are local (`fn:<name>`, `loop`) and repeat.
      const systemId = typeof child?.systemId === 'string' ? child.systemId : childId;
      if (systemId.startsWith('shard:')) walk(childTree, parent);
      else if (machineKindOf(systemId)) report(systemId, childTree, parent);
    }
  };
  report(id, asTree(persisted), parentId);
  return actors;
}
