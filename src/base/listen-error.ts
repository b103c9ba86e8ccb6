import { describeValue, RoleboxError } from '../errors.js';

/**
 * What a server that could not listen on `host:port` throws instead of Node's bare error:
 * `port_in_use` when another process holds the port (EADDRINUSE), `invalid_argument` when
 * the address cannot be used here (no such interface, a privileged port, an unknown host
 * name). Any other error is returned unchanged.
 */
export function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const where = { host, port };
  if (code === 'EADDRINUSE')
    return new RoleboxError('port_in_use', `port ${port} is in use on ${host}`, where);
  const why = typeof code === 'string' ? LISTEN_FAILURES.get(code) : undefined;
  if (why === undefined) return error;
  return new RoleboxError(
    'invalid_argument',
    `cannot listen on ${describeValue(host)} port ${port}: ${why}`,
    where,
  );
}

const LISTEN_FAILURES: ReadonlyMap<string, string> = new Map([
  ['EACCES', 'permission denied (ports below 1024 need privileges)'],
  ['EADDRNOTAVAIL', 'no interface of this machine has that address'],
  ['ENOTFOUND', 'no such host name'],
  ['EAI_AGAIN', 'the host name could not be resolved'],
]);
