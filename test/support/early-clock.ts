import type { Clock } from '../../src/index.js';

/**
 * The real clock, except that a timer of 2 ms or more fires while `now()` still reads a
 * millisecond short of its due time, as Node's `setTimeout` may: deterministically, every
 * time. `fired.early` counts the timers that fired so.
 */
export function earlyClock(): { clock: Clock; fired: { early: number } } {
  let shortOf: number | undefined;
  const fired = { early: 0 };
  const clock: Clock = {
    now: () => shortOf ?? Date.now(),
    setTimeout: (callback, delayMs) => {
      const due = Date.now() + delayMs;
      return setTimeout(() => {
        if (delayMs < 2) return callback();
        fired.early += 1;
        shortOf = due - 1;
        try {
          callback();
        } finally {
          shortOf = undefined;
        }
      }, delayMs);
    },
    clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  };
  return { clock, fired };
}
