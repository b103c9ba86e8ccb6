import type { Clock } from '../ports/clock.js';

/** The real clock: `Date.now` and the host's timers. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
