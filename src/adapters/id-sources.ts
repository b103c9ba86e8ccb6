import { customAlphabet } from 'nanoid';
import type { IdSource } from '../ports/ids.js';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const makeNanoid = customAlphabet(ALPHABET, 12);

/** Random ids from nanoid (12 lower-case alphanumerics). The default. */
export const nanoidIdSource: IdSource = {
  next: (prefix) => (prefix ? `${prefix}${makeNanoid()}` : makeNanoid()),
};

/**
 * A deterministic id sequence: the same seed gives the same ids in the same order.
 *
 * Use when: tests and replays must produce identical snapshots run after run.
 */
export function seededIdSource(seed = 1): IdSource {
  // mulberry32: tiny, fast, and good enough to make ids look distinct.
  let state = seed >>> 0;
  const random = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next(prefix) {
      let id = '';
      for (let i = 0; i < 12; i++) id += ALPHABET[Math.floor(random() * ALPHABET.length)];
      return prefix ? `${prefix}${id}` : id;
    },
  };
}
