import { describe, expect, it } from 'vitest';
import { nanoidIdSource } from '../src/adapters/id-sources.js';
import { realClock } from '../src/adapters/real-clock.js';
import { SimulatedClock, seededIdSource } from '../src/testing/index.js';

describe('SimulatedClock', () => {
  it('fires due timers in due order, ties in the order they were set, each at its own time', () => {
    const clock = new SimulatedClock(100);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => fired.push(`c@${clock.now()}`), 20);
    clock.setTimeout(() => fired.push(`late@${clock.now()}`), 31);
    clock.advance(30);
    expect(fired).toEqual(['a@110', 'b@120', 'c@120']);
    expect(clock.now()).toBe(130);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(1);
    expect(fired.at(-1)).toBe('late@131');
  });

  it('fires timers set by callbacks when they fall inside the window', () => {
    const clock = new SimulatedClock();
    const fired: number[] = [];
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 5);
    }, 5);
    clock.advance(10);
    expect(fired).toEqual([5, 10]);
  });

  it('cancels timers and runs the next one on demand', () => {
    const clock = new SimulatedClock();
    const fired: string[] = [];
    const handle = clock.setTimeout(() => fired.push('cancelled'), 5);
    clock.setTimeout(() => fired.push('kept'), 50);
    clock.clearTimeout(handle);
    expect(clock.runNext()).toBe(true);
    expect(fired).toEqual(['kept']);
    expect(clock.now()).toBe(50);
    expect(clock.runNext()).toBe(false);
  });

  it('refuses to go backwards', () => {
    expect(() => new SimulatedClock().advance(-1)).toThrow(RangeError);
  });
});

describe('ids', () => {
  it('seeded sources repeat exactly for the same seed and differ for another', () => {
    const take = (seed: number) => {
      const ids = seededIdSource(seed);
      return [ids.next(), ids.next('s_'), ids.next()];
    };
    expect(take(3)).toEqual(take(3));
    expect(take(3)).not.toEqual(take(4));
    expect(take(3)[1]).toMatch(/^s_[0-9a-z]{12}$/);
    expect(new Set(Array.from({ length: 1000 }, () => seededIdSource(9).next())).size).toBe(1);
    const ids = seededIdSource(9);
    expect(new Set(Array.from({ length: 1000 }, () => ids.next())).size).toBe(1000);
  });

  it('nanoid ids are unique and prefixed', () => {
    const made = new Set(Array.from({ length: 1000 }, () => nanoidIdSource.next('x_')));
    expect(made.size).toBe(1000);
    for (const id of made) expect(id).toMatch(/^x_[0-9a-z]{12}$/);
  });

  it('the real clock reads the wall clock', () => {
    const before = Date.now();
    expect(realClock.now()).toBeGreaterThanOrEqual(before);
  });
});
