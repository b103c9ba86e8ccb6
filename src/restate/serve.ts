import { createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as restate from '@restatedev/restate-sdk';
import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';
import { DEFAULT_ENDPOINT_PORT } from './defaults.js';
import {
  inspectionOf,
  SESSION_OBJECT_OPTION_NAMES,
  type SessionObjectOptions,
  sessionObjectWith,
} from './session-object.js';
import type { StepInspection } from './step-inspection.js';
import { ERROR_CODE_METADATA } from './wire.js';

/** A Restate service, virtual object or workflow definition (what an endpoint binds). */
export type RestateDefinition = Parameters<restate.RestateEndpoint['bind']>[0];

/** Options of {@link serveRoleboxOnRestate}. */
export interface ServeRoleboxOptions extends SessionObjectOptions {
  /** More services served by the same endpoint (a `roleboxWorker`, an event sink, your own). */
  readonly services?: readonly RestateDefinition[];
  /**
   * Where the endpoint's log goes (default: warnings and errors to stderr, less noisy than
   * the SDK's own, which logs every invocation). Refusals of bad input are not logged: the
   * caller is answered with them; nor are cancelled invocations.
   */
  readonly logger?: restate.LoggerTransport;
}

const SERVE_OPTION_NAMES = [
  ...SESSION_OBJECT_OPTION_NAMES,
  ...Object.keys({
    services: true,
    logger: true,
  } satisfies Record<Exclude<keyof ServeRoleboxOptions, keyof SessionObjectOptions>, true>),
];

/** A listening endpoint: register `url` with the Restate server (`POST /deployments`). */
export interface ListeningEndpoint {
  readonly port: number;
  /** `http://<host>:<port>`. */
  readonly url: string;
  /** Stops listening and closes open connections. */
  close(): Promise<void>;
}

/** The rolebox endpoint: the session object and the services served with it. */
export interface RoleboxOnRestate {
  /** The Restate endpoint, to serve in your own server (`endpoint.http2Handler()`) or Lambda. */
  readonly endpoint: restate.RestateEndpoint;
  /** Serves the endpoint over HTTP/2 (port 0: any free port; host default 127.0.0.1). */
  listen(port?: number, host?: string): Promise<ListeningEndpoint>;
}

/**
 * The rolebox sessions as a Restate endpoint (DESIGN §8): the virtual object
 * `rolebox-session` keyed by session id, with the services given. Any number of endpoint
 * processes can serve it behind one Restate server: a session's state lives in Restate,
 * never in a process.
 * Throws: what `createRolebox` throws for bad function definitions or limits;
 * `invalid_argument` for a bad target or service list, or an unknown option name (here, in
 * `workers`, `eventSink` or `inspect`), with the one likely meant and the known ones.
 */
export function serveRoleboxOnRestate(options: ServeRoleboxOptions = {}): RoleboxOnRestate {
  checkOptionNames(options, SERVE_OPTION_NAMES, 'serveRoleboxOnRestate options');
  const { services = [], logger = quietLogger, ...objectOptions } = options;
  if (!Array.isArray(services))
    throw new RoleboxError(
      'invalid_argument',
      `services must be an array of Restate definitions, got ${describeValue(services)}`,
    );
  const inspection = inspectionOf(objectOptions.inspect);
  const endpoint = restate
    .endpoint()
    .bind(sessionObjectWith(objectOptions, inspection))
    .setLogger(logger);
  for (const service of services) endpoint.bind(service);
  return {
    endpoint,
    listen: (port = DEFAULT_ENDPOINT_PORT, host = '127.0.0.1') =>
      listen(endpoint, port, host, inspection),
  };
}

const LOGGED_LEVELS = new Set(['warn', 'error']);

/** Warnings and errors to stderr, but not the refusals of bad input (answered to the caller). */
const quietLogger: restate.LoggerTransport = (params, message, ...rest) => {
  if (!LOGGED_LEVELS.has(params.level) || params.replaying) return;
  // A cancelled invocation ends with CancelledError on purpose (the session was told).
  const refusal = [message, ...rest].some(
    (part) =>
      part instanceof restate.CancelledError ||
      (part instanceof restate.TerminalError && part.metadata?.[ERROR_CODE_METADATA] !== undefined),
  );
  if (refusal) return;
  const where = params.context
    ? ` ${params.context.invocationTarget} ${params.context.invocationId}`
    : '';
  console.error(`[rolebox/restate ${params.level}]${where}:`, message, ...rest);
};

/** Serves any Restate endpoint over HTTP/2 on `host:port` (port 0: a free one), closable. */
export async function listen(
  endpoint: restate.RestateEndpoint,
  port: number,
  host: string,
  inspection?: StepInspection,
): Promise<ListeningEndpoint> {
  const server: Http2Server = createServer(endpoint.http2Handler());
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://${host}:${bound}`,
    close: async () => {
      await inspection?.stop();
      await new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      });
    },
  };
}
