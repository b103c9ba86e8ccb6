import { describe, expect, it } from 'vitest';
import { SessionDirectory } from '../src/runtime/session-directory.js';

// The directory lists live sessions least recently used first, and apart from them those no
// passivation is under way for: the LRU limit walks the latter, so that thousands of
// passivations in flight are not walked past on every activation of a burst.

const directoryOf = (...ids: string[]) => {
  const directory = new SessionDirectory();
  for (const [at, id] of ids.entries()) directory.add(id, { lastUsedAt: at });
  return directory;
};

describe('the session directory: live sessions, and those not on their way out', () => {
  it('a session being passivated is left out of the staying ones, not out of the live ones', () => {
    const directory = directoryOf('A', 'B', 'C');
    directory.leaving('A');
    directory.leaving('C');
    expect([...directory.staying()]).toEqual(['B']);
    expect(directory.ids()).toEqual(['A', 'B', 'C']);
    expect(directory.size).toBe(3);
    expect(directory.has('A')).toBe(true);
  });

  it('passivated: it is gone from both; kept live: it stays again, as the most recently used', () => {
    const directory = directoryOf('A', 'B', 'C');
    directory.leaving('A');
    directory.leaving('B');
    directory.remove('A');
    directory.stayed('A');
    directory.stayed('B');
    expect(directory.ids()).toEqual(['B', 'C']);
    expect([...directory.staying()]).toEqual(['C', 'B']);
    // Said twice, or of a session that never left, it changes nothing.
    directory.stayed('B');
    directory.stayed('C');
    expect([...directory.staying()]).toEqual(['C', 'B']);
  });

  it('a command to a session on its way out makes it the most recently used in both lists', () => {
    const directory = directoryOf('A', 'B', 'C');
    directory.leaving('A');
    directory.touch('A', 10);
    expect(directory.ids()).toEqual(['B', 'C', 'A']);
    expect([...directory.staying()]).toEqual(['B', 'C', 'A']);
    expect(directory.get('A')?.lastUsedAt).toBe(10);
    // The passivation in flight then keeps it live: it is in place already.
    directory.stayed('A');
    expect([...directory.staying()]).toEqual(['B', 'C', 'A']);
  });

  it('added again (activated anew), a session is the most recently used in both lists', () => {
    const directory = directoryOf('A', 'B');
    directory.leaving('A');
    directory.add('A', { lastUsedAt: 5 });
    expect(directory.ids()).toEqual(['B', 'A']);
    expect([...directory.staying()]).toEqual(['B', 'A']);
  });
});
