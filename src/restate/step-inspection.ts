import type { ActorRefLike, InspectionEvent } from 'xstate';
import { RoleboxError } from '../errors.js';
import {
  connectWebSocketInspector,
  type WebSocketInspector,
} from '../rolebox/inspector-connection.js';

/**
 * Streams the steps of an endpoint to an inspector server (DESIGN §8): one connection per
 * endpoint process, opened at the first step. Every step builds an actor system of its own,
 * whose actors XState numbers from `x:0` again, so each step's actor ids are prefixed with
 * its session's id: the steps of one session show as that session's actors, steps of two
 * sessions never collide. Commands from the page are refused: on Restate a command goes
 * through the ingress.
 */
export class StepInspection {
  readonly #url: string;
  #connection: WebSocketInspector | undefined;

  /** @param url the inspector server's WebSocket URL (`ws://127.0.0.1:7070`). */
  constructor(url: string) {
    this.#url = url;
  }

  /** The inspection observer of one step of session `sessionId`. */
  observerFor(sessionId: string): (event: InspectionEvent) => void {
    this.#connection ??= connectWebSocketInspector(this.#url, () => {
      throw new RoleboxError(
        'invalid_argument',
        'sessions served on Restate take commands through the Restate ingress, not from the inspector page',
      );
    });
    const observer = this.#connection.observer;
    const prefix = `${sessionId}:`;
    return (event) => observer.next?.(prefixed(event, prefix));
  }

  /** Delivers what is buffered (bounded) and closes the connection. */
  async stop(): Promise<void> {
    const connection = this.#connection;
    this.#connection = undefined;
    await connection?.stop();
  }
}

/** The event with every actor id in it (its actor, source, parent, root) prefixed. */
function prefixed(event: InspectionEvent, prefix: string): InspectionEvent {
  const renamed: Record<string, unknown> = { ...event, rootId: `${prefix}${event.rootId}` };
  renamed.actorRef = renamedActor(event.actorRef, prefix);
  if ('sourceRef' in event && event.sourceRef)
    renamed.sourceRef = renamedActor(event.sourceRef, prefix);
  return renamed as unknown as InspectionEvent;
}

/** A view of an actor whose `sessionId` (and its parent's) carries the prefix; all else is the actor's. */
function renamedActor<A extends ActorRefLike>(actor: A, prefix: string): A {
  return new Proxy(actor, {
    get(target, name) {
      if (name === 'sessionId') return `${prefix}${target.sessionId}`;
      if (name === '_parent') {
        const parent = (target as { _parent?: ActorRefLike })._parent;
        return parent ? renamedActor(parent, prefix) : undefined;
      }
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
