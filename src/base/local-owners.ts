/**
 * Store owners of this process that have stopped (DESIGN §7, SPEC §6). A claim names its
 * owner's pid, and a dead pid on this host frees the claim at once. Several roleboxes can
 * share one process, so the pid alone cannot tell that one of them is gone: a rolebox whose
 * actor system stopped without releasing its claims (stopped dead, or halted) is listed
 * here, and a claim of it is as free as a dead process's. One id per rolebox that stopped,
 * kept for the life of the process.
 */
const stoppedOwners = new Set<string>();

/** Records that the owner `ownerId` of this process drives nothing any more. */
export function markOwnerStopped(ownerId: string): void {
  stoppedOwners.add(ownerId);
}

/** True when `ownerId` was an owner in this process and has stopped. */
export function isOwnerStopped(ownerId: string): boolean {
  return stoppedOwners.has(ownerId);
}
