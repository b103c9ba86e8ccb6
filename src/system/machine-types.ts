import type { LoopInput } from '../loop/machine-types.js';
import type { LoopRegistry } from '../loop/registry.js';
import type { LoopPhase } from '../loop/types.js';
import type { SessionCommand } from '../session/commands.js';
import type { SystemEmitted } from '../session/emitted.js';
import type { AcceptanceMode } from '../session/runtime-types.js';

/** The context of the root system actor: the registry of live sessions. Plain JSON. */
export interface SystemContext {
  /** Live sessions by id; each is a child actor `session:<id>`. */
  readonly sessions: Readonly<Record<string, { readonly openedAt: number }>>;
  /** Every loop started, for ancestry, recursion and tree-size checks. */
  readonly loopRegistry: LoopRegistry;
}

/** What sessions report to the system about their loops. */
export type SystemLoopEvent =
  | {
      readonly type: 'system.loop_worker';
      readonly loopId: string;
      readonly workerSessionId: string;
    }
  | { readonly type: 'system.loop_finished'; readonly loopId: string; readonly phase: LoopPhase }
  | { readonly type: 'system.loop_cascade_cancel'; readonly loopId: string; readonly at: number };

/** Every event the system actor accepts. */
export type SystemEvent =
  | {
      readonly type: 'system.open_session';
      readonly sessionId: string;
      readonly at: number;
      readonly acceptanceMode?: AcceptanceMode;
    }
  | {
      readonly type: 'system.restore_session';
      readonly sessionId: string;
      readonly openedAt: number;
      readonly snapshot: unknown;
    }
  | { readonly type: 'system.close_session'; readonly sessionId: string; readonly at: number }
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
  | SystemLoopEvent
  | { readonly type: 'host'; readonly event: SystemEmitted };
