/** The systemId (and child id) of the root system actor. */
export const SYSTEM_ACTOR_ID = 'rolebox';

/** The systemId (and child id) of a session actor: `session:<sessionId>`. */
export function sessionActorId(sessionId: string): string {
  return `session:${sessionId}`;
}

/** The systemId (and child id) of a function actor: `fn:<sessionId>:<name>`. */
export function functionActorId(sessionId: string, name: string): string {
  return `fn:${sessionId}:${name}`;
}

/** The systemId (and child id) of a loop actor: `loop:<loopId>`. */
export function loopActorId(loopId: string): string {
  return `loop:${loopId}`;
}
