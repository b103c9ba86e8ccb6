// The records the inspector keeps (apps, actors, events, pipeline runs) and the JSON it
// builds from them. Each record keeps its JSON text: what a page is sent is made from it,
// so nothing a client sent is stringified twice.

import type { WebSocket } from 'ws';
import type { InspectedActor, InspectedApp, InspectorSource } from './inspector-types.js';

/** A frame from an app or a page, parsed (its fields unchecked). */
export type Frame = Record<string, unknown>;

/** An app connection, or a source's pseudo-app (then `source` is set and `socket` never is). */
export interface App {
  readonly id: number;
  socket: WebSocket | undefined;
  name?: string;
  pid?: number;
  rolebox: boolean;
  leftAt?: number;
  readonly actorIds: Set<string>;
  readonly source?: InspectorSource;
}

/** An actor as kept: its JSON in two parts, so a new snapshot replaces only its own. */
export interface KeptActor {
  readonly id: string;
  readonly app: App;
  readonly sessionId: string;
  readonly name: string;
  /** The public actor as JSON, without its snapshot and without the closing brace. */
  readonly meta: string;
  readonly metaBytes: number;
  snapshot: string;
  snapshotBytes: number;
}

/** A pipeline run's trace as kept: its JSON for pages, and what it counts in `keptBytes`. */
export interface KeptTrace {
  readonly json: string;
  readonly bytes: number;
}

/** An event in the log, as kept; `snapshot` and `fork` are added as they arrive. */
export interface KeptEvent {
  readonly seq: number;
  readonly app: App;
  /** The server id (`<app>/<sessionId>`) of its target. */
  readonly target: string;
  readonly type: string;
  /** The entry as JSON, without its snapshot and mark (added when it is sent). */
  readonly json: string;
  bytes: number;
  snapshot?: string;
  fork?: string;
  evicted?: boolean;
}

/** An app whose socket closed (a source is never gone): its actors are shown, read-only. */
export const isGone = (app: App): boolean => app.socket === undefined && app.source === undefined;

/** A kept actor as the JSON a page is sent. */
export const actorJson = (actor: KeptActor): string =>
  `${actor.meta},"snapshot":${actor.snapshot}}`;

/** An app as the JSON a page is sent. */
export const appJson = (app: App): string => JSON.stringify(publicApp(app));

/** A kept event as the JSON a page is sent, with its snapshot and mark when it has them. */
// Both parts are JSON the server made (a snapshot it stringified, a mark it built).
export const eventJson = (event: KeptEvent): string =>
  event.snapshot === undefined && event.fork === undefined
    ? event.json
    : `${event.json.slice(0, -1)}${event.snapshot === undefined ? '' : `,"snapshot":${event.snapshot}`}${event.fork === undefined ? '' : `,"fork":${event.fork}`}}`;

/** An app as {@link InspectorServer.apps} reports it. */
export function publicApp(app: App): InspectedApp {
  return {
    id: app.id,
    ...(app.name === undefined ? {} : { name: app.name }),
    ...(app.pid === undefined ? {} : { pid: app.pid }),
    rolebox: app.rolebox,
    connected: app.socket !== undefined || app.source !== undefined,
    ...(app.leftAt === undefined ? {} : { leftAt: app.leftAt }),
    ...(app.source ? { source: app.source.kind } : {}),
  };
}

/** A kept actor as {@link InspectorServer.actors} reports it. */
export function inspectedActor(actor: KeptActor): InspectedActor {
  const parsed = JSON.parse(`${actor.meta},"snapshot":${actor.snapshot}}`) as Omit<
    InspectedActor,
    'gone'
  >;
  return { ...parsed, gone: actor.app.socket === undefined && actor.app.source === undefined };
}
