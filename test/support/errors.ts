import { expect } from 'vitest';
import { isRoleboxError, type RoleboxError } from '../../src/index.js';

/** Runs `fn` and returns the RoleboxError it throws; fails the test if it throws nothing or something else. */
export function errorOf(fn: () => unknown): RoleboxError {
  try {
    fn();
  } catch (error) {
    if (isRoleboxError(error)) return error;
    throw error;
  }
  throw new Error('expected a RoleboxError, but nothing was thrown');
}

/** Awaits `promise` and returns the RoleboxError it rejects with. */
export async function rejectionOf(
  promise: Promise<unknown> | (() => Promise<unknown>),
): Promise<RoleboxError> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    if (isRoleboxError(error)) return error;
    throw error;
  }
  throw new Error('expected a RoleboxError, but the promise resolved');
}

/**
 * Asserts that activating stored session `id` of `rb` (by reading its view) is refused as
 * `invalid_snapshot` with a message naming `what`; returns the refusal.
 */
export function refusedOnActivation(
  rb: { session(id: string): { view(): unknown } },
  what: string,
  id = 'S',
): RoleboxError {
  const error = errorOf(() => rb.session(id).view());
  expect(error.code).toBe('invalid_snapshot');
  expect(error.message).toContain(what);
  return error;
}
