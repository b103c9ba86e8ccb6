// SHA-256 from @noble/hashes rather than node:crypto: the root entry runs in browsers too,
// and the digest must stay the one stored in existing loop registries.
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/** The prompt as compared for recursion: whitespace collapsed, trimmed, lower-cased. */
export function normalizePrompt(prompt: string): string {
  return prompt.replace(/\s+/g, ' ').trim().toLowerCase();
}

/** SHA-256 (hex) of the normalised prompt: equal for prompts that differ only in case and spacing. */
export function promptFingerprint(prompt: string): string {
  return bytesToHex(sha256(utf8ToBytes(normalizePrompt(prompt))));
}
