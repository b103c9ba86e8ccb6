import type { IdSource } from '../ports/ids.js';

const ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';

/**
 * Ids from a deterministic random source (Restate's `ctx.rand.random`, seeded by the
 * invocation), shaped like the default nanoid ids: a retried step makes the same ones.
 */
export function randomIdSource(random: () => number): IdSource {
  return {
    next(prefix = '') {
      let id = prefix;
      for (let i = 0; i < 21; i++) id += ALPHABET[Math.floor(random() * 64) & 63];
      return id;
    },
  };
}
