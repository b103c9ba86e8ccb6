/**
 * Named points where a test can have the `rolebox` command killed with SIGKILL, to prove
 * that a kill there loses nothing and repeats nothing (SPEC §6).
 *
 * `ROLEBOX_CRASH_AT=<point>[:<n>]` kills the process the n-th time (default: the first) it
 * reaches `<point>`. The points: `ack` (right after `» session …, loop …`), `note` (right
 * after a progress note is printed), `round` (right after `» round n/N running`), `send-saved` (`rolebox send`: its
 * command stored, its answer not yet printed), and the command dispatcher's `before-key`, `before-spawn`, `after-spawn` (a worker being started); `rolebox mcp`'s
 * `mcp-approved-ran` and `mcp-approved-saved` (a guarded tool call, src/ai/mcp-server.ts).
 * Unset, it does nothing. For tests only; never set it in production. One implementation
 * for every process (src/base/crash-point.ts, where the effect runner's points are listed).
 */
export { crashPoint } from '../base/crash-point.js';
