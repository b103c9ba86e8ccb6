import type { GuardBackend, GuardState } from './guard-backend.js';

/** A scope's window: how many events it has seen lately (kept an hour after the last). */
export interface SourceWindow {
  readonly eventCount: number;
  readonly lastEventAt: number;
  readonly lastEventId: string;
}

/** Guard lanes of the run's scope. */
export interface GuardAccess {
  get(lane: string): Promise<GuardState>;
  /** Touches the lane at `now` (default: the context's `now()`). */
  touch(lane: string, now?: number): Promise<GuardState>;
}

/** What every handler gets beside its node. */
export interface HandlerContext {
  /** The run's scope key. */
  readonly scopeKey: string;
  /** The node's own timestamp: every handler of a node sees the same time, so runs replay. */
  now(): number;
  readonly guards: GuardAccess;
  /** The scope's window including this run's source event. */
  readonly window?: SourceWindow;
}

/** The context of one node's handlers; every touch keeps its lane for `guardTtlMs`. */
export function createHandlerContext(
  scopeKey: string,
  timestamp: number,
  guards: GuardBackend,
  guardTtlMs: number,
  window?: SourceWindow,
): HandlerContext {
  return {
    scopeKey,
    now: () => timestamp,
    guards: {
      get: (lane) => guards.get(scopeKey, lane),
      touch: (lane, now = timestamp) => guards.touch(scopeKey, lane, now, guardTtlMs),
    },
    ...(window ? { window } : {}),
  };
}
