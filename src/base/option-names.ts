/**
 * The names an options object may have. A misspelt option (`functons`) would otherwise be
 * ignored without a word and its default used; so every public entry point that takes an
 * options object refuses a name it does not know, suggesting the one that was meant.
 */
import { describeValue, RoleboxError } from '../errors.js';
import { setOwn } from './own-keys.js';

/**
 * The name of `candidates` that `name` most likely misspells, if one is close enough: the
 * same once case, `_` and `-` are ignored (`save_debounce_ms` → `saveDebounceMs`), a start
 * of it or it a start of the name (`idle` → `idleMs`, `stateDirectory` → `stateDir`), or a
 * few letters off (`functons` → `functions`).
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  const wanted = normalized(name);
  if (wanted === '') return undefined;
  const same = candidates.find((candidate) => normalized(candidate) === wanted);
  if (same !== undefined) return same;
  // One a start of the other (`idle` → `idleMs`, `stateDirectory` → `stateDir`), when the
  // shorter is long enough to mean something.
  const prefixed = candidates.find((candidate) => {
    const known = normalized(candidate);
    const [shorter, longer] = known.length < wanted.length ? [known, wanted] : [wanted, known];
    return shorter.length >= 3 && longer.startsWith(shorter);
  });
  if (prefixed !== undefined) return prefixed;
  // Past a few letters the distance no longer means "a typo of".
  const allowed = wanted.length <= 4 ? 1 : wanted.length <= 8 ? 2 : 3;
  let best: string | undefined;
  let bestDistance = allowed + 1;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, normalized(candidate), bestDistance);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Refuses `options` unless it is an object whose own names are all in `known`.
 *
 * Expects: `where` names the options in messages, e.g. `createRolebox options` or
 * `createRolebox limits`, and `noun` what one name is (`option`, `limit`). Names are looked up as own names of a set, so `constructor`,
 * `toString` and an own `__proto__` are unknown names like any other.
 * Throws: `invalid_argument` for a value that is not an object (`null`, an array, a
 * string…), or naming every unknown name, the closest known one when it is a likely typo,
 * and the known names; `details` has `unknown`, `suggestions` (unknown → meant) and `known`.
 */
export function checkOptionNames(
  options: unknown,
  known: readonly string[],
  where: string,
  noun = 'option',
): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RoleboxError(
      'invalid_argument',
      `${where} must be an object, got ${describeValue(options)}`,
      { where },
    );
  }
  const knownNames = new Set(known);
  const unknown = Object.keys(options).filter((name) => !knownNames.has(name));
  if (unknown.length === 0) return;
  const suggestions: Record<string, string> = {};
  const named = unknown.map((name) => {
    const meant = closestName(name, known);
    if (meant === undefined) return describeValue(name);
    setOwn(suggestions, name, meant);
    return `${describeValue(name)} (did you mean ${describeValue(meant)}?)`;
  });
  throw new RoleboxError(
    'invalid_argument',
    `${where}: unknown ${noun}${unknown.length === 1 ? '' : 's'} ${named.join(', ')}; known: ${known.join(', ') || '(none)'}`,
    { where, unknown, suggestions, known: [...known] },
  );
}

function normalized(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, '');
}

/**
 * Edit distance with transpositions (optimal string alignment), giving up at `cap`: only
 * short names are compared, but a name from outside may be long.
 */
function editDistance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, (before[j - 2] as number) + 1);
      current.push(value);
      rowMin = Math.min(rowMin, value);
    }
    if (rowMin >= cap) return cap;
    before = previous;
    previous = current;
  }
  return Math.min(previous[b.length] as number, cap);
}
