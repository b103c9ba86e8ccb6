import { describeValue, RoleboxError } from '../errors.js';

/** The systemId (and child id) of the root system actor. */
export const SYSTEM_ACTOR_ID = 'rolebox';

/** The systemId (and child id) of a session actor: `session:<sessionId>`. */
export function sessionActorId(sessionId: string): string {
  return `session:${sessionId}`;
}

/** The systemId of a function actor: `fn:<sessionId>:<name>` (its child id is `functionChildId`). */
export function functionActorId(sessionId: string, name: string): string {
  return `fn:${sessionId}:${name}`;
}

/**
 * The child id of a function actor in its session: `fn:<name>`. Child ids are local and
 * stable: XState names the events a child sends its parent when it ends after its id
 * (`xstate.done.actor.<id>`), and keeps every event type a machine ever received for good
 * (DESIGN §3), so an id holding a session or loop id would grow the heap with every session.
 */
export function functionChildId(name: string): string {
  return `fn:${name}`;
}

/** The systemId of a loop actor: `loop:<loopId>` (its child id is `LOOP_CHILD_ID`). */
export function loopActorId(loopId: string): string {
  return `loop:${loopId}`;
}

/**
 * The child id of a session's loop actor: `loop`. A session runs one loop at a time; the
 * loop's id lives in its systemId and context, not in its child id (see {@link functionChildId}).
 */
export const LOOP_CHILD_ID = 'loop';

/** The systemId (and child id) of a session's artifact store: `artifacts:<sessionId>`. */
export function artifactsActorId(sessionId: string): string {
  return `artifacts:${sessionId}`;
}

/** What a rolebox systemId names. */
export type ParsedActorId =
  | { readonly kind: 'system' }
  | { readonly kind: 'session'; readonly sessionId: string }
  | { readonly kind: 'function'; readonly sessionId: string; readonly name: string }
  | { readonly kind: 'artifacts'; readonly sessionId: string }
  | { readonly kind: 'loop'; readonly loopId: string };

/**
 * Reads a systemId built by the functions above (`session:S`, `fn:S:name`, `artifacts:S`,
 * `loop:L`, `rolebox`); undefined for anything else. Session ids never hold `:`, so the
 * first `:` after `fn:` ends the session id.
 */
export function parseActorId(systemId: string): ParsedActorId | undefined {
  if (systemId === SYSTEM_ACTOR_ID) return { kind: 'system' };
  const colon = systemId.indexOf(':');
  if (colon <= 0) return undefined;
  const prefix = systemId.slice(0, colon);
  const rest = systemId.slice(colon + 1);
  if (rest === '') return undefined;
  switch (prefix) {
    case 'session':
      return { kind: 'session', sessionId: rest };
    case 'artifacts':
      return { kind: 'artifacts', sessionId: rest };
    case 'loop':
      return { kind: 'loop', loopId: rest };
    case 'fn': {
      const split = rest.indexOf(':');
      if (split <= 0 || split === rest.length - 1) return undefined;
      return { kind: 'function', sessionId: rest.slice(0, split), name: rest.slice(split + 1) };
    }
    default:
      return undefined;
  }
}

/** What a session id is: 1-128 characters of A-Z a-z 0-9 _ . - (schemas that describe one use it). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** The most characters a session id has. */
export const SESSION_ID_MAX_LENGTH = 128;

/** Checks a session id: 1-128 characters of A-Z a-z 0-9 _ . -. Throws: `invalid_argument` naming it. */
export function checkSessionId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !SESSION_ID_PATTERN.test(id))
    throw new RoleboxError(
      'invalid_argument',
      `session id must be 1-128 characters of A-Z a-z 0-9 _ . -, got ${describeValue(id)}`,
      { id },
    );
}
