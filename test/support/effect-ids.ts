/**
 * An effect id's incarnation nonce as the id sources rolebox ships make it (nanoid's and the
 * seeded one's 12 lower-case alphanumerics, Restate's 21 url-safe characters): `S:<nonce>:e2`.
 * Tests about numbering and settling read ids without it.
 */
const NONCED_EFFECT_ID = /:[0-9A-Za-z_-]{12,21}:e(\d+)\b/g;

/**
 * `value` (any JSON: a string, an array of lines, events) with each effect id's nonce taken
 * out, `S:<nonce>:e2` read as `S:e2`. Only for assertions about numbering, order and settling:
 * what the nonce is, and that it differs per incarnation, is tested on its own.
 */
export function plainEffectIds<T>(value: T): T {
  return JSON.parse(JSON.stringify(value).replace(NONCED_EFFECT_ID, ':e$1')) as T;
}
