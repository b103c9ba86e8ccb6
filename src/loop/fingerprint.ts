import { createHash } from 'node:crypto';

/** The prompt as compared for recursion: whitespace collapsed, trimmed, lower-cased. */
export function normalizePrompt(prompt: string): string {
  return prompt.replace(/\s+/g, ' ').trim().toLowerCase();
}

/** SHA-256 (hex) of the normalised prompt: equal for prompts that differ only in case and spacing. */
export function promptFingerprint(prompt: string): string {
  return createHash('sha256').update(normalizePrompt(prompt)).digest('hex');
}
