/**
 * The top-level state of an XState state value: `'running'` for `'running'`,
 * `'waiting_user'` for `{ waiting_user: 'input' }`; `''` for a value with no state at all.
 * Phases of sessions, loops and functions are all the top level of their machine's value.
 */
export function topStateOf(value: unknown): string {
  if (typeof value === 'string') return value;
  return Object.keys((value as object | null) ?? {})[0] ?? '';
}
