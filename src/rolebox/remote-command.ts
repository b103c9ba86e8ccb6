import { describeValue, RoleboxError } from '../errors.js';
import type { RemoteCommand } from '../session/commands.js';
import type { SessionHandle } from './session-handle.js';

/**
 * Runs a remote command through the session's own validated API, so it is refused exactly
 * as the same call from host code would be.
 * Returns: what the session call returned (a receipt, an idle report, …).
 * Throws: `invalid_argument` for something that is not a command; whatever the session
 * call throws for a refused one (and then nothing changed).
 */
export function applyRemoteCommand(session: SessionHandle, command: unknown): unknown {
  if (typeof command !== 'object' || command === null) {
    throw new RoleboxError('invalid_argument', `not a command: ${describeValue(command)}`, {
      command,
    });
  }
  const remote = command as RemoteCommand;
  switch (remote.kind) {
    case 'signal':
      return session.signal({
        type: remote.type,
        ...(remote.payload ? { payload: remote.payload } : {}),
      } as never);
    case 'idle':
      return session.idle();
    case 'message':
      return session.message(remote.text);
    case 'runtime':
      return session.send(remote.event as never);
    case 'stop_loop':
      session.stopLoop({ now: true });
      return undefined;
    case 'approve': {
      const { kind: _approve, requestId, ...options } = remote;
      return session.approve(requestId, options);
    }
    case 'reject': {
      const { kind: _reject, requestId, ...options } = remote;
      return session.reject(requestId, options);
    }
    default:
      throw new RoleboxError(
        'invalid_argument',
        `unknown command ${describeValue((command as { kind?: unknown }).kind)}`,
        { command },
      );
  }
}
