import { ownValue } from '../base/own-keys.js';
import { REQUESTS_KEY } from '../signal/approval-requests.js';
import { PAUSING_PRIORITY } from '../signal/catalogue.js';
import { readLedgerRecord } from '../signal/ledger.js';

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
 * Session machine 3 → 4: each incarnation of a session id has a nonce its effect ids carry
 * (`<sessionId>:<nonce>:e<n>`). A session stored before was opened without one: its nonce is
 * null, so it goes on numbering `<sessionId>:e<n>` after the effects it has (whose stored
 * ids, and so their settling and their handlers' idempotency keys, do not change). A record
 * with no context (the `$system` record) is returned as is.
 */
function sessionWithEffectNonce(snapshot: Json): Json {
  const context = snapshot.context as Json | undefined;
  if (!context || typeof context !== 'object' || Array.isArray(context)) return snapshot;
  return { ...snapshot, context: { ...context, effectNonce: context.effectNonce ?? null } };
}

/**
 * Session machine 4 → 5: waits for the user may expire (`waitExpiresAt`). A wait stored
 * before began when no deadline was given to it, so it keeps none (null): the deadline of
 * `limits.waitUserTimeoutMs` applies from the next wait on. A record with no context (the
 * `$system` record) is returned as is.
 */
function sessionWithWaitDeadline(snapshot: Json): Json {
  const context = snapshot.context as Json | undefined;
  if (!context || typeof context !== 'object' || Array.isArray(context)) return snapshot;
  return { ...snapshot, context: { ...context, waitExpiresAt: context.waitExpiresAt ?? null } };
}

/**
 * Session machine 5 → 6: the artifact store is spawned with the session's first artifact.
 * A record written before has the store from the start: an empty one (no artifact ever
 * written) is dropped, so the session is restored as version 6 would have it (an actor
 * fewer) and a recorded run replays on today's machine; one holding artifacts is kept as
 * it is. A record with no children (the `$system` record) is returned as is.
 */
function sessionWithLazyArtifactStore(snapshot: Json): Json {
  const children = snapshot.children as Record<string, Json> | undefined;
  const store = children?.artifacts?.snapshot as Json | undefined;
  const context = store?.context as { artifacts?: unknown } | undefined;
  if (!children || !Array.isArray(context?.artifacts) || context.artifacts.length > 0)
    return snapshot;
  const { artifacts: _empty, ...rest } = children;
  return { ...snapshot, children: rest };
}

/**
 * Session machine 6 → 7: a completed function's actor is stopped when its session retires
 * it. A record written before keeps the done actor beside its retired record (the same
 * last state twice): a function child that is done and not listed as live is dropped, so
 * the session is restored as version 7 would have it (an actor fewer per completed
 * function) and a recorded run replays on today's machine. Anything else is left for the
 * check to judge. A record with no children (the `$system` record) is returned as is.
 */
function sessionWithoutCompletedFunctionActors(snapshot: Json): Json {
  const children = snapshot.children as Record<string, Json> | undefined;
  const live = (snapshot.context as Json | undefined)?.liveFunctions;
  if (!children || typeof children !== 'object' || !Array.isArray(live)) return snapshot;
  const kept: Record<string, Json> = {};
  let dropped = false;
  for (const [id, child] of Object.entries(children)) {
    const inner = child?.snapshot as Json | undefined;
    const name = (inner?.context as Json | undefined)?.name;
    if (child?.src === 'function' && inner?.status === 'done' && !live.includes(name)) {
      dropped = true;
      continue;
    }
    kept[id] = child;
  }
  return dropped ? { ...snapshot, children: kept } : snapshot;
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
 * A version-1 function context in version 2's shape: each pausing signal its ledger holds
 * (in priority order) becomes a request, open while the function is `gated` (fail closed:
 * the old level gate would have let a stale answer through) and answered otherwise (the
 * function was let through already). The old record did not count changes, so the version
 * starts at the number of requests, each request carrying its place in that count. A context
 * already migrated (it has a version) is returned as is.
 */
function functionContextWithRequests(context: Json, gated: boolean): Json {
  if (typeof context.version === 'number') return context;
  const kv = (typeof context.kv === 'object' && context.kv !== null ? context.kv : {}) as Json;
  const ledger = readLedgerRecord(kv);
  const name = String(context.name);
  const at = typeof context.updatedAt === 'number' ? context.updatedAt : 0;
  const requests = PAUSING_PRIORITY.filter((type) => Object.hasOwn(ledger, type)).map(
    (type, index) => ({
      id: `${name}:r${index + 1}`,
      function: name,
      type,
      payload: ledger[type] ?? null,
      openedAt: at,
      version: index + 1,
      ...(gated ? { status: 'open' } : { status: 'answered', answeredAt: at }),
    }),
  );
  return {
    ...context,
    kv: requests.length === 0 ? kv : { ...kv, [REQUESTS_KEY]: requests },
    version: requests.length,
  };
}

/**
 * Function machine 1 → 2: approval requests (SPEC §9). Function records live inside their
 * session's record: each function child's context and each retired function's is brought up
 * by {@link functionContextWithRequests}. A record with neither is returned as is.
 */
function sessionWithFunctionRequests(snapshot: Json): Json {
  const children = snapshot.children as Record<string, Json> | undefined;
  const migratedChildren: Record<string, Json> = {};
  for (const [id, child] of Object.entries(children ?? {})) {
    const inner = child?.snapshot as Json | undefined;
    const context = inner?.context as Json | undefined;
    migratedChildren[id] =
      child?.src === 'function' && inner && context && typeof context === 'object'
        ? {
            ...child,
            snapshot: {
              ...inner,
              context: functionContextWithRequests(context, inner.value === 'gated'),
            },
          }
        : child;
  }
  const context = snapshot.context as Json | undefined;
  const retired = context?.retiredFunctions as Record<string, Json> | undefined;
  const migratedRetired: Record<string, Json> = {};
  for (const [name, entry] of Object.entries(retired ?? {}))
    migratedRetired[name] =
      entry && typeof entry.context === 'object' && entry.context !== null
        ? {
            ...entry,
            context: functionContextWithRequests(entry.context as Json, entry.phase === 'gated'),
          }
        : entry;
  return {
    ...snapshot,
    ...(children ? { children: migratedChildren } : {}),
    ...(retired && context ? { context: { ...context, retiredFunctions: migratedRetired } } : {}),
  };
}

/**
 * Function machine 2 → 3: an approval request may carry a deadline (`expiresAt`, with its
 * `onTimeout`) and end `expired`. Both are optional and a request stored before has neither: it was
 * opened with no deadline and keeps none (it expires never, as it would have), so a
 * version-2 record is already a valid version-3 one. `approval_timeout` applies to the
 * requests opened from now on.
 */
function functionRequestsWithDeadlines(snapshot: Json): Json {
  return snapshot;
}

/**
 * Function machine 3 → 4: a request may be host-only (`hostOnly`, a tool call held for the
 * host's approval). The field is optional and a request stored before was opened by an agent's
 * signal, which an agent's answer may resolve, so a version-3 record is already a valid
 * version-4 one. The bump is for the other direction: code that does not know `hostOnly`
 * would let an agent answer a host-only request, so it must refuse (snapshot_too_new) a
 * record that may hold one.
 */
function functionRequestsMayBeHostOnly(snapshot: Json): Json {
  return snapshot;
}

/**
 * Function machine 4 → 5: a resolved request may record that the host resolved it
 * (`answeredByHost`), and an open one when and by whom the host moved its deadline
 * (`extendedAt`, `extendedBy`: absent on every request before, so nothing to fill in). A
 * request resolved before carries no origin and keeps saying only what
 * it said (`answered`, `rejected`): guessing `host` for it would put in the audit trail what
 * was never recorded, so a version-4 record is already a valid version-5 one. The bump
 * refuses (snapshot_too_new) a record with these fields to code that would drop them.
 */
function functionRequestsWithOrigin(snapshot: Json): Json {
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
 * System machine 3 → 4: the root keeps its loop registry in buckets (so that a round's
 * report copies one bucket, not every loop). The `$system` record stores the registrations
 * flat as before (they are bucketed when read), so nothing needs rewriting; a recorded
 * run's root snapshots are brought up by `upgradeRecordedRun`.
 */
function systemWithRegistryBuckets(snapshot: Json): Json {
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
  system: { 1: systemWithShards, 2: systemWithLazyShards, 3: systemWithRegistryBuckets },
  session: {
    1: sessionWithLocalChildIds,
    2: sessionWithEffectOutbox,
    3: sessionWithEffectNonce,
    4: sessionWithWaitDeadline,
    5: sessionWithLazyArtifactStore,
    6: sessionWithoutCompletedFunctionActors,
  },
  function: {
    1: sessionWithFunctionRequests,
    2: functionRequestsWithDeadlines,
    3: functionRequestsMayBeHostOnly,
    4: functionRequestsWithOrigin,
  },
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
