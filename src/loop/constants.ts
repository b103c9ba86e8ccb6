/** Iterations when `|loop|` names none. */
export const DEFAULT_ITERATIONS = 5;
/** Most iterations a loop may run; more are silently clamped (and the loop says so). */
export const MAX_ITERATIONS_HARD_CAP = 50;
/** How long one round may run before it is cancelled and the loop fails. */
export const DISPATCH_ROUND_TIMEOUT_MS = 900_000;
/** Pause between a round's summary and the next dispatch. */
export const INTER_ROUND_DELAY_MS = 2_000;
/** A round's summary keeps the last this-many characters of the worker's text. */
export const SUMMARY_INPUT_CHAR_CAP = 8_000;
/** An inherit-mode seed keeps the last this-many characters of the previous summary. */
export const SEED_CHAR_CAP = 8_000;
/** Version of the persisted loop state. */
export const LOOP_STATE_SCHEMA_VERSION = 3;
/** Most loops in one loop tree (a root loop and every loop started from its workers). */
export const MAX_TREE_WORKER_SESSIONS = 30;
/** The user command that stops a loop. */
export const STOP_LOOP_COMMAND = 'stop-loop';
/** The marker the `/stop-loop` command injects into the user's message. */
export const STOP_LOOP_SIGNAL = '[rolebox:stop-loop]';
/** Every progress note starts with this. */
export const LOOP_PROGRESS_MARKER = '[loop-progress';
/** What separates an inherit-mode seed from the base prompt. */
export const SEED_SEPARATOR = '\n\n---\n\n';
