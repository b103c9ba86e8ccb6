import type { LoopInput } from '../loop/machine-types.js';
import type { LoopRegistry } from '../loop/registry.js';
import type { LoopPhase } from '../loop/types.js';
import type { SessionCommand } from '../session/commands.js';
import type { SessionInput } from '../session/machine-types.js';
import type { AcceptanceMode } from '../session/runtime-types.js';

/**
 * The context of the root system actor. Plain JSON, and nothing per session: which
 * sessions are live is the host runtime's directory; sessions live under the shards.
 */
export interface SystemContext {
  /** How many shard children (`shard:<k>`) the root has. */
  readonly shards: number;
  /** Every unfinished loop tree, for ancestry, recursion and tree-size checks. */
  readonly loopRegistry: LoopRegistry;
}

/** What the root sends a shard, and what the shard's sessions send it on their way up. */
export type ShardEvent =
  | { readonly type: 'shard.spawn'; readonly input: SessionInput }
  | { readonly type: 'shard.stop'; readonly sessionId: string }
  /** Stops every session of the shard (the rolebox stops). */
  | { readonly type: 'shard.stop_all' }
  | {
      readonly type: 'shard.deliver';
      readonly sessionId: string;
      readonly command: SessionCommand;
    }
  | SessionLoopReport;

/** What a session reports to the system about its loop (through its shard): it finished. */
export type SessionLoopReport = {
  readonly type: 'system.loop_finished';
  readonly loopId: string;
  readonly phase: LoopPhase;
};

/**
 * What the system's loop registry is told: a loop finished (by its session), a round ran
 * in a worker session, a cancelNow to cascade (both by the runtime, from what the loop
 * emitted: a relay through session and shard would cost two steps per round).
 */
export type SystemLoopEvent =
  | SessionLoopReport
  | {
      readonly type: 'system.loop_worker';
      readonly loopId: string;
      readonly workerSessionId: string;
    }
  | { readonly type: 'system.loop_cascade_cancel'; readonly loopId: string; readonly at: number };

/** Every event the system actor accepts. */
export type SystemEvent =
  | {
      readonly type: 'system.open_session';
      readonly sessionId: string;
      readonly at: number;
      readonly acceptanceMode?: AcceptanceMode;
      /** The new incarnation's nonce (absent in runs recorded before nonces existed). */
      readonly nonce?: string;
    }
  | {
      readonly type: 'system.restore_session';
      readonly sessionId: string;
      readonly openedAt: number;
      readonly snapshot: unknown;
    }
  | { readonly type: 'system.close_session'; readonly sessionId: string; readonly at: number }
  /** Replaces the loop registry (brought in line with a session just activated). */
  | { readonly type: 'system.set_loop_registry'; readonly loopRegistry: LoopRegistry }
  /** Stops a live session's actors, its record kept: it is passivated (the runtime saved it). */
  | { readonly type: 'system.passivate_session'; readonly sessionId: string }
  /** Stops every live session's actors (the rolebox stops; everything was saved). */
  | { readonly type: 'system.stop_sessions' }
  | {
      readonly type: 'system.deliver';
      readonly sessionId: string;
      readonly command: SessionCommand;
    }
  | {
      readonly type: 'system.start_loop';
      readonly sessionId: string;
      readonly loop: LoopInput;
      readonly rootLoopId: string;
    }
  | SystemLoopEvent;
