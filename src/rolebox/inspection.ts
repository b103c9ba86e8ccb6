import { createBrowserInspector } from '@statelyai/inspect';
import type { InspectionEvent, Observer } from 'xstate';
import { describeValue, RoleboxError } from '../errors.js';
import {
  CONNECTING_BUFFER_FRAMES,
  connectWebSocketInspector,
  type InspectorCommand,
  namingActorsBySystemId,
  type WebSocketInspector,
} from './inspector-connection.js';
import type { InspectOption } from './options.js';
import { hidingShards } from './shard-free-inspection.js';
import { type StatelyViewers, serveStatelyViewers } from './stately-viewers.js';

/** What inspection gives the actor system, and what must be closed when the rolebox stops. */
export interface Inspection {
  readonly observer: ((event: InspectionEvent) => void) | Observer<InspectionEvent> | undefined;
  readonly connection: WebSocketInspector | undefined;
  /** The server of Stately viewers (`inspect: { stately: { port } }`, in Node). */
  readonly viewers?: StatelyViewers;
}

/**
 * Turns the `inspect` option into an inspection observer: Stately's browser inspector (or,
 * given a port, a server of Stately viewers), a connection to an inspector server (whose page may send commands: `run` performs them),
 * or the host's own observer. Each sees sessions under the root, shards left out
 * ({@link hidingShards}).
 */
export function startInspection(
  option: InspectOption | undefined,
  run: (actor: string, command: InspectorCommand) => unknown,
): Inspection {
  const inspection = inspectionOf(option, run);
  return inspection.observer === undefined
    ? inspection
    : { ...inspection, observer: hidingShards(inspection.observer) };
}

/** What {@link startInspection} starts, seeing every actor. */
function inspectionOf(
  option: InspectOption | undefined,
  run: (actor: string, command: InspectorCommand) => unknown,
): Inspection {
  if (option === undefined) return { observer: undefined, connection: undefined };
  if (option === 'stately' || (typeof option === 'object' && 'stately' in option)) {
    const stately = option === 'stately' ? {} : option.stately;
    if (stately.port !== undefined) {
      const viewers = serveStatelyViewers({
        port: stately.port,
        ...(stately.host === undefined ? {} : { host: stately.host }),
        ...(stately.url === undefined ? {} : { url: stately.url }),
      });
      return { observer: viewers.observer, connection: undefined, viewers };
    }
    const inspector = createBrowserInspector({
      maxDeferredEvents: CONNECTING_BUFFER_FRAMES,
      ...stately,
    } as Parameters<typeof createBrowserInspector>[0]);
    return {
      observer: namingActorsBySystemId(inspector.inspect as Observer<InspectionEvent>),
      connection: undefined,
    };
  }
  if (typeof option === 'object' && 'url' in option) {
    const connection = connectWebSocketInspector(option.url, run);
    return { observer: connection.observer, connection };
  }
  return { observer: option, connection: undefined };
}

/**
 * The session an inspector command is for, from the actor it was clicked on.
 * Throws: `unknown_session` naming the actor when it is not running in an open session (it
 * finished, e.g. a loop that ended, or its session is closed).
 */
export function sessionOfInspectedActor(
  actor: string,
  sessionOf: (systemId: string) => string | undefined,
): string {
  const sessionId = sessionOf(actor);
  if (sessionId === undefined)
    throw new RoleboxError(
      'unknown_session',
      `actor ${describeValue(actor)} is not running: it finished, or its session is not open`,
      { actor },
    );
  return sessionId;
}
