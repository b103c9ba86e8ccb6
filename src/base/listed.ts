/** Names as an English list for a message: `a`, `a and b`, `a, b and c`. */
export function listed(names: readonly string[]): string {
  return names.length <= 1
    ? (names[0] ?? '')
    : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}
