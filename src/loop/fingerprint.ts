// SHA-256 from node:crypto where the host has it, @noble/hashes elsewhere: the root entry runs
// in browsers too, so node:crypto is looked up at run time (process.getBuiltinModule, Node
// 20.16+), never imported. Both give the same digest, the one stored in existing loop
// registries. node:crypto's is a flat string of 64 characters made in ~0.5 µs; noble's hex,
// built a digit pair at a time, took ~5.5 µs and stayed a chain of 32 concatenated strings
// (~0.8 KB) in every loop's context and registration.
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/** The part of node:crypto the fingerprint uses (`hash`: Node 20.12 and later). */
interface NodeHashing {
  /** One-shot digest of `text`'s UTF-8 bytes, in hex. */
  hash(algorithm: 'sha256', text: string, encoding: 'hex'): string;
}

/** node:crypto when this host is Node (20.16 and later); undefined in a browser. */
const nodeCrypto = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as Partial<NodeHashing> | undefined;

/** SHA-256 of `text`'s UTF-8 bytes, in hex, with @noble/hashes (what a browser runs). */
export function portableSha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** SHA-256 of `text`'s UTF-8 bytes, in hex: node:crypto's when the host has it. */
const sha256Hex: (text: string) => string =
  typeof nodeCrypto?.hash === 'function'
    ? (text) => (nodeCrypto as NodeHashing).hash('sha256', text, 'hex')
    : portableSha256Hex;

/** The prompt as compared for recursion: whitespace collapsed, trimmed, lower-cased. */
export function normalizePrompt(prompt: string): string {
  return prompt.replace(/\s+/g, ' ').trim().toLowerCase();
}

/** SHA-256 (hex) of the normalised prompt: equal for prompts that differ only in case and spacing. */
export function promptFingerprint(prompt: string): string {
  return sha256Hex(normalizePrompt(prompt));
}
