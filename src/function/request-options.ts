import { checkOptionNames } from '../base/option-names.js';
import { describeValue, RoleboxError } from '../errors.js';

/**
 * What every host command on an approval request (`approve`, `reject`, `extendRequest`)
 * reads first: the request id, a non-empty string, and the options, an object of `allowed`
 * names whose `by` and `note`, when given, are strings. `label` names the command in
 * messages (`approval`, `extendRequest`). Returns: the options as a record.
 * Throws: `invalid_argument` naming the value; nothing is changed.
 */
export function readRequestOptions(
  requestId: unknown,
  options: unknown,
  allowed: readonly string[],
  label: string,
): Record<string, unknown> {
  if (typeof requestId !== 'string' || requestId === '')
    throw new RoleboxError(
      'invalid_argument',
      `a request id is a string like deploy:r1, got ${describeValue(requestId)}`,
      { requestId },
    );
  checkOptionNames(options, allowed, `${label} options`);
  const read = options as Record<string, unknown>;
  for (const key of ['by', 'note'])
    if (read[key] !== undefined && typeof read[key] !== 'string')
      throw new RoleboxError(
        'invalid_argument',
        `${label} option ${key} must be a string, got ${describeValue(read[key])}`,
      );
  return read;
}
