import * as restate from '@restatedev/restate-sdk';
import { RoleboxError } from '../errors.js';
import { ERROR_CODE_METADATA } from './wire.js';

/**
 * The terminal error that carries a RoleboxError through Restate to the caller: HTTP 400,
 * its code in the metadata `rolebox-code`. Terminal: Restate never retries bad input.
 */
export function terminalError(error: RoleboxError): restate.TerminalError {
  return new restate.TerminalError(error.message, {
    errorCode: 400,
    metadata: { [ERROR_CODE_METADATA]: error.code },
  });
}

/** Runs `work`; a RoleboxError becomes a terminal error (bad input is never retried). */
export async function asTerminal<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RoleboxError) throw terminalError(error);
    throw error;
  }
}
