import { ownValue } from '../base/own-keys.js';

/**
 * Brings a stored snapshot written by machine version `from` up to `from + 1`. Snapshots are
 * plain JSON; a migration returns a new one and never throws for a well-formed record.
 */
export type MachineMigration = (snapshot: Record<string, unknown>) => Record<string, unknown>;

type Json = Record<string, unknown>;

/**
 * Loop machine 1 → 2: the loop no longer invokes actors (its I/O became effects the host
 * runtime performs, DESIGN §7), so the invoked actors a version-1 loop recorded as its
 * children are dropped; its state and context say everything the runtime needs.
 */
function loopWithoutInvokedActors(snapshot: Json): Json {
  const children = snapshot.children as Record<string, Json> | undefined;
  if (!children) return snapshot;
  const migrated: Record<string, Json> = {};
  for (const [id, child] of Object.entries(children)) {
    const inner = child.snapshot as Json | undefined;
    migrated[id] =
      child.src === 'loop' && inner && typeof inner === 'object'
        ? { ...child, snapshot: { ...inner, children: {} } }
        : child;
  }
  return { ...snapshot, children: migrated };
}

/**
 * Session machine 1 → 2: a session's children are named by local, stable ids — `fn:<name>`
 * for a function, `loop` for its loop — instead of `fn:<sessionId>:<name>` and
 * `loop:<loopId>` (XState keeps every event type a machine receives, and a child's end is
 * an event named after its id: DESIGN §3). The systemIds, which keep the unique part,
 * are unchanged. A record with no such children (the `$system` record) is returned as is.
 */
function sessionWithLocalChildIds(snapshot: Json): Json {
  const children = snapshot.children as Record<string, Json> | undefined;
  if (!children || typeof children !== 'object') return snapshot;
  const migrated: Record<string, Json> = {};
  for (const [id, child] of Object.entries(children)) {
    migrated[localChildId(id, child)] = child;
  }
  return { ...snapshot, children: migrated };
}

/** The version-2 child id of a session child stored under `id` by version 1. */
function localChildId(id: string, child: Json): string {
  if (child?.src === 'loop' && id.startsWith('loop:')) return 'loop';
  if (child?.src === 'function' && id.startsWith('fn:')) {
    // The function's own context names it; a record without one is left for the check to refuse.
    const name = ((child.snapshot as Json | undefined)?.context as Json | undefined)?.name;
    if (typeof name === 'string') return `fn:${name}`;
  }
  return id;
}

/**
 * Session machine 2 → 3: the effect outbox. A session stored before had no record of the
 * effects it emitted (they were handed to the host and forgotten), so it restores with an
 * empty outbox and numbers its next effect from 1. A record with no context (the `$system`
 * record) is returned as is.
 */
function sessionWithEffectOutbox(snapshot: Json): Json {
  const context = snapshot.context as Json | undefined;
  if (!context || typeof context !== 'object' || Array.isArray(context)) return snapshot;
  return {
    ...snapshot,
    context: {
      ...context,
      effectCount: context.effectCount ?? 0,
      pendingEffects: context.pendingEffects ?? [],
    },
  };
}

/**
 * Loop machine 2 → 3: a round's record may say how long its worker ran (`ranMs`) and
 * whether the round spanned a restart (`acrossRestart`). Both are optional and a round
 * recorded before says neither, so a version-2 record is already a valid version-3 one.
 */
function loopRoundsWithRunTime(snapshot: Json): Json {
  return snapshot;
}

/**
 * System machine 1 → 2: the root spawns shards and keeps no per-session context any more
 * (DESIGN §7). What a store holds of it never changed: the `$system` record is the loop
 * registry alone, and session records are session subtrees, so nothing needs rewriting.
 */
function systemWithShards(snapshot: Json): Json {
  return snapshot;
}

/**
 * System machine 2 → 3: shards are spawned with their first session and stopped with their
 * last, not all at start (issue 26). A store never held the root's children (the `$system`
 * record is the loop registry alone), so nothing needs rewriting; a recorded run's root
 * snapshots are brought up by `upgradeRecordedRun`.
 */
function systemWithLazyShards(snapshot: Json): Json {
  return snapshot;
}

/**
 * The migrations rolebox itself ships, by machine and by the version they start from. A
 * record older than the code is brought up by them before any check; a version with no
 * migration here (or registered by the host) is refused.
 */
export const MACHINE_MIGRATIONS: {
  readonly [M in 'system' | 'session' | 'function' | 'loop']: Readonly<
    Record<number, MachineMigration>
  >;
} = {
  system: { 1: systemWithShards, 2: systemWithLazyShards },
  session: { 1: sessionWithLocalChildIds, 2: sessionWithEffectOutbox },
  function: {},
  loop: { 1: loopWithoutInvokedActors, 2: loopRoundsWithRunTime },
};

/**
 * `snapshot`, written by `machine` version `from`, brought up to version `to` by
 * {@link MACHINE_MIGRATIONS} one version at a time; `undefined` when a version in between
 * has no migration (the caller says what that means for its record: stored records and
 * recorded runs are refused alike).
 */
export function migrateMachineSnapshot(
  machine: keyof typeof MACHINE_MIGRATIONS,
  snapshot: Record<string, unknown>,
  from: number,
  to: number,
): Record<string, unknown> | undefined {
  let migrated = snapshot;
  for (let version = from; version < to; version++) {
    const migration = ownValue(MACHINE_MIGRATIONS[machine], String(version));
    if (!migration) return undefined;
    migrated = migration(migrated);
  }
  return migrated;
}
