/**
 * The bounds on what a host or an agent may hand rolebox, in one place (README, "Limits").
 * Input past them is refused with a RoleboxError naming it, before anything changes.
 */

/**
 * Deepest nesting of a signal payload: the payload object is level 1, each object or array
 * inside it one more.
 */
export const MAX_PAYLOAD_DEPTH = 64;

/** Largest signal payload: bytes of its JSON text in UTF-8 (256 KiB). */
export const MAX_PAYLOAD_BYTES = 262_144;

/** Deepest nesting of a condition: a bare `name(arg)` is level 1, each all/any/not one more. */
export const MAX_CONDITION_DEPTH = 32;

/** Longest artifact name, in characters (code points). */
export const MAX_ARTIFACT_NAME_LENGTH = 128;

/**
 * What an artifact name may be, in `session.artifacts.write`, `capture_payload_as` and
 * `artifact_exists(name)`: a letter or digit of any script first, then letters, digits,
 * combining marks, spaces and `_ . : / -`, not ending in a space, at most
 * {@link MAX_ARTIFACT_NAME_LENGTH} characters. No parentheses or commas, so a name always
 * reads back out of a condition unchanged.
 */
export const ARTIFACT_NAME_PATTERN: RegExp = new RegExp(
  `^[\\p{L}\\p{N}](?:[\\p{L}\\p{M}\\p{N}_.:/\\- ]{0,${MAX_ARTIFACT_NAME_LENGTH - 2}}[\\p{L}\\p{M}\\p{N}_.:/-])?$`,
  'u',
);

/** {@link ARTIFACT_NAME_PATTERN} in words, for messages. */
export const ARTIFACT_NAME_RULE = `1-${MAX_ARTIFACT_NAME_LENGTH} characters: letters or digits of any script, combining marks, spaces and _ . : / -, starting with a letter or digit and not ending in a space`;
