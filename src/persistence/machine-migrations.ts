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
 * System machine 1 → 2: the root spawns shards and keeps no per-session context any more
 * (DESIGN §7). What a store holds of it never changed: the `$system` record is the loop
 * registry alone, and session records are session subtrees, so nothing needs rewriting.
 */
function systemWithShards(snapshot: Json): Json {
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
  system: { 1: systemWithShards },
  session: {},
  function: {},
  loop: { 1: loopWithoutInvokedActors },
};
