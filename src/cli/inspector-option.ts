import { type InspectorServer, startInspectorServer } from '../../inspector/server.js';
import type { Output } from './output.js';

/**
 * What `--inspect [url]` means: with a URL, stream to the inspector already running there;
 * without one, start an inspector in this process (port 7070, or any free port when that
 * one is taken) and stream to it. Prints where to look.
 */
export async function resolveInspect(
  option: string | boolean | undefined,
  output: Output,
  port = 7070,
): Promise<{ url: string; server?: InspectorServer } | undefined> {
  if (option === undefined || option === false) return undefined;
  if (typeof option === 'string') {
    output.err(`streaming to the inspector at ${option}`);
    return { url: option };
  }
  const server = await startInspectorServerOnFreePort(port, inspectorLog(output));
  output.err(`inspector: ${server.url}`);
  return { url: server.wsUrl, server };
}

/** Where an inspector started by a command reports what it refused or dropped: stderr. */
export function inspectorLog(output: Output): (message: string) => void {
  return (message) => output.err(`» inspector: ${message}`);
}

/** Starts an inspector on `port`, or on any free port when `port` is taken. */
export async function startInspectorServerOnFreePort(
  port: number,
  log: (message: string) => void = () => {},
): Promise<InspectorServer> {
  try {
    return await startInspectorServer({ port, log });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw error;
    return startInspectorServer({ port: 0, log });
  }
}
