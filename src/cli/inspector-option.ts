import {
  DEFAULT_INSPECTOR_PORT,
  type InspectorServer,
  startInspectorServer,
} from '../../inspector/server.js';
import { isRoleboxError } from '../errors.js';
import type { Output } from './output.js';

/** An inspector a command started, and the port it asked for when that one was taken. */
export interface StartedInspector {
  readonly server: InspectorServer;
  /** Set when the port asked for was in use and the inspector took a free one instead. */
  readonly portInUse?: number;
}

/**
 * What `--inspect [url]` means: with a URL, stream to the inspector already running there;
 * without one, start an inspector in this process (port 7070, or any free port when that
 * one is taken, which it says) and stream to it. Prints where to look, on stderr.
 */
export async function resolveInspect(
  option: string | boolean | undefined,
  output: Output,
  port = DEFAULT_INSPECTOR_PORT,
): Promise<{ url: string; server?: InspectorServer } | undefined> {
  if (option === undefined || option === false) return undefined;
  if (typeof option === 'string') {
    output.err(`streaming to the inspector at ${option}`);
    return { url: option };
  }
  const started = await startInspectorServerOnFreePort(port, inspectorLog(output));
  if (started.portInUse !== undefined) output.err(portFallbackLine(started));
  output.err(`inspector: ${started.server.url}`);
  return { url: started.server.wsUrl, server: started.server };
}

/** `» port 7070 is in use; the inspector listens on port 41234 instead`. */
export function portFallbackLine(started: StartedInspector): string {
  return `» port ${started.portInUse} is in use; the inspector listens on port ${started.server.port} instead`;
}

/** Where an inspector started by a command reports what it refused or dropped: stderr. */
export function inspectorLog(output: Output): (message: string) => void {
  return (message) => output.err(`» inspector: ${message}`);
}

/**
 * Starts an inspector on `port`, or on any free port when another process holds `port`
 * (then `portInUse` says which port was taken). Any other failure is thrown.
 */
export async function startInspectorServerOnFreePort(
  port: number,
  log: (message: string) => void = () => {},
): Promise<StartedInspector> {
  try {
    return { server: await startInspectorServer({ port, log }) };
  } catch (error) {
    if (!isRoleboxError(error, 'port_in_use') || port === 0) throw error;
    return { server: await startInspectorServer({ port: 0, log }), portInUse: port };
  }
}
