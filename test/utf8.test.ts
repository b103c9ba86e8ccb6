import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8ByteLength } from '../src/base/utf8.js';

describe('utf8ByteLength', () => {
  it('equals Buffer.byteLength for any string, lone surrogates included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(utf8ByteLength(a)).toBe(Buffer.byteLength(a, 'utf8'));
        expect(utf8ByteLength(b)).toBe(Buffer.byteLength(b, 'utf8'));
      }),
      { numRuns: 2_000 },
    );
  });

  it('counts 1, 2, 3 and 4 bytes per code point', () => {
    expect(['a', 'é', '€', '🚀', '\ud800', '\udc00x'].map(utf8ByteLength)).toEqual([
      1, 2, 3, 4, 3, 4,
    ]);
  });
});
