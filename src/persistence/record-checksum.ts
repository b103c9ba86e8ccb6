// The checksum is corruption detection, not authentication: anyone who can write the store
// can compute it. It is a 64-bit hash over the record's UTF-16 code units, in plain JS (the
// root entry runs in browsers too). Measured on a 5 KB record: ~50–75 µs, a third of
// JSON.parse of the same text; @noble/hashes' sha256 took 270–380 µs (twice JSON.parse)
// and its blake3 ~530 µs, more than the structural check it would let us skip.

/** The algorithm tag a checksum starts with (another tag is not ours: the full check runs). */
const ALGORITHM = 'h64:';
/** The record's first bytes when it carries a checksum: the checksum is its first field. */
const SEAL_PREFIX = `{"checksum":"${ALGORITHM}`;
/** Hex digits of a checksum. */
const DIGITS = 16;
/** `{`, the body's first code unit (the seal replaced it in the stored text). */
const OPEN_BRACE = 123;
/** Where the body resumes after the checksum field (`",` closes it). */
const BODY_AT = SEAL_PREFIX.length + DIGITS + 2;

/**
 * The checksum of `text`: two 32-bit multiplicative lanes over its code units, mixed
 * together at the end. Each step is a bijection of the state, so a record that differs from
 * the one sealed in a single code unit always has another checksum; more changes collide
 * with odds near 2^-64.
 */
export function recordChecksum(text: string): string {
  return checksumFrom(text, 0);
}

/**
 * {@link recordChecksum} of code unit `lead` (when given) followed by `text` from `start`
 * on, without building that text: every activation checks its record's seal, and doing it
 * in place spares a copy of the record's bytes.
 */
function checksumFrom(text: string, start: number, lead?: number): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  if (lead !== undefined) {
    h1 = Math.imul(h1 ^ lead, 2654435761);
    h2 = Math.imul(h2 ^ lead, 1597334677);
  }
  for (let index = start; index < text.length; index++) {
    const code = text.charCodeAt(index);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 >>> 0).toString(16).padStart(8, '0') + (h1 >>> 0).toString(16).padStart(8, '0');
}

/**
 * Seals a serialized record object (`{…}`, not empty): the same JSON with a first field
 * `checksum` that covers every byte after it, so that what is parsed is what was hashed.
 */
export function sealRecord(body: string): string {
  return `${SEAL_PREFIX}${recordChecksum(body)}",${body.slice(1)}`;
}

/**
 * What a stored record's checksum says: `sealed` when it matches the bytes it covers,
 * `broken` when it does not (or a checksum field is not where this code writes it), and
 * `unsealed` when the record carries none of ours (written before checksums, or by hand).
 */
export type SealState = 'sealed' | 'broken' | 'unsealed';

/** Reads the checksum of stored record `text`, before parsing it (nothing is thrown). */
export function sealOf(text: string): SealState {
  // (a `checksum` field elsewhere in the envelope is found broken by decodeEnvelope)
  if (!text.startsWith(SEAL_PREFIX)) return 'unsealed';
  if (text.charCodeAt(BODY_AT - 2) !== 34 || text.charCodeAt(BODY_AT - 1) !== 44) return 'broken';
  const stored = text.slice(SEAL_PREFIX.length, SEAL_PREFIX.length + DIGITS);
  return checksumFrom(text, BODY_AT, OPEN_BRACE) === stored ? 'sealed' : 'broken';
}

/** The record without its checksum field (what {@link sealRecord} sealed); other text as it is. */
export function unsealedText(text: string): string {
  return text.startsWith(SEAL_PREFIX) ? `{${text.slice(BODY_AT)}` : text;
}
