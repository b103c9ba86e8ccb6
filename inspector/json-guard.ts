/**
 * Whether JSON text nests arrays and objects deeper than `limit`. It reads the text
 * itself, without parsing it, so a frame nested 100 000 deep is refused before it becomes
 * an object graph that `JSON.stringify` (recursive in V8) would overflow the stack on.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (inString) {
      if (code === BACKSLASH) at++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** What {@link parseClientJson} made of a client's text: the value, or why it was refused. */
export type ClientJson =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly reason: string };

/**
 * Parses JSON a client sent, refusing text nested deeper than `maxDepth` (checked first)
 * and text that is not JSON. Never throws.
 */
export function parseClientJson(text: string, maxDepth: number): ClientJson {
  if (nestsDeeperThan(text, maxDepth))
    return { ok: false, reason: `nested deeper than ${maxDepth} levels` };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
}

/** A first-in first-out queue whose `shift()` costs O(1) on average (an array with a head). */
export class Queue<T> {
  #items: T[] = [];
  #head = 0;

  /** How many items are queued. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  /** Adds an item at the end. */
  push(item: T): void {
    this.#items.push(item);
  }

  /** Removes and returns the oldest item. */
  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head] as T;
    this.#items[this.#head++] = undefined as T;
    // Compacting only when the dead head is the larger half keeps shifts amortised O(1).
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** The items, oldest first. */
  values(): T[] {
    return this.#items.slice(this.#head);
  }
}
