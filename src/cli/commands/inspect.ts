import { type InspectorServer, startInspectorServer } from '../../../inspector/server.js';
import { isRoleboxError, RoleboxError } from '../../errors.js';
import { OK_EXIT_CODE } from '../exit-codes.js';
import { type Output, untilInterrupted } from '../output.js';

/**
 * `rolebox inspect`: runs the inspector until Ctrl-C or SIGTERM. `appOrigin` lists the
 * browser origins allowed to stream to it; with `json`, one `{"type":"listening",…}` line
 * says where it is. A port in use is `port_in_use` (exit 2): no other port is taken
 * behind the user's back. Returns the exit code.
 */
export async function runInspectCommand(
  options: { port: number; host: string; appOrigin?: string[]; json?: boolean },
  output: Output,
): Promise<number> {
  let server: InspectorServer;
  try {
    server = await startInspectorServer({
      port: options.port,
      host: options.host,
      ...(options.appOrigin ? { appOrigins: options.appOrigin } : {}),
      log: (message) => output.err(`» ${message}`),
    });
  } catch (error) {
    // No fallback here: whoever asked for this port may have told others where to look.
    if (isRoleboxError(error, 'port_in_use'))
      throw new RoleboxError(
        'port_in_use',
        `${error.message}; pass another --port, or --port 0 for any free one`,
        error.details,
      );
    throw error;
  }
  if (options.json) {
    output.out(
      JSON.stringify({
        type: 'listening',
        url: server.url,
        wsUrl: server.wsUrl,
        port: server.port,
        token: server.token,
      }),
    );
  } else {
    output.out(`inspector: ${server.url}`);
    output.out(
      `apps stream to ${server.wsUrl}  (createRolebox({ inspect: { url: '${server.wsUrl}' } }), or --inspect ${server.wsUrl})`,
    );
  }
  await untilInterrupted();
  await server.stop();
  return OK_EXIT_CODE;
}
