import { startInspectorServer } from '../../../inspector/server.js';
import { type Output, untilInterrupted } from '../output.js';

/**
 * `rolebox inspect`: runs the inspector until Ctrl-C. `appOrigin` lists the browser origins
 * allowed to stream to it. Returns the exit code.
 */
export async function runInspectCommand(
  options: { port: number; host: string; appOrigin?: string[] },
  output: Output,
): Promise<number> {
  const server = await startInspectorServer({
    port: options.port,
    host: options.host,
    ...(options.appOrigin ? { appOrigins: options.appOrigin } : {}),
    log: (message) => output.err(`» ${message}`),
  });
  output.out(`inspector: ${server.url}`);
  output.out(
    `apps stream to ${server.wsUrl}  (createRolebox({ inspect: { url: '${server.wsUrl}' } }), or --inspect ${server.wsUrl})`,
  );
  await untilInterrupted();
  await server.stop();
  return 0;
}
