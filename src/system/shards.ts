// 256, not 64: XState copies a parent's children on every spawn and stop, so an open costs
// O(live sessions / shards); with 64 shards an open at 10 000 live cost 2.2–2.3× one at 100,
// with 256 1.0–1.4×. A running shard costs ~2.5 KB of heap and nothing per command; the root
// spawns one with its first session and stops it with its last (issue 26: spawning all 256
// at start cost 9–12 ms, and 40–100 ms at stop), so the bound costs nothing unused.
/** The most shard actors the root runs when the host does not say (DESIGN §7). */
export const DEFAULT_SHARDS = 256;

/** The systemId (and child id) of shard `index`: `shard:<index>`. */
export function shardActorId(index: number): string {
  return `shard:${index}`;
}

/**
 * The shard a session lives under: a stable hash (FNV-1a, 32 bits) of its id modulo the
 * number of shards, so a session lands in the same shard in every process and after every
 * restart, and a spawn copies only its shard's children (DESIGN §3.6).
 */
export function shardIndexOf(sessionId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    hash ^= sessionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}
